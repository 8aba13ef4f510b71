"""How many worker processes this machine can carry: the cores this process may use and the memory available.

One function, ``cap_workers``, serves every command that starts a process pool (sweep, tune, ingest): more
processes than cores only add memory and switching (60 workers on 2 cores took 11 GB and ran 4x slower), and more
than the free memory holds end in swapping or the OOM killer.
"""

from __future__ import annotations

import os
from pathlib import Path

from replay.errors import ReplayError

WORKER_BYTES = 200 * 2**20  # one pool worker with the package, numpy and the compiled kernels loaded (~85 MB
# measured on the sample) plus its share of the run arrays and results in flight: a conservative default
CGROUP = Path("/sys/fs/cgroup")


def usable_cores() -> int:
    """Cores this process may run on: its CPU affinity, lowered by a cgroup CPU quota (containers)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    quota = _read(CGROUP / "cpu.max").split()
    if len(quota) == 2 and quota[0] != "max":
        try:
            cores = min(cores, max(1, -(-int(quota[0]) // int(quota[1]))))
        except (ValueError, ZeroDivisionError):
            pass
    return max(1, cores)


def available_memory() -> int | None:
    """Bytes that new processes can use without swapping (psutil, else /proc/meminfo), lowered by a cgroup memory
    limit; None when unknown."""
    try:
        import psutil

        free: int | None = int(psutil.virtual_memory().available)
    except ImportError:
        free = _meminfo_available()
    limit, used = _read(CGROUP / "memory.max"), _read(CGROUP / "memory.current")
    if limit.isdigit() and used.isdigit():
        room = max(0, int(limit) - int(used))
        free = room if free is None else min(free, room)
    return free


def cap_workers(requested: int, per_worker: int = WORKER_BYTES, option: str = "--workers") -> tuple[int, str | None]:
    """(processes to start, a one-line note when ``requested`` was lowered or None): ``requested`` 0 means as many
    as the machine carries; the cap is the usable cores and the available memory / ``per_worker`` bytes."""
    check_workers(requested, option)
    cores = usable_cores()
    memory = available_memory()
    by_memory = cores if memory is None else max(1, memory // max(1, per_worker))
    limit = min(cores, by_memory)
    n = min(requested, limit) if requested else limit
    if (requested and requested <= n) or (not requested and by_memory >= cores):
        return n, None
    why = f"{cores} usable core{'s' if cores > 1 else ''}"
    if memory is not None and by_memory < cores:  # memory, not the cores, set the number
        why += f", {memory / 2**30:.1f} GB memory available at about {per_worker / 2**20:,.0f} MB per worker"
    asked = f"{option} {requested}" if requested else f"{option} 0 (all {cores} cores)"
    return n, f"{asked}: using {n} worker{'s' if n > 1 else ''} ({why})"


def check_workers(requested: int, option: str = "--workers") -> int:
    """``requested`` if it is a worker count (0: as many as fit), else an error naming the option."""
    if isinstance(requested, bool) or not isinstance(requested, int) or requested < 0:
        raise ReplayError(
            f"{option} {requested}: give 0 (as many as the cores and memory allow) or a positive "
            "number of worker processes"
        )
    return requested


def _meminfo_available() -> int | None:
    for line in _read(Path("/proc/meminfo")).splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""
