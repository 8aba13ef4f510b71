"""What ``--behaviour`` adds to ``replay simulate`` on the corpus (issue 24: at most 1.5x).

Runs the command as a user would (a child process each, the store copied so nothing is written to the original),
alternating plain and ``--behaviour --cap`` runs, and reports the ratio of CPU time (user + system of the child: less
sensitive to a shared machine's load than wall time) and of wall time.

    python benchmarks/bench_behaviour.py --db /work/base.duckdb [--policy masking --set keep_last=10] [--reps 2]
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

LIMIT = 1.5


def timed(args: list[str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one child run of ``python -m replay ARGS``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "replay", *args], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--policy", default="masking")
    ap.add_argument("--set", dest="sets", action="append", default=["keep_last=10"])
    ap.add_argument("--tokenizer", default="o200k")
    ap.add_argument("--cap", default="250")
    ap.add_argument("--reps", type=int, default=2)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "s.duckdb"
        shutil.copy(a.db, db)
        base = ["simulate", "-p", a.policy, *(x for s in a.sets for x in ("--set", s))]
        base += ["-t", a.tokenizer, "--db", str(db), "--no-store", "--format", "csv"]
        timed(base)  # warm: compile caches, tokenizer counts already in the copied store
        plain, behaviour = [], []
        for _ in range(a.reps):
            plain.append(timed(base))
            behaviour.append(timed([*base, "--behaviour", "--cap", a.cap]))
    cpu = sum(b[0] for b in behaviour) / sum(p[0] for p in plain)
    wall = sum(b[1] for b in behaviour) / sum(p[1] for p in plain)
    print(f"policy {a.policy} {' '.join(a.sets)}, {a.reps} reps, load {os.getloadavg()[0]:.1f}")
    print(f"plain: cpu {[round(p[0], 1) for p in plain]} s, wall {[round(p[1], 1) for p in plain]} s")
    cpus, walls = [round(b[0], 1) for b in behaviour], [round(b[1], 1) for b in behaviour]
    print(f"--behaviour --cap {a.cap}: cpu {cpus} s, wall {walls} s")
    print(f"ratio: cpu {cpu:.2f}x, wall {wall:.2f}x (limit {LIMIT}x): {'OK' if cpu <= LIMIT else 'OVER'}")


if __name__ == "__main__":
    main()
