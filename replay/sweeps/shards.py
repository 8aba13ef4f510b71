"""Shards of a sweep's runs: consecutive runs (by run id) of at most ``shard_items`` items together, loaded from
the store one shard at a time, so that the driver and every worker hold one shard's arrays, never the store's.

A run larger than ``shard_items`` is a shard of its own (a run is never split). The prompt models are fitted in
shards too (the fit reads one shard's items at a time), over every run of the store as ``load_runs`` fits them (the
harness profiles a run without usage falls back to are medians over all fits), so each run loads exactly as
``load_runs`` loads it."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np

from replay.errors import ReplayError
from replay.run_arrays import RunArrays

SHARD_ITEMS = 100_000  # items (messages, tool calls and results) per shard: a pool worker held ~0.7 KB per item
# (its runs and their packed form: 220 MB at 116,799 items vs 136 MB for the bare forkserver), so ~70 MB; the
# 115-run corpus (9,311 items) is one shard, the 1,000-run synthetic store (116,799) two
ARRAY_BYTES_PER_ITEM = 128  # a loaded run's numpy arrays per item (~90 B measured), for sizing workers up front


@dataclass(frozen=True)
class Shard:
    """Runs swept together; ``runs`` when the caller already holds them (else they are loaded from the store)."""

    run_ids: tuple[str, ...]
    items: int
    runs: tuple[RunArrays, ...] | None = None

    @property
    def array_bytes(self) -> int:
        """The run arrays' size: measured when loaded, else estimated from the items."""
        if self.runs is None:
            return self.items * ARRAY_BYTES_PER_ITEM
        return sum(v.nbytes for r in self.runs for v in vars(r).values() if isinstance(v, np.ndarray))


def in_memory(runs: list[RunArrays] | tuple[RunArrays, ...]) -> list[Shard]:
    """Runs the caller loaded: one shard (``tune``, reports and analyses sweep the same runs several times)."""
    return [Shard(tuple(r.run_id for r in runs), sum(r.n_items for r in runs), tuple(runs))]


def plan(con: duckdb.DuckDBPyConnection, pattern: str | None, shard_items: int) -> list[Shard]:
    """The runs matching ``pattern``, in run id order, cut into shards of at most ``shard_items`` items."""
    from replay.simulator.load import run_ids

    if shard_items < 1:
        raise ReplayError(f"--shard-items {shard_items}: give a positive number of items per shard")
    ids = run_ids(con, pattern)
    if not ids:
        raise ReplayError(f"no runs match runs = {pattern!r} in this store; see `replay runs`")
    sizes = dict(con.execute("SELECT run_id, count(*) FROM items GROUP BY run_id").fetchall())
    shards: list[Shard] = []
    current: list[str] = []
    items = 0
    for rid in ids:
        n = int(sizes.get(rid, 0))
        if current and items + n > shard_items:
            shards.append(Shard(tuple(current), items))
            current, items = [], 0
        current.append(rid)
        items += n
    shards.append(Shard(tuple(current), items))
    return shards


class Loader:
    """Loads a shard's runs from the store. The prompt models are fitted on the first load, and only then (a resumed
    sweep with nothing left to compute loads nothing)."""

    def __init__(
        self, con: duckdb.DuckDBPyConnection, tokenizer_id: str | None, shards: list[Shard], shard_items: int
    ) -> None:
        self.con, self.tokenizer_id, self.shards, self.shard_items = con, tokenizer_id, shards, shard_items
        self._models: dict | None = None

    def runs(self, shard: Shard) -> tuple[RunArrays, ...]:
        if shard.runs is not None:
            return shard.runs
        from replay.simulator.load import load_many

        return tuple(load_many(self.con, list(shard.run_ids), self.tokenizer_id, self.models()))

    def models(self) -> dict:
        """Every swept run's prompt model, from fits of every run of the store, a shard of them at a time, at the
        store's prior scales."""
        if self._models is None:
            import polars as pl

            from replay.simulator.load import require_counts
            from replay.simulator.prompt import DEFAULT_OVERHEAD, prompt_models
            from replay.tokens.calibrate import fit_usage, prior_scales

            ids = [rid for s in self.shards for rid in s.run_ids]
            require_counts(self.con, self.tokenizer_id, ids)
            per_run: list[dict] = []
            fits: dict = {}
            priors = prior_scales(self.con, self.tokenizer_id, DEFAULT_OVERHEAD)  # once, for every shard
            for s in plan(self.con, None, self.shard_items):
                _, rows, fitted = fit_usage(self.con, self.tokenizer_id, DEFAULT_OVERHEAD, list(s.run_ids), priors)
                per_run += rows.to_dicts()
                fits |= fitted
            self._models = prompt_models(self.con, self.tokenizer_id, ids, fitted=(None, pl.DataFrame(per_run), fits))
        return self._models
