"""Tune benchmark: ``replay tune`` of each policy at the same window, reserve and number of points, over one store.

    python benchmarks/bench_tune.py --db STORE [--policies seed_a,clear_tool_uses] [--points 96] [--rounds 3]
        [-t o200k] [--window 128000] [--reserve 8000]
STORE: ``replay ingest ../shared/corpus`` (then ``replay tokens -t o200k``, or the first round counts). Each round
runs every policy's command line in its own process on a fresh copy of the store (a rerun in the same store would
resume and skip every point), the policies in turn; prints each wall time, the best of the rounds and the ratio of
each policy's best to the first policy's.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def tune_seconds(db: Path, policy: str, args: argparse.Namespace, work: Path) -> float:
    copy = work / f"{policy}.duckdb"
    shutil.copyfile(db, copy)
    command = [
        sys.executable,
        "-m",
        "replay",
        "tune",
        "--db",
        str(copy),
        "-p",
        policy,
        "-t",
        args.tokenizer,
        "--window",
        str(args.window),
        "--reserve",
        str(args.reserve),
        "--points",
        str(args.points),
        "--out",
        str(work / f"out-{policy}"),
    ]
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):  # 1: no point passed the gate, still a finished tune
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    copy.unlink()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--policies", default="seed_a,clear_tool_uses")
    parser.add_argument("--points", type=int, default=96)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("-t", "--tokenizer", default="o200k")
    parser.add_argument("--window", type=int, default=128_000)
    parser.add_argument("--reserve", type=int, default=8_000)
    args = parser.parse_args()
    policies = args.policies.split(",")
    times: dict[str, list[float]] = {p: [] for p in policies}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.rounds):
            for policy in policies:
                times[policy].append(tune_seconds(args.db, policy, args, Path(tmp)))
    print(f"replay tune, {args.points} points, window {args.window:,}, reserve {args.reserve:,}, -t {args.tokenizer}")
    base = min(times[policies[0]])
    for policy in policies:
        rounds = ", ".join(f"{s:.1f}" for s in times[policy])
        print(
            f"{policy:>16}: best {min(times[policy]):6.1f} s (rounds: {rounds}); "
            f"ratio to {policies[0]} {min(times[policy]) / base:.2f}x"
        )


if __name__ == "__main__":
    main()
