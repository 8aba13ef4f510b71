"""First use against warm use: `replay simulate -p POLICY` on a fresh compile cache, then again on the warm one.

Both runs are separate processes on the same copy of a store, in one invocation, so their ratio is measured under
the same load: the cold one gets a new, empty NUMBA_CACHE_DIR (nothing compiled: every loop the
command needs is compiled, the cache fit's ``recorded`` loop included), the warm ones reuse what it cached. Printed:
wall and CPU seconds (the process's user + system time, which a loaded machine inflates less than wall) of the
cold run and of the best warm run, their ratios, and the "compiling ..." lines the cold run printed.

    python benchmarks/bench_cold_warm.py --db /tmp/x.duckdb                       # seed_a, o200k
    python benchmarks/bench_cold_warm.py --db /tmp/x.duckdb --policy full -t ""   # chars/4, another policy
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """(wall s, CPU s of the child, its stderr) of one command run to completion."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode:
        sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stderr


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", type=Path, required=True, help="a store (copied; never written)")
    ap.add_argument("--policy", default="seed_a")
    ap.add_argument("-t", "--tokenizer", default="o200k", help='tokenizer for simulate ("": chars/4)')
    ap.add_argument("--warm-runs", type=int, default=2, help="warm runs (the best is kept)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "s.duckdb"
        shutil.copy(args.db, db)
        cache = Path(tmp) / "cache"
        # NUMBA_CACHE_DIR holds every compiled loop and the "compiled" markers (replay.jit); XDG_CACHE_HOME stays,
        # since tokenizer files may be cached there and this machine may not reach where they come from
        env = {**os.environ, "PYTHONPATH": str(ROOT), "NUMBA_CACHE_DIR": str(cache / "numba")}
        cmd = [sys.executable, "-m", "replay", "simulate", "-p", args.policy, "--db", str(db), "--no-store"]
        cmd += ["--format", "csv"] + (["-t", args.tokenizer] if args.tokenizer else [])
        cold_wall, cold_cpu, err = timed(cmd, env)
        warm = [timed(cmd, env)[:2] for _ in range(args.warm_runs)]
    warm_wall, warm_cpu = min(w for w, _ in warm), min(c for _, c in warm)
    print(f"simulate -p {args.policy}: cold {cold_wall:.1f} s wall, {cold_cpu:.1f} s CPU; ", end="")
    print(f"warm {warm_wall:.1f} s wall, {warm_cpu:.1f} s CPU (best of {args.warm_runs})")
    print(f"cold / warm: {cold_wall / warm_wall:.1f}x wall, {cold_cpu / warm_cpu:.1f}x CPU")
    for line in err.splitlines():
        if line.startswith(("compiling", "compiled")):
            print("  " + line)


if __name__ == "__main__":
    main()
