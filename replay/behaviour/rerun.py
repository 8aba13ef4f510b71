"""The uncalibrated band of an arm: what a policy of unknown propensity could make of a set of tasks' turn ratio,
as wide as a second run of a stochastic agent makes it.

An arm's observed ratio compares one run of the raw agent with one run under the policy, task by task. Even a
policy that tips no loop moves each task's turns (a rerun at temperature > 0 does; masking also shortens runs). The
band takes that spread from a reference arm, a paired table (``task,raw_turns,policy_turns``) in which the policy
tipped no loop (a calibration there fits ``h = 0``): per task, its policy turns over its raw turns (every task with
turns in both runs: leaving out the runs that reached the cap would keep, among long tasks, only those the policy
shortened). A task to predict draws its factor from the reference tasks at the same quantile of raw length in their
own arm (``BINS`` quantile bins): a task long for its arm regresses on a rerun as one long for the reference did,
whatever the two harnesses' typical lengths. Its turns stay within the cap (or its raw turns, if longer).

Assumptions, stated in the output: the no-loop spread of the reference carries to this harness and model (it is a
property of rerunning an agent, not of its loop propensity, which never carries); the arm's tasks are a sample (they
are resampled); the pool is a sample (it is resampled).

The band is where an arm's reported 95% interval can reach, since that is what it is held against: each replicate
is an arm run under the model, and it reports its ratio's interval as the study does (a percentile bootstrap over
its tasks, ``INNER`` resamples). The low end: the 2.5th percentile of those intervals' low ends with no loops
(``h = 0``); the high end: the 97.5th of their high ends with every recurring blind use tipping a loop (``h = 1``).
Neither is a bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from replay.behaviour.band import loop_p
from replay.behaviour.calibration import LEVEL, REPLICATES, SEED, read_paired
from replay.behaviour.pool import PoolFlags, pool_draws
from replay.errors import ReplayError

BINS = 5
MIN_TASKS = 20  # a reference with fewer usable tasks gives no spread worth the name
INNER = 200  # bootstrap resamples of each replicate arm's tasks: the interval that arm would report


@dataclass(frozen=True)
class NoLoopSpread:
    """Per raw-length quantile bin of the reference arm, its factors (policy turns over raw turns)."""

    factors: tuple[np.ndarray, ...]
    tasks: int
    ratio: float

    def draw(self, lengths: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A factor for each task of ``lengths`` raw turns, from the bin of its quantile among ``lengths``."""
        where = quantile_bins(lengths)
        out = np.empty(len(lengths))
        for b, f in enumerate(self.factors):
            mine = where == b
            out[mine] = f[rng.integers(0, len(f), int(mine.sum()))]
        return out


def no_loop_spread(path: Path) -> NoLoopSpread:
    """The spread of the reference arm at ``path``."""
    arm = read_paired(path)
    keep = (arm.raw > 0) & (arm.policy > 0)
    raw, pol = arm.raw[keep].astype(np.float64), arm.policy[keep].astype(np.float64)
    if len(raw) < MIN_TASKS:
        raise ReplayError(
            f"{path}: {len(raw)} tasks with turns in both runs; the no-loop reference needs at least {MIN_TASKS}"
        )
    where = quantile_bins(raw)
    factors = tuple(pol[where == b] / raw[where == b] for b in range(BINS))
    return NoLoopSpread(factors, len(raw), float(pol.sum() / raw.sum()))


def quantile_bins(lengths: np.ndarray) -> np.ndarray:
    """Per task, its bin (0 .. BINS - 1) by its mid-rank among ``lengths`` (ties share a bin)."""
    order = np.argsort(np.argsort(lengths, kind="stable"), kind="stable")
    ranks = np.empty(len(lengths))
    for value in np.unique(lengths):  # ties take their mean rank
        mine = lengths == value
        ranks[mine] = order[mine].mean()
    return np.minimum((ranks + 0.5) / len(lengths) * BINS, BINS - 1).astype(np.int64)


def arm_band(
    lengths: np.ndarray, pool: PoolFlags, cap: int, spread: NoLoopSpread, n: int = REPLICATES
) -> tuple[float, float]:
    """(low, high) ends of the band of the ratio's interval for tasks of ``lengths`` raw turns (see the module)."""
    rng = np.random.default_rng(SEED + 3)
    tail = (1 - LEVEL) / 2 * 100
    lows, highs = [], []
    for d in pool_draws(len(pool.sets), n):
        raw = lengths[rng.integers(0, len(lengths), len(lengths))]
        curve = pool.curve(d)
        rerun = np.minimum(spread.draw(raw, rng) * raw, np.maximum(cap, raw))  # the task's turns with no loop
        rerun = rerun + curve.expected_calls(raw)  # and the policy's summariser calls
        q = loop_p(curve.expected(raw), math.inf)  # 0 or 1: h = 1 tips every exposed task
        looping = (1 - q) * rerun + q * np.maximum(cap, raw)
        inner = rng.integers(0, len(raw), (INNER, len(raw)))
        lows.append(np.percentile(rerun[inner].sum(1) / raw[inner].sum(1), tail))
        highs.append(np.percentile(looping[inner].sum(1) / raw[inner].sum(1), 100 - tail))
    return float(np.percentile(lows, tail)), float(np.percentile(highs, 100 - tail))
