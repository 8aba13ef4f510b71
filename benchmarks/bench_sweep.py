"""Sweep benchmark: a 1,000-point sweep of one built-in policy over the shared corpus (read in place), serially, on
the process pool and (``--executors ...,ray``) on a local Ray node, results written to the store.

    python benchmarks/bench_sweep.py [--policy seed_a] [--points 1000] [--corpus ../shared/corpus]
    python benchmarks/bench_sweep.py --policy seed_a,clear_tool_uses --executors serial,local,ray
    python benchmarks/bench_sweep.py --policy seed_a,seed_b,seed_c,clear_tool_uses,auto_compact,openhands
Prints wall time, CPU seconds (this process and every process under it: pool workers, Ray's node and workers) and
points/s for each executor, and the speed-ups over serial. Ray's node is started once, before the sweeps, with as
many CPUs as the pool has workers; its start-up time is printed on its own line. ``--from-store``: each sweep loads
its runs from the store in shards (``--shard-items``), load time included, instead of sweeping runs loaded once.
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

CORPUS = Path(os.environ.get("REPLAY_CORPUS", Path(__file__).resolve().parents[2] / "shared" / "corpus"))
TICKS = os.sysconf("SC_CLK_TCK")


def descendants_cpu(root: int) -> float:
    """CPU seconds of the live processes under ``root`` and of the children they reaped (the pool's forkserver
    reaps its workers; Ray's raylet runs its workers), read from /proc."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        times[int(entry)] = sum(int(v) for v in fields[11:15]) / TICKS  # utime, stime, cutime, cstime
    total, todo = 0.0, [root]
    while todo:
        pid = todo.pop()
        for child, parent in parents.items():
            if parent == pid:
                total += times[child]
                todo.append(child)
    return total


def cpu_seconds() -> float:
    """CPU time of this process, its reaped children and every live process under it."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime + descendants_cpu(os.getpid())


def start_ray(cpus: int) -> float:
    """Start a local Ray node with ``cpus`` CPUs (the sweeps join it); seconds it took."""
    import ray

    t0 = time.perf_counter()
    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--policy", default="seed_a", help="built-in policies, comma separated")
    ap.add_argument("--points", type=int, default=1000)
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--executors", default="serial,local", help="serial, local (process pool), ray; comma separated")
    ap.add_argument("--workers", type=int, default=0, help="pool workers and Ray CPUs (0: every core)")
    ap.add_argument("--from-store", action="store_true", help="sweeps load their runs from the store in shards")
    ap.add_argument("--shard-items", type=int, default=None, help="with --from-store: items per shard")
    args = ap.parse_args()
    executors = args.executors.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        con = open_store(Path(tmp) / "bench.duckdb")
        ingest(con, [args.corpus])
        runs = None if args.from_store else load_runs(con)
        if "ray" in executors:
            cpus = args.workers or os.cpu_count() or 1
            print(f"{'ray':>16} start: local node with {cpus} CPUs in {start_ray(cpus):.1f}s")
        for policy in args.policy.split(","):
            axes = grid_axes(policy, args.points)
            wall_of = {}
            for executor in executors:
                spec = from_dict(
                    {
                        "sweep": {"policy": policy, "name": f"bench-{policy}-{executor}", "batch": 32},
                        "fixed": {"reserve": 4_096},
                        "grid": axes,
                    }
                )
                c0, t0 = cpu_seconds(), time.perf_counter()
                shard = {"shard_items": args.shard_items} if args.shard_items else {}
                out = run_sweep(con, spec, executor=executor, workers=args.workers, progress=False, runs=runs, **shard)
                wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
                wall_of[executor] = wall
                print(
                    f"{policy:>16} {executor:>6}: {out.points} points x {out.runs} runs in {wall:.1f}s = "
                    f"{out.points / wall:.1f} points/s, {1000 * cpu / out.points:.1f} CPU ms/point "
                    f"({out.errors} error rows)",
                    flush=True,
                )
            if "serial" in wall_of:
                ups = ", ".join(f"{e} {wall_of['serial'] / w:.2f}x" for e, w in wall_of.items() if e != "serial")
                print(f"{policy:>16} speed-up over serial on {os.cpu_count()} cores: {ups}", flush=True)


if __name__ == "__main__":
    main()
