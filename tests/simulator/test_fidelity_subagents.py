"""A Claude Code sub-agent's first attachments (corpus o200k counts).

A sub-agent's prompt gets no attachment; its first pass runs after its first tool results (query.ts
getAttachmentMessages), where the deferred tools, MCP instructions and agents it may use are announced in full. The
transcript does not log them, so its second request holds more than its first and the tool results logged between.
The reader notes it (``subagent attachments``) and calibration fits it there, as the notice it is. Fitted into the
prefix, it made the first request over-counted: the ccl-worktrees sub-agents (2.1.114) were 6.7-8.0% off at p95 with
scales of 1.8, ccl-deep-manifest's agent (2.0.55) 9.06%.
"""

from __future__ import annotations

import json

import pytest

from replay.simulator.fidelity import fidelity_frame


@pytest.fixture(scope="module")
def o200k(corpus_db):
    from replay.tokens.counting import count_items
    from replay.tokens.loading import load_tokenizer

    tok = load_tokenizer("o200k")
    count_items(corpus_db, tok)
    return tok.tokenizer_id


def test_a_sub_agents_second_request_is_where_its_first_attachments_enter(corpus_db, o200k):
    rows = [
        r
        for pattern in ("%ccl-worktrees-ef958aa1-sub-agent-%", "%ccl-deep-manifest-agent%")
        for r in fidelity_frame(corpus_db, o200k, pattern=pattern).to_dicts()
        if r["kind"] == "run"
    ]
    assert len(rows) == 7
    for r in rows:
        assert r["p95_abs_pct"] <= 2.0, r  # 6.74-9.06 with the announcement fitted into the prefix
        (meta,) = corpus_db.execute("SELECT metadata FROM runs WHERE run_id = ?", [r["run_id"]]).fetchall()[0]
        notes = [u for u in json.loads(meta).get("unlogged") or [] if u["reason"] == "subagent attachments"]
        assert [u["step"] for u in notes] == [1], (r["run_id"], notes)


def test_only_a_sub_agent_that_is_no_fork_gets_the_note(corpus_db):
    """A main thread's first attachments come with its prompt (in the fitted prefix); a fork (a compaction's, a
    prompt suggestion's) runs on its parent's messages, which hold them already."""
    from replay.readers.claude_code import FORK_FILE

    seen = {True: 0, False: 0}
    for source, raw in corpus_db.execute(
        "SELECT source_path, metadata FROM runs WHERE format = 'claude-code'"
    ).fetchall():
        meta = json.loads(raw) if raw else {}
        name = source.rsplit("/", 1)[-1]
        agent_file = "agent-" in name or "-sub-" in name
        expected = agent_file and not FORK_FILE.search(name) and "agent-acompact-" not in name
        noted = any(u.get("reason") == "subagent attachments" for u in meta.get("unlogged") or [])
        seen[expected] += 1
        if not expected:
            assert not noted, source
    assert seen[True] >= 7 and seen[False] >= 10, seen
