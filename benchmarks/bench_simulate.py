"""Simulated request-configurations per second for one built-in policy over the whole corpus, in one run:

- compiled loop: what sweeps run (replay.sweeps.point_rows.point_frame), one process and one per core;
- per-request views: the same loop's trace turned into every request's View and the full per-request metrics
  (replay.simulator.run.simulate_run), what ``simulate``, ``show`` and the reports use.

    replay ingest ../shared/corpus --db /tmp/y.duckdb
    python benchmarks/bench_simulate.py --policy seed_b [--db /tmp/y.duckdb] [--points 200]
    python benchmarks/bench_simulate.py --policy all
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path

from replay.policies import Budget, make_policy, registry
from replay.simulator.caches import make_cache
from replay.simulator.kernels.packed import pack
from replay.simulator.load import load_runs
from replay.simulator.run import simulate_run
from replay.store import open_store
from replay.sweeps.adapter import resolve
from replay.sweeps.point_rows import point_frame, warm_up

sys.path.insert(0, str(Path(__file__).resolve().parent))
from grids import grid  # noqa: E402

TARGET = 300_000  # request-configurations/s per core (issue 13)
_PACKED = None


def _init(packed) -> None:
    global _PACKED
    _PACKED = packed


def _compiled(job: tuple[str, list[dict]]) -> int:
    policy, points = job
    for params in points:
        point_frame(_PACKED, resolve(policy, params, "anthropic"))
    return len(points)


def bench(policy: str, runs: list, points: int, pool) -> dict:
    """Rates of the compiled loop (1 process, every core) and of the per-request view path for ``policy``."""
    n_req = sum(r.n_requests for r in runs)
    warm_up(policy)
    configs = grid(policy, points)
    t0 = time.perf_counter()
    _compiled((policy, configs))
    one = len(configs) * n_req / (time.perf_counter() - t0)
    cores = pool._processes
    pool.map(_compiled, [(policy, configs[:1])] * cores, chunksize=1)  # workers load the loop before the clock
    t0 = time.perf_counter()
    pool.map(_compiled, [(policy, configs[i::cores]) for i in range(cores)], chunksize=1)
    every = len(configs) * n_req / (time.perf_counter() - t0)
    budget = Budget(130_000, 4_096)
    t0 = time.perf_counter()
    for run in runs:
        simulate_run(run, make_policy(policy), make_cache("anthropic"), budget)
    views = n_req / (time.perf_counter() - t0)
    return {"policy": policy, "one": one, "every": every, "per_core": every / cores, "views": views}


def main() -> None:
    global _PACKED
    ap = argparse.ArgumentParser()
    ap.add_argument("--policy", default="seed_a", help="a built-in policy, or 'all'")
    ap.add_argument("--db", default="/tmp/y.duckdb")
    ap.add_argument("--points", type=int, default=200, help="configurations for the compiled loop")
    args = ap.parse_args()
    runs = load_runs(open_store(args.db, read_only=True))
    n_req = sum(r.n_requests for r in runs)
    _PACKED = pack(runs)
    names = sorted(registry()) if args.policy == "all" else [args.policy]
    cores = os.cpu_count() or 1
    print(f"{len(runs)} runs, {n_req:,} requests, {args.points} configurations each, anthropic cache, {cores} cores")
    print(f"{'policy':<17} {'1 process':>12} {'per core':>12} {'all cores':>12} {'views':>9} {'loop/views':>10}")
    with mp.get_context("forkserver").Pool(cores, initializer=_init, initargs=(_PACKED,)) as pool:
        for name in names:
            r = bench(name, runs, args.points, pool)
            print(
                f"{name:<17} {r['one']:>12,.0f} {r['per_core']:>12,.0f} {r['every']:>12,.0f} {r['views']:>9,.0f} "
                f"{r['one'] / r['views']:>9,.0f}x  {'ok' if r['per_core'] >= TARGET else 'below target'}"
            )
    print(f"request-configurations/s; target {TARGET:,} per core")


if __name__ == "__main__":
    main()
