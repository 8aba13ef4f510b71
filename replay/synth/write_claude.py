"""A plan as a Claude Code session JSONL (the lines ``replay.readers.claude_code`` reads).

Request k is an assistant response: one line per content block (text, thinking, tool_use), all with the request's
``requestId`` and usage; tool results follow as user lines, then the next user input.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import orjson

from replay.synth.plan import ASSISTANT_SIDE, Entry, Plan, _ident
from replay.synth.profile import Usage

VERSION = "2.0.14"


def _ts(t: datetime) -> str:
    ms = t.microsecond // 1000
    return f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}.{ms:03d}Z"


def _usage(u: Usage | None) -> dict[str, Any] | None:
    if u is None:
        return None
    out: dict[str, Any] = {
        "input_tokens": u.input_tokens,
        "cache_read_input_tokens": u.cache_read or 0,
        "output_tokens": u.output_tokens or 0,
        "service_tier": "standard",
    }
    out["cache_creation_input_tokens"] = u.cache_write or 0
    return out


class _Writer:
    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.rng = random.Random(f"cc:{plan.session_id}")
        self.parent: str | None = None

    def line(self, kind: str, t: datetime, **fields: Any) -> bytes:
        uid = _ident(self.rng, "", 32)
        obj = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.plan.cwd,
            "sessionId": self.plan.session_id,
            "version": VERSION,
            "gitBranch": "main",
            "type": kind,
            **fields,
            "uuid": uid,
            "timestamp": _ts(t),
        }
        self.parent = uid
        return orjson.dumps(obj)

    def assistant(self, k: int, entries: list[Entry], t: datetime) -> Iterator[bytes]:
        rid, mid = _ident(self.rng, "req_"), _ident(self.rng, "msg_")
        message: dict[str, Any] = {
            "id": mid,
            "type": "message",
            "role": "assistant",
            "model": self.plan.model,
            "stop_reason": None,
            "stop_sequence": None,
        }
        if (usage := _usage(self.plan.usage[k])) is not None:
            message["usage"] = usage
        for n, block in enumerate([_block(e) for e in entries] or [{"type": "text", "text": ""}]):
            yield self.line(
                "assistant", t + timedelta(milliseconds=50 * n), message={**message, "content": [block]}, requestId=rid
            )

    def user(self, entries: list[Entry], t: datetime) -> Iterator[bytes]:
        for e in entries:
            if e.kind == "tool_call" and e.call is not None and e.call.result is not None:
                block = {
                    "tool_use_id": e.call.call_id,
                    "type": "tool_result",
                    "content": e.call.result,
                    "is_error": e.call.is_error,
                }
                yield self.line("user", t, message={"role": "user", "content": [block]})
            elif e.kind == "tool_result":
                block = {"tool_use_id": _ident(self.rng, "toolu_"), "type": "tool_result", "content": e.text}
                yield self.line("user", t, message={"role": "user", "content": [block]})
            elif e.kind == "attachment":
                yield self.line("attachment", t, attachment={"type": "hook_additional_context", "content": e.text})
            elif e.kind == "summary":
                yield orjson.dumps({"type": "summary", "summary": e.text})
            elif e.kind == "image":
                src = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}
                yield self.line("user", t, message={"role": "user", "content": [{"type": "image", "source": src}]})
            elif e.kind in ("user_text", "system"):
                yield self.line("user", t, message={"role": "user", "content": e.text})

    def lines(self) -> Iterator[bytes]:
        plan = self.plan
        for k, group in enumerate(plan.groups):
            t = plan.times[min(k, len(plan.times) - 1)]
            if k:
                prev = plan.times[k - 1]
                yield from self.assistant(k - 1, [e for e in group if e.kind in ASSISTANT_SIDE], prev)
                t = prev + (t - prev) / 2 if k < len(plan.times) else prev + timedelta(seconds=1)
            yield from self.user(group if k else group, t)


def _block(e: Entry) -> dict[str, Any]:
    if e.kind == "tool_call" and e.call is not None:
        args = e.call.args if e.call.json_args else {"input": e.call.args}
        return {"type": "tool_use", "id": e.call.call_id, "name": e.call.tool, "input": args}
    if e.kind == "reasoning":
        return {"type": "thinking", "thinking": e.text, "signature": "c2lnbmF0dXJl"}
    return {"type": "text", "text": e.text}


def claude_code_lines(plan: Plan) -> Iterator[bytes]:
    """The JSONL lines of ``plan`` as a Claude Code session (UTF-8, without line breaks)."""
    return _Writer(plan).lines()
