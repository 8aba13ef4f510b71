"""Run a sweep: every point over every run, in parallel, committed in batches, resumable.

Points are generated one at a time and streamed to the executor, so memory is bounded by the batches in flight,
not by the size of the grid; the points already done are looked up in a sorted array of 8-byte ids."""

from __future__ import annotations

import errno
import itertools
import shutil
import sys
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np

from replay.errors import ReplayError
from replay.sweeps import results
from replay.sweeps.adapter import effective_config
from replay.sweeps.executors import Context, get_executor
from replay.sweeps.spec import SweepSpec, point_id

Note = Callable[[str], None]


@dataclass(frozen=True)
class SweepOutcome:
    sweep_id: str
    points: int
    runs: int
    skipped: int   # points already committed by an earlier session
    computed: int  # points computed by this session
    errors: int    # rows with an error
    parquet: Path | None


def load_sweep_runs(con: duckdb.DuckDBPyConnection, spec: SweepSpec) -> list:
    from replay.simulator.load import load_runs

    runs = load_runs(con, spec.tokenizer, spec.runs)
    if not runs:
        raise ReplayError(f"no runs match runs = {spec.runs!r} in this store; see `replay runs`")
    return runs


def validate_points(spec: SweepSpec) -> None:
    """Fail before any work when a point names an unknown parameter or breaks a bound: every point while there
    are few; past that, one per shape of value types (a big grid's shapes come from its lists, not its points)."""
    few = spec.n_points <= CHECK_ALL
    points = spec.iter_points() if few or spec.mode != "grid" else _grid_shapes(spec)
    seen: set[tuple | str] = set()
    for p in points:
        key = point_id(p) if few else tuple(sorted((k, type(v).__name__) for k, v in p.items()))
        if key in seen:
            continue
        seen.add(key)
        try:
            effective_config(spec.policy, p, spec.cache, spec.pricing())
        except ReplayError as exc:
            raise ReplayError(f"sweep point {p}: {exc}") from None


CHECK_ALL = 5_000  # sweeps up to this many points have every point validated before any work


def _grid_shapes(spec: SweepSpec) -> Iterator[dict]:
    """One point of the grid per combination of value types: each list's first value of each type."""
    names = sorted(spec.grid)
    firsts = [list({type(v): v for v in reversed(spec.grid[n])}.values()) for n in names]
    for combo in itertools.product(*firsts):
        yield {**spec.fixed, **dict(zip(names, combo, strict=True))}


def sweep_workers(workers: int, runs: list, note: Note | None = None) -> int:
    """``workers`` (0: as many as fit) capped by the cores and by the memory a worker needs: the package and
    kernels, plus two copies of the run arrays (the runs and their packed form); ``note`` hears why when lowered."""
    from replay.resources import WORKER_BYTES, cap_workers

    arrays = sum(v.nbytes for r in runs for v in vars(r).values() if isinstance(v, np.ndarray))
    n, why = cap_workers(workers, WORKER_BYTES + 2 * arrays)
    if why:
        (note or print_note)(why)
    return n


class DonePoints:
    """The points of a sweep with a committed row for every run, as a sorted array of their 64-bit ids (8 bytes a
    point, not a set of strings); partial points are deleted so that their batch inserts again."""

    def __init__(self, con: duckdb.DuckDBPyConnection, sweep_id: str, n_runs: int) -> None:
        con.execute("""DELETE FROM sweep_results WHERE sweep_id = ? AND point_id IN (SELECT point_id FROM sweep_results
                       WHERE sweep_id = ? GROUP BY point_id HAVING count(*) < ?)""", [sweep_id, sweep_id, n_runs])
        ids = con.execute("""SELECT ('0x' || point_id)::UBIGINT AS id FROM sweep_results WHERE sweep_id = ?
                             GROUP BY point_id ORDER BY id""", [sweep_id]).fetchnumpy()["id"]
        self.ids = np.asarray(ids, dtype=np.uint64)

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, pid: str) -> bool:
        if not len(self.ids):
            return False
        key = np.uint64(int(pid, 16))
        at = int(np.searchsorted(self.ids, key))
        return at < len(self.ids) and self.ids[at] == key


def run_sweep(con: duckdb.DuckDBPyConnection, spec: SweepSpec, executor: str = "local", workers: int = 0,
              out_dir: Path | None = None, progress: bool = True,
              on_commit: Callable[[int, int], None] | None = None, runs: list | None = None,
              note: Note | None = None) -> SweepOutcome:
    """Compute every missing point of ``spec``; results land in ``sweep_results`` (and Parquet in out_dir).
    ``note`` hears one line when ``workers`` is lowered to what the machine carries (default: stderr)."""
    results.ensure_tables(con)
    runs = runs if runs is not None else load_sweep_runs(con, spec)
    if executor != "ray":  # a Ray cluster has its own cores and memory
        workers = sweep_workers(workers, runs, note)
    total = spec.n_points
    validate_points(spec)
    if not _compiled(spec.policy):
        (note or print_note)(f"policy {spec.policy} is written in Python: every point steps it request by request, "
                             "far slower than the compiled built-in policies")
    sid = spec.sweep_id
    results.register_sweep(con, sid, spec.name, spec.policy, spec.__dict__, total, len(runs))
    done = DonePoints(con, sid, len(runs))
    seen = _Count()
    tasks = ((pid, p) for p in seen.each(spec.iter_points()) if (pid := point_id(p)) not in done)
    ctx = Context(sid, spec.policy, spec.cache, uuid.uuid4().hex[:12], tuple(runs), spec.pricing())
    computed = errors = 0
    batch: list = []
    columns: set[str] = set()
    bar = _bar(progress, total, len(done))
    try:
        for computed, (_, rows) in enumerate(get_executor(executor)(ctx, tasks, workers), start=1):
            batch.append(rows)
            errors += results.error_count(rows)
            bar.advance()
            if len(batch) == spec.batch:
                _commit(con, batch, columns, len(done) + computed, total, on_commit)
        _commit(con, batch, columns, len(done) + computed, total, on_commit)
    finally:
        bar.stop()
    if spec.mode == "random" and seen.n != total:  # draws that repeated a point were dropped: record the count
        results.register_sweep(con, sid, spec.name, spec.policy, spec.__dict__, seen.n, len(runs))
    results.finish(con, sid)
    parquet = _export(con, sid, out_dir / f"sweep-{sid}.parquet") if out_dir else None
    return SweepOutcome(sid, seen.n, len(runs), seen.n - computed, computed, errors, parquet)


FULL_BELOW = 1 << 20  # a write that fails with less free space than this failed for want of space


def _export(con: duckdb.DuckDBPyConnection, sweep_id: str, path: Path) -> Path:
    """The sweep's Parquet file; a write that fails on a full disk (polars reports it as a damaged file) is an
    ENOSPC error naming the file, and the partial file is removed."""
    try:
        return results.export_parquet(con, sweep_id, path)
    except Exception as exc:
        path.unlink(missing_ok=True)
        if path.parent.is_dir() and shutil.disk_usage(path.parent).free < FULL_BELOW:
            raise OSError(errno.ENOSPC, "No space left on device", str(path)) from exc
        raise


def _compiled(policy: str) -> bool:
    """True for a policy the compiled request loop runs (the built-ins), False for one written in Python."""
    from replay.policies import CompiledPolicy, policy_class

    return issubclass(policy_class(policy), CompiledPolicy)


def _commit(con: duckdb.DuckDBPyConnection, batch: list, columns: set[str], done: int, total: int,
            on_commit: Callable[[int, int], None] | None) -> None:
    """Store a batch of whole points in one transaction, then empty it."""
    if not batch:
        return
    results.commit_batch(con, batch, columns)
    batch.clear()
    if on_commit:
        on_commit(done, total)


class _Count:
    """Counts the items of a stream as they pass."""

    def __init__(self) -> None:
        self.n = 0

    def each(self, items: Iterable) -> Iterator:
        for item in items:
            self.n += 1
            yield item


class _bar:
    """replay.progress.bar with a count and ETA, or nothing."""

    def __init__(self, enabled: bool, total: int, completed: int) -> None:
        self.progress = None
        if enabled:
            from replay.progress import bar

            self.progress = bar(count=True)
            self.task = self.progress.add_task("sweep", total=total, completed=completed)
            self.progress.start()

    def advance(self) -> None:
        if self.progress:
            self.progress.advance(self.task)

    def stop(self) -> None:
        if self.progress:
            self.progress.stop()


_noted: set[str] = set()


def print_note(line: str) -> None:
    """A note on stderr, once per process (tune runs two sweeps with the same --workers)."""
    if line not in _noted:
        _noted.add(line)
        print(line, file=sys.stderr, flush=True)


def print_commit(done: int, total: int) -> None:
    print(f"committed {done}/{total} points", file=sys.stderr, flush=True)
