"""Simulated request-configurations per second for seed policy A over the whole corpus, in one run:

- compiled: the numba kernel sweeps use (replay.simulator.kernels), one process and one per core;
- reference: the array simulator (replay.simulator.run.simulate_run), full per-request metrics;
- naive: a loop that rebuilds the view as segment objects every step and finds the cache hit by chained hashes.

    replay ingest ../shared/corpus --db /tmp/y.duckdb
    python benchmarks/bench_simulate.py [--db /tmp/y.duckdb] [--points 200]
"""

from __future__ import annotations

import argparse
import hashlib
import multiprocessing as mp
import os
import time

from replay.policies import Budget, make_policy
from replay.simulator.caches import make_cache
from replay.simulator.kernels import pack, point_frame, warm_up
from replay.simulator.load import load_runs
from replay.simulator.run import simulate_run
from replay.store import open_store
from replay.sweeps.adapter import resolve

FIXED = {"window": 130_000, "reserve": 24_576}


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


def grid(points: int) -> list[dict]:
    """``points`` distinct seed-A configurations (summary threshold x protected range)."""
    return [{**FIXED, "summary_at": 30_000 + 500 * (i // 10), "protect": 2_000 + 2_000 * (i % 10)}
            for i in range(points)]


_PACKED = None


def _init(packed) -> None:
    global _PACKED
    _PACKED = packed


def _compiled(points: list[dict]) -> int:
    for params in points:
        point_frame(_PACKED, resolve("seed_a", params, "anthropic"))
    return len(points)


def main() -> None:
    global _PACKED
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", default="/tmp/y.duckdb")
    ap.add_argument("--points", type=int, default=200, help="configurations for the compiled kernel")
    args = ap.parse_args()
    runs = load_runs(open_store(args.db, read_only=True))
    n_req = sum(r.n_requests for r in runs)
    budget = Budget(FIXED["window"], FIXED["reserve"])
    _PACKED = pack(runs)
    warm_up("seed_a")
    points = grid(args.points)

    t0 = time.perf_counter()
    _compiled(points)
    compiled = len(points) * n_req / (time.perf_counter() - t0)
    cores = os.cpu_count() or 1
    chunks = [points[i::cores] for i in range(cores)]
    with mp.get_context("forkserver").Pool(cores, initializer=_init, initargs=(_PACKED,)) as pool:
        pool.map(_compiled, [points[:1]] * cores, chunksize=1)  # workers load the kernel before the clock
        t0 = time.perf_counter()
        pool.map(_compiled, chunks, chunksize=1)
        parallel = len(points) * n_req / (time.perf_counter() - t0)

    policy = make_policy("seed_a")
    t0 = time.perf_counter()
    for run in runs:
        simulate_run(run, policy, make_cache("anthropic"), budget)
    reference = n_req / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    for run in runs:
        naive_run(run, policy, budget)
    naive = n_req / (time.perf_counter() - t0)

    print(f"{len(runs)} runs, {n_req:,} requests, seed_a (window 130,000, reserve 24,576), anthropic cache")
    print(f"compiled kernel, {len(points)} configs, 1 process: {compiled:>12,.0f} request-configurations/s")
    print(f"compiled kernel, {len(points)} configs, {cores} processes: {parallel:>11,.0f} request-configurations/s")
    print(f"reference array simulator:                {reference:>12,.0f} request-configurations/s")
    print(f"naive rebuild-the-view:                   {naive:>12,.0f} request-configurations/s")
    print(f"ratios vs naive: compiled {compiled / naive:,.0f}x, {cores} processes {parallel / naive:,.0f}x, "
          f"reference {reference / naive:.1f}x (target 1,000,000/s on {cores} cores: "
          f"{'met' if parallel >= 1e6 else 'not met'})")


if __name__ == "__main__":
    main()
