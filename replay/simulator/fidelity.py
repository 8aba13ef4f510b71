"""Fidelity: replay a run under full history and compare with its recorded usage."""

from __future__ import annotations

import numpy as np

from replay.policies import Budget, make_policy
from replay.simulator.arrays import RunArrays
from replay.simulator.caches import make_cache
from replay.simulator.run import simulate_run

BIG = Budget(10**9, 0)


def recorded_overhead(run: RunArrays) -> int:
    """Prompt tokens of the first request the log does not hold (recorded minus simulated), at least 0."""
    if run.n_requests == 0 or run.rec_prompt[0] <= 0:
        return 0
    first = int(run.tokens[:run.req_end[0]].sum())
    return max(int(run.rec_prompt[0]) - first, 0)


def uncached_floor(run: RunArrays) -> int:
    """Uncached input the server reported on every request after the first (its minimum).

    Claude Code writes each new message to the cache, so its floor is a few tokens; a harness that sends a
    block after its last breakpoint (re-sent, never cached) shows that block's size here."""
    rec = run.rec_input[1:]
    rec = rec[rec >= 0]
    return int(rec.min()) if len(rec) else 0


def inferred_ttl(run: RunArrays) -> float:
    """1 h when, after an idle gap over 5 min, the server still read more than the run's first cached prefix
    (the shared harness prompt other sessions keep warm): only a 1 h TTL keeps a conversation that long."""
    if run.n_requests < 2:
        return 300.0
    gap = np.diff(run.req_ts, prepend=np.nan)
    beyond = run.rec_cache_read > max(int(run.rec_cache_read[0]), 0) + 1024
    return 3600.0 if bool(((gap > 300) & beyond).any()) else 300.0


def cache_share(run: RunArrays, cache: str = "anthropic", with_overhead: bool = True) -> dict:
    """Simulated vs recorded cache-read share (sum cache_read / sum prompt) under the full-history policy.

    The prompt part the log does not hold is split into a cached prefix and an uncached tail (the floor)."""
    unlogged = recorded_overhead(run) if with_overhead else 0
    tail = min(uncached_floor(run), unlogged) if with_overhead and cache == "anthropic" else 0
    overhead = unlogged - tail
    warm = int(max(run.rec_cache_read[0], 0)) if run.n_requests else 0  # what the log says was cached already
    model = make_cache(cache, ttl=inferred_ttl(run)) if cache == "anthropic" else make_cache(cache)
    cols, row = simulate_run(run, make_policy("full"), model, BIG, overhead=overhead, warm=warm, tail=tail)
    return {"run_id": run.run_id, "requests": run.n_requests, "overhead": overhead, "tail": tail, "warm": warm,
            "ttl": getattr(model, "ttl", None),
            "simulated": row["cache_hit_rate"], "recorded": row["recorded_cache_share"],
            "prompt_error": _median_error(cols)}


def _median_error(cols: dict) -> float | None:
    import numpy as np

    have = cols["recorded_prompt"] > 0
    if not have.any():
        return None
    err = (cols["prompt_tokens"][have] - cols["recorded_prompt"][have]) / cols["recorded_prompt"][have]
    return float(np.median(err))


FORMATS_BY_CACHE = {"anthropic": "claude%", "openai": "codex%"}


def fidelity_frame(con, tokenizer_id: str | None, cache: str = "anthropic", tolerance: float = 0.05):
    """Per run of the cache's own harness (Claude Code for anthropic, Codex for openai) with recorded cache
    reads: simulated vs recorded cache-read share under full history."""
    import polars as pl

    from replay.simulator.load import load_runs

    src = dict(con.execute("SELECT run_id, source_path FROM runs WHERE format LIKE ?",
                           [FORMATS_BY_CACHE.get(cache, "%")]).fetchall())
    rows = []
    for run in load_runs(con, tokenizer_id):
        if run.run_id not in src or run.n_requests < 2 or not (run.rec_cache_read >= 0).any():
            continue
        d = cache_share(run, cache)
        if d["recorded"] is None:
            continue
        rows.append({"file": src[run.run_id].rsplit("/", 1)[-1], "run_id": run.run_id, "requests": run.n_requests,
                     "simulated": round(d["simulated"], 3), "recorded": round(d["recorded"], 3),
                     "diff_pp": round(100 * (d["simulated"] - d["recorded"]), 1),
                     "within": abs(d["simulated"] - d["recorded"]) <= tolerance, "prefix": d["overhead"],
                     "tail": d["tail"], "ttl_s": d["ttl"], "median_prompt_error": d["prompt_error"],
                     "token_source": run.token_source})
    return pl.DataFrame(rows, infer_schema_length=None)
