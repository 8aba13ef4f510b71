"""Run a sweep: every point over every run, in parallel, committed in batches, resumable."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb

from replay.errors import ReplayError
from replay.sweeps import results
from replay.sweeps.adapter import effective_config
from replay.sweeps.executors import Context, get_executor
from replay.sweeps.spec import SweepSpec, point_id


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


def validate_points(spec: SweepSpec, points: list[dict]) -> None:
    """Fail before any work when a point names an unknown parameter or breaks a bound."""
    seen: set[tuple] = set()
    for p in points:
        # every point while there are few; past that one per shape of types (the grid's values are checked by type)
        key = tuple(sorted((k, type(v).__name__) for k, v in p.items())) if len(points) > CHECK_ALL else point_id(p)
        if key in seen:
            continue
        seen.add(key)
        try:
            effective_config(spec.policy, p, spec.cache, spec.pricing())
        except ReplayError as exc:
            raise ReplayError(f"sweep point {p}: {exc}") from None


CHECK_ALL = 5_000  # sweeps up to this many points have every point validated before any work


def capped_workers(workers: int) -> int:
    """``workers`` (0: every core), capped at the cores: more processes than cores only add memory and switching."""
    cores = os.cpu_count() or 1
    if workers < 0:
        raise ReplayError(f"--workers {workers}: give 0 (every core) or a positive number of processes")
    if workers > cores:
        print(f"--workers {workers}: this machine has {cores} cores; using {cores}", file=sys.stderr)
    return min(workers, cores) if workers else cores


def run_sweep(con: duckdb.DuckDBPyConnection, spec: SweepSpec, executor: str = "local", workers: int = 0,
              out_dir: Path | None = None, progress: bool = True,
              on_commit: Callable[[int, int], None] | None = None, runs: list | None = None) -> SweepOutcome:
    """Compute every missing point of ``spec``; results land in ``sweep_results`` (and Parquet in out_dir)."""
    if executor != "ray":  # a Ray cluster has its own cores
        workers = capped_workers(workers)
    results.ensure_tables(con)
    runs = runs if runs is not None else load_sweep_runs(con, spec)
    points = spec.points()
    validate_points(spec, points)
    sid = spec.sweep_id
    results.register_sweep(con, sid, spec.name, spec.policy, spec.__dict__, len(points), len(runs))
    done = results.done_points(con, sid, len(runs))
    tasks = [(pid, p) for p in points if (pid := point_id(p)) not in done]
    ctx = Context(sid, spec.policy, spec.cache, uuid.uuid4().hex[:12], tuple(runs), spec.pricing())
    computed = errors = 0
    batch: list = []
    columns: set[str] = set()
    bar = _bar(progress, len(points), len(points) - len(tasks))
    try:
        for i, (_, rows) in enumerate(get_executor(executor)(ctx, tasks, workers), start=1):
            batch.append(rows)
            errors += results.error_count(rows)
            bar.advance()
            if i % spec.batch == 0 or i == len(tasks):
                results.commit_batch(con, batch, columns)
                computed, batch = i, []
                if on_commit:
                    on_commit(len(points) - len(tasks) + i, len(points))
    finally:
        bar.stop()
    results.finish(con, sid)
    parquet = results.export_parquet(con, sid, out_dir / f"sweep-{sid}.parquet") if out_dir else None
    return SweepOutcome(sid, len(points), len(runs), len(points) - len(tasks), computed, errors, parquet)


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


def default_workers() -> int:
    return int(os.environ.get("REPLAY_WORKERS", "0")) or os.cpu_count() or 1


def print_commit(done: int, total: int) -> None:
    print(f"committed {done}/{total} points", file=sys.stderr, flush=True)
