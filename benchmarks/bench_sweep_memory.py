"""Peak memory of a sweep: `replay sweep` on a copy of a store, its process tree sampled from /proc.

    python benchmarks/bench_sweep_memory.py --db /tmp/ss.duckdb [--points 20] [--workers 2] [-- --shard-items N]
    python benchmarks/bench_sweep_memory.py --db /tmp/ss.duckdb --code /tmp/ref   # another checkout's code
Prints the peak RSS (VmHWM) of the driver and of every process under it (pool workers, the forkserver, Ray's
processes), the largest sum of their RSS at one sample, and the wall time. Arguments after ``--`` go to
`replay sweep`. The sweep's store is a copy, deleted afterwards; big files stay under the --tmp folder.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from grids import SEED_A_SWEEP  # noqa: E402


def tree(root: int) -> list[int]:
    """``root`` and every live process under it."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                pass
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += [c for c, p in parents.items() if p == pid]
    return out


def status(pid: int) -> tuple[str, int, int]:
    """(name, RSS kB, peak RSS kB) of a process, or ("", 0, 0) once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().replace(b"\0", b" ").decode(errors="replace")[:70]
    except OSError:
        return "", 0, 0
    return cmd, int(fields.get("VmRSS", "0 kB").split()[0]), int(fields.get("VmHWM", "0 kB").split()[0])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--db", type=Path, required=True)
    ap.add_argument("--points", type=int, default=20)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--executor", default="local")
    ap.add_argument("--code", type=Path, default=Path(__file__).resolve().parents[1], help="checkout to run")
    ap.add_argument("--tmp", type=Path, default=Path(tempfile.gettempdir()))
    ap.add_argument("rest", nargs="*", help="more `replay sweep` arguments (after --)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        db = Path(tmp) / "s.duckdb"
        shutil.copy(args.db, db)
        grid = Path(tmp) / "grid.toml"
        grid.write_text(SEED_A_SWEEP.format(values=[40_000 + 2_000 * i for i in range(args.points)]))
        cmd = [
            sys.executable,
            "-m",
            "replay",
            "sweep",
            str(grid),
            "--db",
            str(db),
            "--executor",
            args.executor,
            "--workers",
            str(args.workers),
            "--out",
            str(Path(tmp) / "out"),
            "--format",
            "csv",
            *args.rest,
        ]
        env = {**os.environ, "PYTHONPATH": str(args.code)}
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            cmd, cwd=args.code, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )
        peaks: dict[int, tuple[str, int]] = {}
        top_sum = 0
        while proc.poll() is None:
            now = 0
            for pid in tree(proc.pid):
                name, rss, hwm = status(pid)
                if name:
                    now += rss
                    peaks[pid] = (name, max(hwm, peaks.get(pid, ("", 0))[1]))
            top_sum = max(top_sum, now)
            time.sleep(0.2)
        wall = time.perf_counter() - t0
        err = proc.stderr.read() if proc.stderr else ""
        if proc.returncode:
            sys.exit(f"sweep failed ({proc.returncode}): {err[-2000:]}")
    print(
        f"code {args.code}, {args.executor} x {args.workers}, {args.points} points, {' '.join(args.rest)}: "
        f"{wall:.0f}s; peak RSS sum {top_sum / 1024:,.0f} MB"
    )
    for pid, (name, hwm) in sorted(peaks.items()):
        role = "driver" if pid == proc.pid else "child"
        print(f"  {role:>6} {pid:>7} peak {hwm / 1024:7,.0f} MB  {name}")


if __name__ == "__main__":
    main()
