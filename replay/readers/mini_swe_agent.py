"""mini-swe-agent trajectories (``*.traj.json``): ``{"info", "messages", "trajectory_format"}`` or,
in the old format, a bare list of ``{"role", "content"}`` messages.

Request rule: one request per assistant message (each is one model call), with usage from
``extra.response.usage`` when recorded. Responses rejected as format errors were not kept as
assistant messages, so ``info.model_stats.api_calls`` (kept in ``run.metadata``) can be larger.
Tool calls: ``extra.actions`` when present, else the message's ``tool_calls``, else the ```bash
(or ```mswea_bash_command) block in the content; tool name ``bash``, args ``{"command": ...}``.
The ``tool`` message with the call's id, or in the old format the next user message, is the result.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from replay.model import BadRecord, Record, Run
from replay.readers.base import ReadContext, load_json_document, text_of
from replay.readers.builder import RunBuilder
from replay.readers.json_fields import sub_dict

MARKERS = ('"mini_version":', '"agent_type": "minisweagent', '"trajectory_format": "mini-swe-agent')
BLOCK_RE = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n?```", re.S)


class MiniSweAgentReader:
    format = "mini-swe-agent"

    def sniff(self, head: str, path: Path) -> bool:
        start = head.lstrip()[:1]
        if start == "{":
            return any(key in head for key in MARKERS)
        return start == "[" and '"role"' in head and "```mswea_bash_command" in head

    def read(self, ctx: ReadContext) -> Iterator[Record]:
        doc = load_json_document(ctx)
        if isinstance(doc, BadRecord):
            yield doc
            return
        messages = doc.get("messages") if isinstance(doc, dict) else doc
        if not isinstance(messages, list):
            yield BadRecord(1, "not a mini-swe-agent trajectory: expected a 'messages' list", str(doc)[:2000])
            return
        info = doc["info"] if isinstance(doc, dict) and isinstance(doc.get("info"), dict) else {}
        config = sub_dict(info, "config")
        model = ((config.get("model") or {}).get("model_name")) if isinstance(config.get("model"), dict) else None
        metadata = {
            "model_stats": info.get("model_stats"),
            "exit_status": info.get("exit_status"),
            "mini_version": info.get("mini_version"),
            "trajectory_format": doc.get("trajectory_format") if isinstance(doc, dict) else None,
            "instance_id": doc.get("instance_id") if isinstance(doc, dict) else None,
        }
        run = Run(
            run_id=ctx.run_id(),
            format=self.format,
            source_path=str(ctx.path),
            model=model,
            harness="mini-swe-agent",
            metadata={k: v for k, v in metadata.items() if v is not None},
        )
        builder = RunBuilder(run)
        yield from _walk(builder, messages)
        yield from builder


def _walk(builder: RunBuilder, messages: list[Any]) -> Iterator[BadRecord]:
    pending: list[str] = []  # old format: calls waiting for the next user message
    for idx, msg in enumerate(messages):
        if not isinstance(msg, dict) or "role" not in msg:
            yield BadRecord(idx, "message without a role", str(msg)[:2000])
            continue
        role, text = msg["role"], text_of(msg.get("content"))
        extra = sub_dict(msg, "extra")
        ts = _ts(extra.get("timestamp"))
        if role == "system":
            builder.add("system", "system", text, line=idx)
        elif role == "assistant":
            builder.request(line=idx, ts=ts, **_usage(extra.get("response")))
            builder.new_turn()
            if text:
                builder.add("assistant_text", "assistant", text, line=idx, ts=ts)
            pending = []
            for n, (command, call_id) in enumerate(_actions(msg, extra, text)):
                call_id = call_id or f"msg-{idx}-{n}"
                builder.call("bash", {"command": command}, call_id, line=idx, ts=ts)
                pending.append(call_id)
        elif role == "tool":
            builder.result(text, msg.get("tool_call_id"), "bash", line=idx, ts=ts)
            pending = []
        elif role == "user" and pending and not extra.get("interrupt_type"):
            builder.result(text, pending[0], "bash", role="user", line=idx, ts=ts)
            pending = []
        elif role == "exit":
            continue  # the harness's final record (submission), never sent to the model
        else:
            builder.add("user_text", "user", text, line=idx, ts=ts)
            pending = []


def _actions(msg: dict, extra: dict, text: str) -> list[tuple[str, str | None]]:
    actions = extra.get("actions")
    if isinstance(actions, list) and actions:
        return [(str(a.get("command", "")), a.get("tool_call_id")) for a in actions if isinstance(a, dict)]
    calls: list[tuple[str, str | None]] = []
    for call in msg.get("tool_calls") or []:
        fn = call.get("function") or {}
        try:
            args = json.loads(fn.get("arguments") or "{}")
        except ValueError:
            args = {"command": fn.get("arguments")}
        calls.append((str(args.get("command", "")) if isinstance(args, dict) else str(args), call.get("id")))
    if calls:
        return calls
    blocks: list[tuple[str, str | None]] = [(m.group(1).strip(), None) for m in BLOCK_RE.finditer(text)]
    return blocks[:1]


def _usage(response: Any) -> dict[str, Any]:
    usage = response.get("usage") if isinstance(response, dict) else None
    if not isinstance(usage, dict):
        return {}
    prompt = usage.get("prompt_tokens")
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
    return {
        "prompt_tokens": prompt,
        "cache_read": cached,
        "output_tokens": usage.get("completion_tokens"),
        "input_tokens": prompt - cached if isinstance(prompt, int) else None,
        "model": response.get("model"),
    }


def _ts(value: Any) -> str | None:
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(value, UTC).isoformat()
    return value if isinstance(value, str) else None


READER = MiniSweAgentReader()
