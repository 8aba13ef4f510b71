"""A remote compaction's encrypted summary is sized as codex-rs sizes it, and stays in every later prompt."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl

from replay.model import Item, Request, Run
from replay.readers.base import ReadContext
from replay.readers.codex_rollout import READER as ROLLOUT
from replay.readers.codex_rollout import codex_reasoning_estimate
from replay.tokens import Overhead
from replay.tokens.calibrate import visible
from replay.tokens.usage_metadata import exact_sizes

BLOB = "gAAAAB" + "x" * 8_000  # the server's encrypted summary: only its length says anything about its size


def tokens(total: int, prompt: int) -> tuple[str, dict]:
    last = {"input_tokens": prompt, "cached_input_tokens": 0, "output_tokens": 10, "total_tokens": prompt + 10}
    info = {"total_token_usage": {**last, "total_tokens": total}, "last_token_usage": last}
    return "event_msg", {"type": "token_count", "info": info}


def user(text: str) -> dict:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


# codex-rs 0.117-0.142 with an OpenAI login compacts remotely: the `compacted` line has an empty message and its
# replacement history ends with the server's encrypted `compaction` item; then context_compacted
ROLLOUT_LINES = [
    ("session_meta", {"id": "s", "cwd": "/w", "originator": "codex_cli_rs", "cli_version": "0.118.0"}),
    ("turn_context", {"model": "gpt-5.3-codex"}),
    ("response_item", user("fix the build")),
    ("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}),
    tokens(1_000, 1_000),  # the agent's request, logged after its output
    (
        "compacted",
        {
            "message": "",
            "replacement_history": [user("fix the build"), {"type": "compaction", "encrypted_content": BLOB}],
        },
    ),
    ("event_msg", {"type": "context_compacted"}),
    ("response_item", user("and the tests")),
    tokens(4_000, 3_000),
]


def test_encrypted_summary_gets_codex_rs_estimate(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    rows = (
        json.dumps({"timestamp": f"2026-04-01T00:00:{k:02d}Z", "type": t, "payload": p})
        for k, (t, p) in enumerate(ROLLOUT_LINES)
    )
    path.write_text("\n".join(rows) + "\n")
    records = list(ROLLOUT.read(ReadContext(path=path, file_hash="0" * 32)))
    run = next(r for r in records if isinstance(r, Run))
    (summary,) = [i for i in records if isinstance(i, Item) and i.kind == "summary"]
    estimate = codex_reasoning_estimate(BLOB)  # (3/4 of 8,006 bytes - 650) / 4, rounded up
    assert estimate == 1_339
    assert run.metadata["encrypted_summary_tokens"] == [[summary.seq, estimate]]
    assert exact_sizes(run.metadata) == {summary.seq: estimate}  # main: {} (the summary counted as 0 tokens)


def test_a_sized_summary_stays_after_the_next_user_turn() -> None:
    """Sized reasoning leaves the prompt at the next user turn; a sized summary does not."""
    items = pl.DataFrame(
        {
            "seq": [0, 1, 2, 3],
            "step": [0, 0, 1, 2],
            "turn": [1, 1, 1, 2],
            "role": ["user", "assistant", "user", "user"],
            "kind": ["user_text", "reasoning", "summary", "user_text"],
            "n_tokens": [10, 1, 0, 20],
        }
    )
    p = visible(items, np.arange(3), Overhead({"user": 0}, 0, "test"), exact={1: 300, 2: 1_339})
    assert p.exact.tolist() == [300, 1_339, 1_339]  # main: [300, 1339, 0]


def read_lines(tmp_path: Path, lines: list[tuple[str, dict]]) -> list:
    path = tmp_path / "rollout.jsonl"
    path.write_text(
        "\n".join(json.dumps({"timestamp": "2026-04-01T00:00:00Z", "type": t, "payload": p}) for t, p in lines)
    )
    return list(ROLLOUT.read(ReadContext(path=path, file_hash="0" * 32)))


def test_the_call_before_a_remote_compaction_is_a_request(tmp_path: Path) -> None:
    """compact_remote logs no token_count for the compact endpoint's call: the one before it was the agent's."""
    records = read_lines(tmp_path, ROLLOUT_LINES)
    assert [r.prompt_tokens for r in records if isinstance(r, Request)] == [1_000, 3_000]  # main: [3_000]
    run = next(r for r in records if isinstance(r, Run))
    (event,) = run.metadata["context_events"]
    assert "usage" not in event and event["step"] == 1


def test_the_call_before_a_local_compaction_is_the_summariser(tmp_path: Path) -> None:
    summary = "Here is a summary of the conversation so far"
    local = [
        (t, {"message": summary, "replacement_history": [user("fix the build"), user(summary)]})
        if t == "compacted"
        else (t, p)
        for t, p in ROLLOUT_LINES
    ]
    records = read_lines(tmp_path, local)
    assert [r.prompt_tokens for r in records if isinstance(r, Request)] == [3_000]
    run = next(r for r in records if isinstance(r, Run))
    assert run.metadata["context_events"][0]["usage"]["prompt"] == 1_000
