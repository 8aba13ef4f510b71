"""Fixtures shared by the simulator tests."""

from __future__ import annotations

import pytest

from replay.simulator.load import load_runs


@pytest.fixture(scope="module")
def claude_code_runs(corpus_db):
    """The corpus's Claude Code runs by id, counted with o200k."""
    from replay.tokens.counting import count_items
    from replay.tokens.loading import load_tokenizer

    tok = load_tokenizer("o200k")
    count_items(corpus_db, tok)
    return {r.run_id: r for r in load_runs(corpus_db, tok.tokenizer_id, pattern="%claude-code%")}
