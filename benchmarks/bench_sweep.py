"""Sweep benchmark: >= 1,000 seed-A points over the shared corpus (read in place), serial vs process pool.

    python benchmarks/bench_sweep.py [--points 1000] [--corpus ../shared/corpus]
Prints wall time, CPU seconds (this process and its workers) and points/s for each executor, and the speed-up.
On a shared machine the CPU seconds per point are the steadier figure: wall time also counts waiting for a core.
"""

from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
from pathlib import Path

from replay.ingest import ingest
from replay.simulator.load import load_runs
from replay.store import open_store
from replay.sweeps import from_dict, run_sweep


def grid(points: int) -> dict:
    """A grid of about ``points`` points: protected range x summary threshold x reclaim floor."""
    n = max(2, round(points ** (1 / 3)))
    return {"protect": [2_000 + 4_000 * i for i in range(n)],
            "summary_at": [40_000 + 8_000 * i for i in range(n)],
            "reclaim_floor": [round(0.02 * i, 3) for i in range(n + (points > n ** 3))]}


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (pool workers)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--points", type=int, default=1000)
    ap.add_argument("--corpus", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "corpus")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        con = open_store(Path(tmp) / "bench.duckdb")
        ingest(con, [args.corpus])
        runs = load_runs(con)
        g = grid(args.points)
        results = {}
        for executor in ("serial", "local"):
            spec = from_dict({"sweep": {"policy": "seed_a", "name": f"bench-{executor}", "batch": 32},
                              "fixed": {"window": 130_000, "reserve": 24_576}, "grid": g})
            c0, t0 = cpu_seconds(), time.perf_counter()
            out = run_sweep(con, spec, executor=executor, progress=False, runs=runs)
            wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
            results[executor] = wall
            print(f"{executor:>6}: {out.points} points x {out.runs} runs in {wall:.1f}s = "
                  f"{out.points / wall:.1f} points/s, {1000 * cpu / out.points:.1f} CPU ms/point "
                  f"({out.errors} error rows)")
        print(f"speed-up on {os.cpu_count()} cores: {results['serial'] / results['local']:.2f}x")


if __name__ == "__main__":
    main()
