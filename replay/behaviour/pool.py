"""The pressure curve of a pool of raw runs under one policy setting: per request position, the share of the pool's
runs reaching it whose request there is pressured. It turns a task's raw length into its expected pressured
requests, for tasks the store does not hold (the paired arm, the lengths to predict)."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np

from replay.behaviour.measure import views
from replay.behaviour.pressure import pressured
from replay.errors import ReplayError
from replay.policies.base import AnyPolicy, Budget
from replay.run_arrays import RunArrays

MIN_RUNS = 3  # positions reached by fewer pool runs take the pool's tail rate


@dataclass(frozen=True)
class PressureCurve:
    """``rate[t]``: pressured share at request t (t < len(rate)); ``tail``: the rate beyond, from the pool's later
    half of positions."""

    rate: np.ndarray
    tail: float
    runs: int
    requests: int

    def expected(self, lengths: np.ndarray) -> np.ndarray:
        """Expected pressured requests of tasks of ``lengths`` requests."""
        cum = np.concatenate([[0.0], np.cumsum(self.rate)])
        lengths = np.asarray(lengths, dtype=np.int64)
        inside = np.minimum(lengths, len(self.rate))
        return cum[inside] + np.maximum(lengths - len(self.rate), 0) * self.tail


def pressure_curve(runs: list[RunArrays], policy: AnyPolicy, budget: Budget) -> PressureCurve:
    """The curve of ``runs`` under ``policy``."""
    if not runs:
        raise ReplayError("the pool (--runs) matches no stored run with requests; `replay runs` lists them")
    flags = [pressured(r, views(r, policy, budget)) for r in runs]
    longest = max(len(f) for f in flags)
    hits, reach = np.zeros(longest), np.zeros(longest)
    for f in flags:
        hits[: len(f)] += f
        reach[: len(f)] += 1
    enough = np.flatnonzero(reach >= min(MIN_RUNS, len(runs)))
    last = int(enough[-1]) + 1 if len(enough) else 1
    later = slice(last // 2, longest)
    tail = float(hits[later].sum() / max(reach[later].sum(), 1))
    return PressureCurve(hits[:last] / np.maximum(reach[:last], 1), tail, len(runs), int(reach.sum()))


def harness_of(con: duckdb.DuckDBPyConnection, ids: list[str]) -> dict[str, str | None]:
    """Per run id, the harness its log came from (the store's ``runs.harness``)."""
    rows = con.execute("SELECT run_id, harness FROM runs WHERE list_contains(?, run_id)", [ids]).fetchall()
    return dict(rows)


def pool_harness(con: duckdb.DuckDBPyConnection, runs: list[RunArrays], where: str) -> str:
    """The one harness of a pool; a pool mixing harnesses (or of no known harness) is refused."""
    found = set(harness_of(con, [r.run_id for r in runs]).values())
    if len(found) != 1 or None in found:
        shown = ", ".join(sorted(str(h) for h in found))
        raise ReplayError(
            f"{where}: the pool's runs come from harnesses {shown}; a pool is raw runs of one harness: narrow --runs"
        )
    return str(found.pop())
