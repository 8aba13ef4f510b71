"""A Codex request whose response ran a hosted web search: its usage holds the results, which the log never does."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from replay.model import Request, Run
from replay.readers.base import ReadContext
from replay.readers.codex_rollout import READER as ROLLOUT
from replay.readers.codex_rollout import SEARCH_NOTE
from replay.tokens.calibrate import learnable


def tokens(total: int, prompt: int) -> tuple[str, dict]:
    last = {"input_tokens": prompt, "cached_input_tokens": 0, "output_tokens": 10, "total_tokens": prompt + 10}
    return "event_msg", {
        "type": "token_count",
        "info": {"total_token_usage": {"total_tokens": total}, "last_token_usage": last},
    }


def call(n: int) -> tuple[str, dict]:
    return "response_item", {"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": f"c{n}"}


def output(n: int) -> tuple[str, dict]:
    return "response_item", {"type": "function_call_output", "call_id": f"c{n}", "output": "ok"}


SEARCH = (
    "response_item",
    {"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "x"}},
)

# codex-rs 0.142 (Codex Desktop): each response's items, its tools' outputs, then its token_count; the second
# response searched the web twice: its input counts the results (9,000), the next prompt is back to 5,200
LINES = [
    ("session_meta", {"id": "s", "cwd": "/w", "originator": "Codex Desktop", "cli_version": "0.142.5"}),
    ("turn_context", {"model": "gpt-5.5"}),
    ("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "look it up"}]}),
    call(1),
    output(1),
    tokens(5_000, 5_000),
    SEARCH,
    SEARCH,
    call(2),
    output(2),
    tokens(14_000, 9_000),
    call(3),
    output(3),
    tokens(19_200, 5_200),
]


def test_a_searching_request_is_noted_and_left_out_of_the_fit(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    rows = (
        json.dumps({"timestamp": f"2026-07-09T00:00:{k:02d}Z", "type": t, "payload": p})
        for k, (t, p) in enumerate(LINES)
    )
    path.write_text("\n".join(rows) + "\n")
    records = list(ROLLOUT.read(ReadContext(path=path, file_hash="0" * 32)))
    run = next(r for r in records if isinstance(r, Run))
    assert [r.prompt_tokens for r in records if isinstance(r, Request)] == [5_000, 9_000, 5_200]
    (note,) = run.metadata["unlogged"]  # main: no note (the two searches are one request's)
    assert (note["step"], note["reason"], note["usage_only"], note["varies"]) == (1, SEARCH_NOTE, True, True)
    steps = np.arange(40)
    keep = learnable(steps, {"unlogged": [note]})
    assert keep is not None and not keep[1] and keep.sum() == 39
    assert learnable(steps, {}) is None
