"""Sweep benchmark: >= 1,000 seed-A points over the shared corpus (read in place), serial vs process pool.

    python benchmarks/bench_sweep.py [--points 1000] [--corpus ../shared/corpus]
Prints wall time and points/s for each executor, and the speed-up.
"""

from __future__ import annotations

import argparse
import os
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
            t0 = time.perf_counter()
            out = run_sweep(con, spec, executor=executor, progress=False, runs=runs)
            wall = time.perf_counter() - t0
            results[executor] = wall
            print(f"{executor:>6}: {out.points} points x {out.runs} runs in {wall:.1f}s = "
                  f"{out.points / wall:.1f} points/s ({out.errors} error rows)")
        print(f"speed-up on {os.cpu_count()} cores: {results['serial'] / results['local']:.2f}x")


if __name__ == "__main__":
    main()
