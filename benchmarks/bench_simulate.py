"""Requests simulated per second for seed policy A over the corpus: the array simulator vs a naive loop that
rebuilds the view as segment objects every step and finds the cache hit by chained segment hashes.

    python benchmarks/bench_simulate.py [--db /tmp/y.duckdb]   (ingest the corpus into that store first)
"""

from __future__ import annotations

import argparse
import hashlib
import time

from replay.policies import Budget, make_policy
from replay.simulator.caches import make_cache
from replay.simulator.load import load_runs
from replay.simulator.run import simulate_run
from replay.store import open_store


def naive_run(run, policy, budget: Budget) -> int:
    """Rebuild V_k as segments each step; hit = longest shared prefix of chained segment hashes."""
    policy.reset(run, budget)
    prev: list[str] = []
    cached = 0
    for k in range(run.n_requests):
        view = policy.step(k)
        chain, h = [], b""
        for key in view.keys():
            h = hashlib.blake2b(h + repr(key).encode(), digest_size=8).digest()
            chain.append(h.hex())
        segs = view.segments()
        shared = 0
        while shared < min(len(prev), len(chain)) and prev[shared] == chain[shared]:
            shared += 1
        cached += sum(s.tokens for s in segs[:shared])
        prev = chain
    return cached


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", default="/tmp/y.duckdb")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    runs = load_runs(open_store(args.db, read_only=True))
    n_req = sum(r.n_requests for r in runs)
    budget = Budget(130_000, 24_576)
    policy = make_policy("seed_a")
    t0 = time.perf_counter()
    for _ in range(args.repeat):
        for run in runs:
            simulate_run(run, policy, make_cache("llamacpp"), budget)
    fast = args.repeat * n_req / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    for run in runs:
        naive_run(run, policy, budget)
    naive = n_req / (time.perf_counter() - t0)
    print(f"{len(runs)} runs, {n_req} requests, policy seed_a (window 130,000, reserve 24,576)")
    print(f"array simulator (full metrics): {fast:,.0f} request-configurations/s")
    print(f"naive rebuild-the-view:         {naive:,.0f} request-configurations/s")
    print(f"ratio: {fast / naive:.1f}x (target 1,000,000/s: {'met' if fast >= 1e6 else 'not met'})")


if __name__ == "__main__":
    main()
