"""A plan as a Codex CLI rollout JSONL (the lines ``replay.readers.codex_rollout`` reads).

Request k's output (reasoning, messages, calls) is logged first, then its ``token_count`` event (the request,
with its usage), then the tool outputs and the next user input. The first system text is the session's base
instructions; later system text is a developer message.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import orjson

from replay.synth.plan import ASSISTANT_SIDE, Entry, Plan
from replay.synth.profile import Usage
from replay.synth.write_claude import _ts

CONTEXT_WINDOW = 258_400
FIELDS = ("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens", "total_tokens")


def _line(t: datetime, kind: str, payload: dict[str, Any]) -> bytes:
    return orjson.dumps({"timestamp": _ts(t), "type": kind, "payload": payload})


def _message(role: str, text: str, part: str = "input_text") -> dict[str, Any]:
    return {"type": "message", "role": role, "content": [{"type": part, "text": text}]}


def _last(u: Usage | None) -> dict[str, int]:
    if u is None:
        return dict.fromkeys(FIELDS, 0)
    prompt, out = u.prompt_tokens or 0, u.output_tokens or 0
    last = {
        "input_tokens": prompt,
        "cached_input_tokens": u.cache_read or 0,
        "output_tokens": out,
        "reasoning_output_tokens": 0,
        "total_tokens": prompt + out,
    }
    if u.cache_write is not None:
        last["cache_write_input_tokens"] = u.cache_write
    return last


def _output(e: Entry) -> dict[str, Any]:
    if e.kind == "tool_call" and e.call is not None:
        if e.call.json_args:
            return {
                "type": "function_call",
                "name": e.call.tool,
                "call_id": e.call.call_id,
                "arguments": json.dumps(e.call.args, ensure_ascii=False),
            }
        return {
            "type": "custom_tool_call",
            "status": "completed",
            "name": e.call.tool,
            "call_id": e.call.call_id,
            "input": e.call.args,
        }
    if e.kind == "reasoning":
        return {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": e.text}],
            "content": None,
            "encrypted_content": "gAAAAA",
        }
    return _message("assistant", e.text, "output_text")


def _inputs(entries: list[Entry], t: datetime, system_done: bool) -> Iterator[bytes]:
    for e in entries:
        if e.kind == "tool_call" and e.call is not None and e.call.result is not None:
            kind = "function_call_output" if e.call.json_args else "custom_tool_call_output"
            yield _line(t, "response_item", {"type": kind, "call_id": e.call.call_id, "output": e.call.result})
        elif e.kind == "system" and system_done:
            yield _line(t, "response_item", _message("developer", e.text))
        elif e.kind == "image":
            yield _line(
                t,
                "response_item",
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_image", "image_url": "data:image/png;"}],
                },
            )
        elif e.kind in ("user_text", "attachment", "summary", "tool_result"):
            yield _line(t, "response_item", _message("user", e.text))


def codex_lines(plan: Plan) -> Iterator[bytes]:
    """The JSONL lines of ``plan`` as a Codex rollout (UTF-8, without line breaks)."""
    start = plan.times[0]
    first = plan.groups[0]
    system = next((e for e in first if e.kind == "system"), None)
    meta: dict[str, Any] = {
        "id": plan.session_id,
        "timestamp": _ts(start),
        "cwd": plan.cwd,
        "originator": "codex_cli_rs",
        "cli_version": "0.116.0",
        "source": "cli",
        "model_provider": "openai",
    }
    if system is not None:
        meta["base_instructions"] = {"text": system.text}
    yield _line(start, "session_meta", meta)
    yield _line(
        start, "turn_context", {"cwd": plan.cwd, "model": plan.model or "gpt-5-codex", "approval_policy": "on-request"}
    )
    yield from _inputs([e for e in first if e is not system], start, True)
    total = dict.fromkeys(FIELDS, 0)
    for k in range(1, len(plan.groups)):
        group, prev = plan.groups[k], plan.times[k - 1]
        for e in group:
            if e.kind in ASSISTANT_SIDE:
                yield _line(prev, "response_item", _output(e))
        last = _last(plan.usage[k - 1])
        total = {f: total.get(f, 0) + last.get(f, 0) for f in dict.fromkeys([*total, *last])}  # keys in a fixed order
        info = {"total_token_usage": total, "last_token_usage": last, "model_context_window": CONTEXT_WINDOW}
        yield _line(
            prev + timedelta(milliseconds=5), "event_msg", {"type": "token_count", "info": info, "rate_limits": None}
        )
        t = prev + (plan.times[k] - prev) / 2 if k < len(plan.times) else prev + timedelta(seconds=1)
        yield from _inputs(group, t, True)
