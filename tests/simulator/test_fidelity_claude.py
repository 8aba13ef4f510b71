"""Anthropic cache model replaying recorded Claude Code runs under full history: simulated cache-read share
(sum cache_read / sum prompt) within 5 points of the recorded one, per run. Tokens are chars/4 estimates until
real counts exist; the unlogged harness prefix is taken from the first recorded request."""

from __future__ import annotations

import pytest

from replay.simulator.fidelity import cache_share
from replay.simulator.load import load_runs

# Measured divergences (chars/4 tokens), kept visible as xfail rather than hidden:
DIVERGENT = {
    "ccb-android-avd": "recorded share 0.24-0.43: this harness's cache broke between requests (opus-4-8 backup)",
    "ccb-avd-minimax": "endpoint (MiniMax via Anthropic API) reports no cache reads at all",
    "ccl-worktrees-ef958aa1": "main and subagents share a cache across runs; simulated within 6-8 points",
}


def claude_runs(con):
    src = dict(con.execute("SELECT run_id, source_path FROM runs WHERE format LIKE 'claude%'").fetchall())
    return [(src[r.run_id].rsplit("/", 1)[-1], r) for r in load_runs(con) if r.run_id in src]


def test_claude_code_cache_share(corpus_db):
    rows = []
    for name, run in claude_runs(corpus_db):
        d = cache_share(run)
        if d["recorded"] is None or run.n_requests < 2:
            continue
        rows.append((name, d["simulated"], d["recorded"], abs(d["simulated"] - d["recorded"]) <= 0.05))
    if not rows:
        pytest.skip("no Claude Code runs with recorded usage ingested (reader not present?)")
    print("\n" + "\n".join(f"{'ok ' if ok else 'OFF'} {n}: simulated {s:.3f} recorded {r:.3f}"
                           for n, s, r, ok in rows))
    unexplained = [r for r in rows if not r[3] and not any(r[0].startswith(k) for k in DIVERGENT)]
    assert not unexplained, unexplained
    assert sum(r[3] for r in rows) >= 0.6 * len(rows)
