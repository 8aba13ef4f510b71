"""A rollout whose token_counts carry something other than usage objects (a redacted export) says so."""

from __future__ import annotations

import json
from pathlib import Path

from replay.model import Request, Run
from replay.readers.base import ReadContext
from replay.readers.codex_rollout import READER as ROLLOUT


def message(role: str, text: str) -> dict:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def count(usage: object) -> dict:
    info = {"total_token_usage": usage, "last_token_usage": usage, "model_context_window": 258400}
    return {"type": "token_count", "info": info}


# a Codex Desktop 0.100 rollout exported with its usage replaced by a marker string
LINES = [
    ("session_meta", {"id": "s", "cwd": "/w", "originator": "Codex Desktop", "cli_version": "0.100.0-alpha.10"}),
    ("turn_context", {"model": "gpt-5.3-codex"}),
    ("response_item", message("user", "tidy the viewer")),
    ("response_item", message("assistant", "looking")),
    ("event_msg", count("[REDACTED]")),
    ("response_item", message("user", "and the css")),
    ("response_item", message("assistant", "done")),
    ("event_msg", count("[REDACTED]")),
]


def test_redacted_usage_is_warned_and_requests_are_kept(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    rows = (json.dumps({"timestamp": "2026-02-13T17:49:21Z", "type": t, "payload": p}) for t, p in LINES)
    path.write_text("\n".join(rows) + "\n")
    records = list(ROLLOUT.read(ReadContext(path=path, file_hash="0" * 32)))
    run = next(r for r in records if isinstance(r, Run))
    requests = [r for r in records if isinstance(r, Request)]
    assert len(requests) == 2 and all(r.prompt_tokens is None for r in requests)  # main: no request, no warning
    warned = [w for w in run.metadata["warnings"] if "not a TokenUsage object" in w["message"]]
    assert [w["line"] for w in warned] == [5] and "'[REDACTED]'" in warned[0]["message"]
    assert run.metadata["usage_logged"] is False
