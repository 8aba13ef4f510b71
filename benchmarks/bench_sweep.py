"""Sweep benchmark: a 1,000-point sweep of one built-in policy over the shared corpus (read in place), serial vs
process pool, results written to the store.

    python benchmarks/bench_sweep.py [--policy seed_a] [--points 1000] [--corpus ../shared/corpus]
    python benchmarks/bench_sweep.py --policy seed_a,seed_b,seed_c,clear_tool_uses,auto_compact,openhands
Prints wall time, CPU seconds (this process and its workers) and points/s for each executor, and the speed-up.
On a shared machine the CPU seconds per point are the steadier figure: wall time also counts waiting for a core.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

from replay.ingest import ingest
from replay.simulator.load import load_runs
from replay.store import open_store
from replay.sweeps import from_dict, run_sweep

sys.path.insert(0, str(Path(__file__).resolve().parent))
from grids import grid_axes  # noqa: E402


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (pool workers)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--policy", default="seed_a", help="built-in policies, comma separated")
    ap.add_argument("--points", type=int, default=1000)
    ap.add_argument("--corpus", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "corpus")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        con = open_store(Path(tmp) / "bench.duckdb")
        ingest(con, [args.corpus])
        runs = load_runs(con)
        for policy in args.policy.split(","):
            axes = grid_axes(policy, args.points)
            results = {}
            for executor in ("serial", "local"):
                spec = from_dict({"sweep": {"policy": policy, "name": f"bench-{policy}-{executor}", "batch": 32},
                                  "fixed": {"reserve": 4_096}, "grid": axes})
                c0, t0 = cpu_seconds(), time.perf_counter()
                out = run_sweep(con, spec, executor=executor, progress=False, runs=runs)
                wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
                results[executor] = wall
                print(f"{policy:>16} {executor:>6}: {out.points} points x {out.runs} runs in {wall:.1f}s = "
                      f"{out.points / wall:.1f} points/s, {1000 * cpu / out.points:.1f} CPU ms/point "
                      f"({out.errors} error rows)")
            print(f"{policy:>16} speed-up on {os.cpu_count()} cores: {results['serial'] / results['local']:.2f}x; "
                  f"pool {'under' if results['local'] < 30 else 'over'} 30 s")

if __name__ == "__main__":
    main()
