"""Peak RSS of the sweep driver against the number of result rows it writes (issue 23: flat from 1 M to 10 M rows).

Each size runs `replay sweep` in a fresh process on a copy of a store, over every run in it, with a grid of enough
points for that many rows (points x runs). The first point is computed by the policy; the others reuse its rows
under their own point ids (the executor is replaced in that process), so the writing side, which is what grows
with the rows, runs as it does in a real sweep: the batched commits to ``sweep_results``, the Parquet export and
the CLI's summary over every row. Printed per size: rows, the driver's peak RSS once every row is committed, its
peak over the whole command (export and summary included), the wall time, and the ratio of the peaks to the
smallest size's, measured in one run. The loops the sweep runs are compiled before any size is measured.

    python benchmarks/bench_sweep_writer.py --db /tmp/x.duckdb                  # 1 M and 10 M rows
    python benchmarks/bench_sweep_writer.py --db /tmp/x.duckdb --rows 200000 2000000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from grids import SEED_A_SWEEP  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def peak_kb() -> int:
    """This process's peak RSS so far (VmHWM), kB."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))


def child(db: str, grid: str, out: str) -> None:
    """In the measured process: the sweep CLI with an executor that computes the first point and copies its rows to
    the others; prints the peaks as JSON on stderr's last line."""
    import replay.sweeps.runner as runner
    from replay.cli import app
    from replay.sweeps import results
    from replay.sweeps.executors import Executor, point_rows

    class Copying(Executor):
        def map(self, ctx, tasks):
            first = None
            for pid, params in tasks:
                if first is None:
                    first = point_rows(ctx, (pid, params))[1]
                    assert isinstance(first, dict), "the policy's fast path gives column dicts"
                n = len(first["run_id"])
                own = {"point_id": pid, **{f"param_{k}": v for k, v in params.items()}}
                yield pid, {**first, **{k: [v] * n for k, v in own.items()}}

    runner.get_executor = lambda name, workers=0: Copying(workers)
    seen = {}
    finish = results.finish

    def finished(con, sweep_id):
        seen["written_kb"] = peak_kb()
        finish(con, sweep_id)

    runner.results.finish = finished
    try:
        app(["sweep", grid, "--db", db, "--executor", "serial", "--out", out, "--format", "csv"], standalone_mode=False)
    finally:
        seen["peak_kb"] = peak_kb()
        sys.stderr.write("\n" + json.dumps(seen) + "\n")


def measure(store: Path, rows: int, n_runs: int, tmp: Path) -> dict:
    """One size in a fresh process: rows asked for, rows written, peaks (MB) and wall time."""
    points = max(1, round(rows / n_runs))
    work = Path(tempfile.mkdtemp(dir=tmp))
    try:
        db = work / "s.duckdb"
        shutil.copy(store, db)
        grid = work / "grid.toml"
        grid.write_text(SEED_A_SWEEP.format(values=[40_000 + i for i in range(points)]))
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, __file__, "--child", str(db), str(grid), str(work / "out")],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        wall = time.perf_counter() - t0
        if proc.returncode:
            sys.exit(f"sweep of {rows:,} rows failed ({proc.returncode}): {proc.stderr[-2000:]}")
        seen = json.loads(proc.stderr.strip().splitlines()[-1])
        return {
            "rows": points * n_runs,
            "written_mb": seen["written_kb"] / 1024,
            "peak_mb": seen["peak_kb"] / 1024,
            "wall": wall,
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(*sys.argv[2:5])
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", type=Path, required=True, help="a store with runs (copied; never written)")
    ap.add_argument("--rows", type=int, nargs="+", default=[1_000_000, 10_000_000], help="result rows, ascending")
    ap.add_argument("--tmp", type=Path, default=Path(tempfile.gettempdir()), help="folder for the copies")
    args = ap.parse_args()
    import duckdb

    with duckdb.connect(str(args.db), read_only=True) as con:
        n_runs = con.execute("SELECT count(*) FROM runs WHERE n_requests > 0").fetchone()[0]
    # compiled first, in a process of its own: a size measured on a cold compile cache counts numba's compile
    # (seed_a: RSS 210 MB after loading it warm, 366 MB after compiling it) in its peak, not the rows
    warm = [sys.executable, "-m", "replay", "warm", "seed_a", "recorded"]
    subprocess.run(warm, env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    found = [measure(args.db, n, n_runs, args.tmp) for n in args.rows]
    print("| rows | peak RSS when written (MB) | peak RSS (MB) | x smallest (written / peak) | wall (s) |")
    print("|---|---|---|---|---|")
    for r in found:
        ratio = f"{r['written_mb'] / found[0]['written_mb']:.2f} / {r['peak_mb'] / found[0]['peak_mb']:.2f}"
        print(f"| {r['rows']:,} | {r['written_mb']:,.0f} | {r['peak_mb']:,.0f} | {ratio} | {r['wall']:.0f} |")


if __name__ == "__main__":
    main()
