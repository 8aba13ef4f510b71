"""A Cline 4.1 (SDK) session folder written to the writer's schema (cline/cline 21cb8d2525, sdk/packages/core:
session-artifacts.ts, session-compaction.ts, agent-message-codec.ts), long enough that the SDK's automatic
compaction fires, and where it fires by the writer's own rule as read there (extensions/context/compaction.ts,
compaction-shared.ts, shared/src/llms/tokens.ts), worked out here on the messages as JSON: before each request,
ceil(JSON characters of {systemPrompt, messages as sent, tools} / 3) >= 0.9 x the model's input limit (a tool
result's strings over 8,000 characters are sent cut in the middle: message-builder.ts); the newest messages worth
20,000 estimated tokens as stored stay, never before the latest typed user message, from a turn's start.

Each request's ``metrics.inputTokens`` is what a server would count: the system prompt and tool definitions
(``PREFIX_TOKENS``) and the messages it was sent at 4 characters a token."""

from __future__ import annotations

import json
import math
from pathlib import Path

from replay.readers.cline_sdk_estimate import truncate_middle

SID = "1786000000000_cmp01"
MODEL, PROVIDER, LIMIT = "claude-haiku-4-5", "anthropic", 200_000  # the SDK catalog's "anthropic" entry
SYSTEM = "You are Cline, a software engineer. " * 220
TOOLS = [
    {
        "name": name,
        "description": f"The {name} tool. " * 60,
        "inputSchema": {"type": "object", "properties": {"files": {"type": "array", "items": {"type": "object"}}}},
    }
    for name in ("read_files", "editor", "run_commands", "search_codebase", "fetch_web_content", "ask_question")
]
PREFIX_TOKENS = (len(SYSTEM) + len(json.dumps(TOOLS))) // 4
OVERHEAD_EST = math.ceil(
    len(json.dumps({"systemPrompt": SYSTEM, "messages": [], "tools": TOOLS}, separators=(",", ":"))) / 3
)
T0 = 1_786_000_000_000


def _js(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _estimate(value: object) -> int:
    return max(1, math.ceil(len(_js(value)) / 3))


def _sent(m: dict) -> dict:
    """The message as the request builder sends it: tool result strings over 8,000 characters cut."""
    blocks = [
        {**b, "content": truncate_middle(b["content"])} if b["type"] == "tool_result" else b for b in m["content"]
    ]
    return {**m, "content": blocks}


def _typed(m: dict) -> bool:
    blocks = m["content"]
    return (
        m["role"] == "user"
        and m.get("metadata", {}).get("kind") != "compaction_summary"
        and not all(b["type"] == "tool_result" for b in blocks)
    )


def _cut(view: list[dict]) -> int:
    total, cand = 0, len(view)
    for i in range(len(view) - 1, -1, -1):
        total += _estimate(view[i])
        cand = i
        if total >= 20_000:
            break
    if cand <= 0:
        return 0
    last = max((i for i, m in enumerate(view) if _typed(m)), default=0)
    cut = min(cand, last) if last > 0 else cand
    while cut > 0 and not (view[cut]["role"] == "assistant" or _typed(view[cut])):
        cut -= 1
    return cut


def _served(view: list[dict]) -> int:
    return PREFIX_TOKENS + sum(len(_js(_sent(m)["content"])) // 4 for m in view)


def session(
    folder: Path,
    turns: int = 100,
    follow_up: int | None = None,
    big: int = 0,
    first: tuple[int, str, int] | None = None,
) -> dict:
    """Write the session under ``folder``/SID: ``turns`` tool calls reading about 6,000 characters each (every
    fourth ``big`` characters, when given), a typed user message before call ``follow_up`` (None: none), the first
    ``first[0]`` calls served by model ``first[1]`` of input limit ``first[2]`` (a switch to MODEL after); returns
    where the SDK last compacted (``request``: the request, counted from 0, it compacted before; ``after``: that
    request's inputTokens; ``requests``: every request it compacted before; the sidecar holds the last)."""
    messages: list[dict] = []
    view: list[dict] = []  # what the next request sends: the transcript, or the compacted view and what followed
    summary: dict | None = None
    found: dict = {}
    ts = T0

    def add(m: dict) -> None:
        nonlocal ts
        ts += 1_000
        m["ts"] = ts
        messages.append(m)
        view.append(m)

    add({"id": "u0", "role": "user", "content": [{"type": "text", "text": "Find why the build fails. " * 40}]})
    for k in range(turns):
        if k == follow_up:
            add({"id": f"f{k}", "role": "user", "content": [{"type": "text", "text": "Also check the tests."}]})
        model, limit = (first[1], first[2]) if first is not None and k < first[0] else (MODEL, LIMIT)
        request = _estimate({"systemPrompt": SYSTEM, "messages": [_sent(m) for m in view], "tools": TOOLS})
        cut = _cut(view) if request >= 0.9 * limit else 0
        if cut > (1 if summary is not None else 0):  # something to fold beyond an earlier summary
            text = "## Goal\nFix the build.\n\n## State\n- Done: read the sources\n" + "Notes. " * 300
            ts += 500
            summary = {
                "id": f"summary{k}",
                "role": "user",
                "content": [{"type": "text", "text": f"Context summary:\n\n{text}"}],
                "metadata": {
                    "kind": "compaction_summary",
                    "displayRole": "system",
                    "userRunSpan": 1,
                    "summary": text,
                    "details": {"readFiles": [], "modifiedFiles": []},
                    "tokensBefore": sum(_estimate(m) for m in view),  # the projection, when it compacts again
                    "generatedAt": ts,
                },
            }
            kept = view[cut:]
            sidecar = {
                "version": 1,
                "updated_at": "2026-08-01T00:00:00.000Z",
                "source_message_count": len(messages),
                "source_prefix_hash": "0" * 64,
                "messages": [summary, *kept],
            }
            view[:] = [summary, *kept]
            found = {"request": k, "after": _served(view), "cut": cut, "requests": [*found.get("requests", []), k]}
        lines = big // 38 if big and k % 4 == 3 else 170
        text = "".join(f"line {k}.{n}: const value = compute({n});\n" for n in range(lines))
        add(
            {
                "id": f"a{k}",
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Reading src/f{k}.ts"},
                    {"type": "tool_use", "id": f"t{k}", "name": "read_files", "input": {"files": [{"path": f"f{k}"}]}},
                ],
                "modelInfo": {"id": model, "provider": PROVIDER},
                "metrics": {
                    "inputTokens": _served(view),
                    "outputTokens": 40,
                    "cacheReadTokens": 0,
                    "cacheWriteTokens": 0,
                },
            }
        )
        add(
            {
                "id": f"r{k}",
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"t{k}", "name": "read_files", "content": text}],
            }
        )
    out = folder / SID
    out.mkdir(parents=True)
    manifest = {"version": 1, "session_id": SID, "source": "vscode", "provider": PROVIDER, "model": MODEL}
    (out / f"{SID}.json").write_text(json.dumps({**manifest, "started_at": "2026-08-01T00:00:00.000Z"}))
    doc = {"version": 1, "updated_at": "2026-08-01T01:00:00.000Z", "agent": "lead", "sessionId": SID}
    (out / f"{SID}.messages.json").write_text(json.dumps({**doc, "messages": messages, "system_prompt": SYSTEM}))
    if summary is not None:
        (out / f"{SID}.compaction.json").write_text(json.dumps(sidecar))
    return found
