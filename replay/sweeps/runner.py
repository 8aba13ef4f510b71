"""Run a sweep: every point over every run, in parallel, committed in batches, resumable.

Points are generated one at a time and streamed to the executor, so memory is bounded by the batches in flight,
not by the size of the grid; the points already done are looked up in a sorted array of 8-byte ids."""

from __future__ import annotations

import errno
import itertools
import shutil
import sys
import uuid
from array import array
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np

from replay.errors import ReplayError
from replay.store.memory import bounded_db_memory
from replay.sweeps import results, shards
from replay.sweeps.adapter import effective_config
from replay.sweeps.executors import Context, get_executor, runs_compiled
from replay.sweeps.shards import SHARD_ITEMS
from replay.sweeps.spec import SweepSpec, point_id
from replay.untrusted import for_terminal

Note = Callable[[str], None]
DB_MEMORY_MB = 128  # DuckDB's memory limit while a sweep writes and sums its results. DuckDB keeps the blocks it
# wrote or read until its limit: at the default (80% of RAM) 2.9 GB in the driver at 10 M result rows; at 1 GiB the
# driver still grew with the rows (benchmarks/bench_sweep_writer.py)
EXPORT_MEMORY_MB = 1024  # the Parquet export sorts every row (out of core under this; 128 MiB is too little for it)


@dataclass(frozen=True)
class SweepOutcome:
    sweep_id: str
    points: int
    runs: int
    skipped: int  # points already committed by an earlier session
    computed: int  # points computed by this session
    errors: int  # rows with an error
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


def sweep_workers(workers: int, shard_bytes: int, note: Note | None = None) -> int:
    """``workers`` (0: as many as fit) capped by the cores and by the memory a worker needs: the package and
    kernels, plus two copies of the largest shard's run arrays (``shard_bytes``; the runs and their packed form);
    ``note`` hears why when lowered."""
    from replay.worker_limits import WORKER_BYTES, cap_workers

    n, why = cap_workers(workers, WORKER_BYTES + 2 * shard_bytes)
    if why:
        (note or print_note)(why)
    return n


class DonePoints:
    """The points of a sweep with a committed row for every run of one shard, as a sorted array of their 64-bit ids
    (8 bytes a point, not a set of strings); a point with rows for only some of the shard's runs is deleted from
    the shard so that it inserts again (a batch holds whole (point, shard) pairs, so only a shard whose runs changed
    since, when the store gained runs or the shard size changed, leaves such points)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, sweep_id: str, run_ids: tuple[str, ...]) -> None:
        runs = list(run_ids)
        mine = "sweep_id = ? AND run_id IN (SELECT unnest(?::VARCHAR[]))"  # this sweep's rows of the shard's runs
        con.execute(
            f"""DELETE FROM sweep_results WHERE {mine} AND point_id IN (
                        SELECT point_id FROM sweep_results WHERE {mine} GROUP BY point_id HAVING count(*) < ?)""",
            [sweep_id, runs, sweep_id, runs, len(runs)],
        )
        ids = con.execute(
            f"""SELECT ('0x' || point_id)::UBIGINT AS id FROM sweep_results WHERE {mine}
                              GROUP BY point_id ORDER BY id""",
            [sweep_id, runs],
        ).fetchnumpy()["id"]
        self.ids = np.asarray(ids, dtype=np.uint64)

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, pid: str) -> bool:
        if not len(self.ids):
            return False
        key = np.uint64(int(pid, 16))
        at = int(np.searchsorted(self.ids, key))
        return at < len(self.ids) and self.ids[at] == key


def run_sweep(
    con: duckdb.DuckDBPyConnection,
    spec: SweepSpec,
    executor: str = "local",
    workers: int = 0,
    out_dir: Path | None = None,
    progress: bool = True,
    on_commit: Callable[[int, int, int], None] | None = None,
    runs: list | None = None,
    note: Note | None = None,
    shard_items: int | None = None,
) -> SweepOutcome:
    """Compute every missing point of ``spec``; results land in ``sweep_results`` (and Parquet in out_dir).

    The runs are loaded from the store a shard (``shard_items`` items) at a time, every point runs over a shard
    and its rows are committed before the next shard is loaded (default SHARD_ITEMS); ``runs``: runs already loaded,
    swept as one shard.
    ``on_commit(done, total, shards)`` hears the (point, shard) pairs committed; ``note`` hears one line when
    ``workers`` is lowered to what the machine carries (default: stderr)."""
    shard_items = SHARD_ITEMS if shard_items is None else shard_items
    plan = shards.in_memory(runs) if runs is not None else shards.plan(con, spec.runs, shard_items)
    if not plan[0].run_ids:
        raise ReplayError(f"no runs match runs = {spec.runs!r} in this store; see `replay runs`")
    if executor != "ray":  # a Ray cluster has its own cores and memory
        workers = sweep_workers(workers, max(s.array_bytes for s in plan), note)
    n_runs = sum(len(s.run_ids) for s in plan)
    validate_points(spec)
    if not runs_compiled(spec.policy):
        (note or print_note)(
            f"policy {spec.policy} is written in Python: every point calls back into Python for "
            "each request's decision, far slower than the compiled built-in policies"
        )
    sid = spec.sweep_id
    results.register_sweep(con, sid, spec.name, spec.policy, spec.__dict__, spec.n_points, n_runs)
    loader = shards.Loader(con, spec.tokenizer, plan, shard_items)
    sweep = _Sweep(con, spec, len(plan), on_commit)
    bar = _bar(progress, spec.n_points * len(plan))
    with bounded_db_memory(con, DB_MEMORY_MB):
        try:
            with get_executor(executor, workers) as ex:
                for k, shard in enumerate(plan):
                    sweep.shard(ex, loader, shard, k, bar)
        finally:
            bar.stop()
        if spec.mode == "random" and sweep.points != spec.n_points:  # draws that repeated a point were dropped
            results.register_sweep(con, sid, spec.name, spec.policy, spec.__dict__, sweep.points, n_runs)
        results.finish(con, sid)
    with bounded_db_memory(con, EXPORT_MEMORY_MB):
        parquet = _export(con, sid, out_dir / f"sweep-{sid}.parquet") if out_dir else None
    computed = len(sweep.computed)
    return SweepOutcome(sid, sweep.points, n_runs, sweep.points - computed, computed, sweep.errors, parquet)


class _Sweep:
    """One session of a sweep, a shard at a time: the points still missing on the shard run on the executor and
    are committed ``spec.batch`` (point, shard) pairs per transaction."""

    def __init__(
        self,
        con: duckdb.DuckDBPyConnection,
        spec: SweepSpec,
        n_shards: int,
        on_commit: Callable[[int, int, int], None] | None,
    ) -> None:
        self.con, self.spec, self.n_shards, self.on_commit = con, spec, n_shards, on_commit
        self.session = uuid.uuid4().hex[:12]
        self.points = 0  # points of the sweep (random draws that repeat a point are dropped)
        self.units = 0  # (point, shard) pairs committed, by this session or an earlier one
        self.errors = 0
        self.computed = np.zeros(0, np.uint64)  # ids of the points this session computed on any shard
        self.columns: set[str] = set()

    def shard(self, ex, loader: shards.Loader, shard: shards.Shard, k: int, bar: _bar) -> None:
        spec = self.spec
        done = DonePoints(self.con, spec.sweep_id, shard.run_ids)
        seen = _Count()
        tasks = ((pid, p) for p in seen.each(spec.iter_points()) if (pid := point_id(p)) not in done)
        bar.shard(k, self.n_shards, len(done))
        self.units += len(done)
        first = next(tasks, None)
        if first is not None:  # load the shard only when a point is missing on it
            computed = array("Q")
            batch: list = []
            # no name holds the context here: the executor keeps the shard (or ships it and lets it go)
            ctx = Context(spec.sweep_id, spec.policy, spec.cache, self.session, loader.runs(shard), spec.pricing())
            stream = ex.map(ctx, itertools.chain([first], tasks))
            del ctx
            for pid, rows in stream:
                computed.append(int(pid, 16))
                batch.append(rows)
                self.errors += results.error_count(rows)
                bar.advance()
                if len(batch) == spec.batch:
                    self._commit(batch)
            self._commit(batch)
            self.computed = np.union1d(self.computed, np.frombuffer(computed, np.uint64))
        self.points = max(self.points, seen.n)

    def _commit(self, batch: list) -> None:
        """Store a batch of whole (point, shard) pairs in one transaction, then empty it."""
        if not batch:
            return
        results.commit_batch(self.con, batch, self.columns)
        self.units += len(batch)
        batch.clear()
        if self.on_commit:
            self.on_commit(self.units, self.spec.n_points * self.n_shards, self.n_shards)


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


class _Count:
    """Counts the items of a stream as they pass."""

    def __init__(self) -> None:
        self.n = 0

    def each(self, items: Iterable) -> Iterator:
        for item in items:
            self.n += 1
            yield item


class _bar:
    """replay.progress.bar with a count of (point, shard) pairs and an ETA, or nothing."""

    def __init__(self, enabled: bool, total: int) -> None:
        self.progress = None
        if enabled:
            from replay.progress import bar

            self.progress = bar(count=True)
            self.task = self.progress.add_task("sweep", total=total)
            self.progress.start()

    def shard(self, k: int, n: int, done: int) -> None:
        """Shard ``k`` of ``n`` starts with ``done`` points committed earlier."""
        if self.progress:
            self.progress.update(self.task, advance=done, description=f"sweep shard {k + 1}/{n}" if n > 1 else "sweep")

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
        print(for_terminal(line), file=sys.stderr, flush=True)


def print_commit(done: int, total: int, shards: int = 1) -> None:
    unit = "points" if shards == 1 else f"(point, shard) pairs ({total // shards} points x {shards} shards of runs)"
    print(f"committed {done}/{total} {unit}", file=sys.stderr, flush=True)
