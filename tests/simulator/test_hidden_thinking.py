"""Claude Code 2.1.x logs its thinking without the text: sized from the response's output, the server counts it in
every later prompt (replay.readers.claude_code_thinking)."""

from __future__ import annotations

import json

import pytest

from replay.simulator.fidelity import fidelity_frame
from replay.tokens.counting import count_items
from replay.tokens.loading import load_tokenizer

RUN = "ccl-worktrees-ef958aa1-main"  # claude-opus-4-7, 2.1.114: 16 responses think with an empty text


@pytest.fixture(scope="module")
def o200k(corpus_db):
    tok = load_tokenizer("o200k")
    count_items(corpus_db, tok)
    return tok.tokenizer_id


def test_the_reader_sizes_each_empty_thinking_block(corpus_db):
    """Its first response (line 9) wrote 2,201 output tokens, a 184-character tool call among them (46 tokens at
    characters / 4), under an 8,392-character signature; the next request grew by 5,521. A response of long calls
    and a 376-character signature (line 44: 3,639 output tokens, 8,724 characters of calls) thinks at most 125."""
    (metadata,) = corpus_db.execute("SELECT metadata FROM runs WHERE run_id LIKE ?", [f"{RUN}%"]).fetchall()[0]
    sizes = dict(map(tuple, json.loads(metadata)["thinking_tokens"]))
    lines = dict(
        corpus_db.execute(
            "SELECT seq, line FROM items WHERE run_id LIKE ? AND kind = 'reasoning'", [f"{RUN}%"]
        ).fetchall()
    )
    by_line = {lines[seq]: tokens for seq, tokens in sizes.items()}
    assert len(sizes) == 14 and by_line[9] == 2_201 - 46 and by_line[44] == 376 // 3


def test_the_prompt_follows_the_log_with_the_thinking_counted(corpus_db, o200k):
    """Counted as its empty text, the thinking left the replayed prompt 3.97% off at p95 (0.62% median)."""
    (run,) = [r for r in fidelity_frame(corpus_db, o200k, pattern=f"%{RUN}%").to_dicts() if r["kind"] == "run"]
    assert run["median_abs_pct"] < 0.3 and run["p95_abs_pct"] < 2.0, run
