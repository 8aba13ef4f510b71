"""The exposure curve of a pool of raw runs under one policy setting: per request position, the share of the pool's
runs reaching it whose request there is a blind use (``replay.behaviour.pressure``), times the recurrence
(the share of uses that are blind, below). It turns a task's raw length into its expected recurring blind uses, for
tasks the store does not hold (the paired arm, the lengths to predict); the pool's summariser calls per position,
the same way, into its expected summariser calls (their tail measured from the pool's first call, where it is
applied: the summariser fires by size, never before).

Beyond the positions enough pool runs reach, a tail rate stands in. It is measured on the pool's later positions
(the same ones for every setting, so a wider window never raises it) and applied only from the first request at
which the policy hides a look in some pool run (``start``): below it the policy hides nothing (masking hides
nothing before its window fills), however short the pool's runs.

A loop needs a blind use to recur, so the expected blind uses are weighted by the chance that a use is blind, the
recurrence of a run of the task's length (its expected blind uses over its expected uses, both from the curves),
not the pool's overall share: the pool's runs are shorter than most tasks, and a use early in a run cannot be blind
under a wide window, so the overall share understates a long task's recurrence (keep_last 5 on the corpus pool:
0.19 over all its uses, 0.26 for a task of 250 requests).

The pool is a sample too: ``PoolFlags.curve`` takes a resample of its runs (``draws``), so the calibration's
replicates carry the pool's uncertainty as well as the tasks'."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np

from replay.behaviour.measure import views
from replay.behaviour.pressure import WorkingSet, working_set
from replay.errors import ReplayError
from replay.policies.base import AnyPolicy, Budget
from replay.run_arrays import RunArrays

MIN_RUNS = 3  # positions reached by fewer pool runs take the pool's tail rate
POOL_SEED = 2  # the pool resamples of the replicates (replay.behaviour.calibration)


@dataclass(frozen=True)
class PressureCurve:
    """``rate[t]``: blind-use share at request t (t < len(rate)); ``tail``: the rate at later positions, applied
    from ``start`` on; ``uses[t]`` and ``uses_tail``: the same for uses (blind or not), ``calls[t]`` and
    ``calls_tail`` for the policy's summariser calls (each applied from the first position that has any)."""

    rate: np.ndarray
    tail: float
    runs: int
    requests: int
    start: int
    uses: np.ndarray
    uses_tail: float
    calls: np.ndarray | None = None
    calls_tail: float = 0.0

    @staticmethod
    def _sum(rate: np.ndarray, tail: float, start: int, lengths: np.ndarray) -> np.ndarray:
        cum = np.concatenate([[0.0], np.cumsum(rate)])
        lengths = np.asarray(lengths, dtype=np.int64)
        return cum[np.minimum(lengths, len(rate))] + np.maximum(lengths - max(len(rate), start), 0) * tail

    @classmethod
    def _from_first(cls, rate: np.ndarray, tail: float, lengths: np.ndarray) -> np.ndarray:
        return cls._sum(rate, tail, int(np.argmax(rate > 0)) if rate.any() else len(rate), lengths)

    def recurrence(self, lengths: np.ndarray) -> np.ndarray:
        """Per task of ``lengths`` requests: its expected blind uses over its expected uses (0 without uses)."""
        used = self._from_first(self.uses, self.uses_tail, lengths)
        blind = self._sum(self.rate, self.tail, self.start, lengths)
        return np.divide(blind, used, out=np.zeros(len(used)), where=used > 0)

    def expected(self, lengths: np.ndarray) -> np.ndarray:
        """Expected recurring blind uses of tasks of ``lengths`` requests."""
        return self._sum(self.rate, self.tail, self.start, lengths) * self.recurrence(lengths)

    def expected_calls(self, lengths: np.ndarray) -> np.ndarray:
        """Expected summariser calls of tasks of ``lengths`` requests."""
        if self.calls is None:
            return np.zeros(len(np.atleast_1d(lengths)))
        return self._from_first(self.calls, self.calls_tail, lengths)


@dataclass(frozen=True)
class PoolFlags:
    """Each pool run's working set under one setting (run ids sorted, so a resample is the same runs again)."""

    run_ids: tuple[str, ...]
    sets: tuple[WorkingSet, ...]

    def curve(self, draw: np.ndarray | None = None) -> PressureCurve:
        """The curve of the pool, or of the resample ``draw`` (indices into the runs, repeats allowed)."""
        picked = [self.sets[i] for i in (range(len(self.sets)) if draw is None else draw.tolist())]
        longest = max(len(w.blind) for w in picked)
        hits, used, calls, reach = (np.zeros(longest) for _ in range(4))
        for w in picked:
            hits[: len(w.blind)] += w.blind
            used[: len(w.blind)] += w.uses
            reach[: len(w.blind)] += 1
            if w.summarised is not None:
                calls[: len(w.blind)] += w.summarised
        enough = np.flatnonzero(reach >= min(MIN_RUNS, len(picked)))
        last = int(enough[-1]) + 1 if len(enough) else 1
        start = min((w.start for w in picked if w.start < len(w.blind)), default=longest)  # none hid: no tail
        later = slice(last // 2, longest)
        per_run, per_position = max(reach[later].sum(), 1), np.maximum(reach[:last], 1)
        rate, use_rate, call_rate = (x[:last] / per_position for x in (hits, used, calls))
        tail, uses_tail = (float(x[later].sum() / per_run) for x in (hits, used))
        # the summariser fires by size, never before its first call: its tail is measured where it is applied
        calls_later = slice(max(last // 2, int(np.argmax(calls > 0)) if calls.any() else longest), longest)
        calls_tail = float(calls[calls_later].sum() / max(reach[calls_later].sum(), 1))
        return PressureCurve(
            rate, tail, len(picked), int(reach.sum()), start, use_rate, uses_tail, call_rate, calls_tail
        )


def pool_draws(runs: int, n: int) -> np.ndarray:
    """``n`` resamples of a pool of ``runs`` runs (rows of indices), the same for the same sizes."""
    return np.random.default_rng(POOL_SEED).integers(0, runs, (n, runs))


def pool_flags(runs: list[RunArrays], policy: AnyPolicy, budget: Budget) -> PoolFlags:
    """Each of ``runs`` under ``policy``."""
    if not runs:
        raise ReplayError("the pool (--runs) matches no stored run with requests; `replay runs` lists them")
    ordered = sorted(runs, key=lambda r: r.run_id)
    return PoolFlags(tuple(r.run_id for r in ordered), tuple(working_set(r, views(r, policy, budget)) for r in ordered))


def pressure_curve(runs: list[RunArrays], policy: AnyPolicy, budget: Budget) -> PressureCurve:
    """The curve of ``runs`` under ``policy``."""
    return pool_flags(runs, policy, budget).curve()


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
