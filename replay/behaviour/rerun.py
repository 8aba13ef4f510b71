"""The uncalibrated band of an arm: what a policy of unknown propensity could make of a set of tasks' turn ratio,
as wide as a second run of a stochastic agent makes it.

An arm's observed ratio compares one run of the raw agent with one run under the policy, task by task. Even a
policy that tips no loop moves each task's turns (a rerun at temperature > 0 does; masking also shortens runs). The
band takes that spread from a reference arm (``replay.behaviour.spread``): each task draws a factor, its turns with
no loop are its raw turns times that factor (within the cap, or its raw turns if longer), and at ``h = 1`` it loops
when a run of that length has any exposure.

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

import hashlib
import math
from pathlib import Path

import numpy as np

from replay.behaviour.band import loop_p
from replay.behaviour.calibration import LEVEL, REPLICATES, SEED, read_paired
from replay.behaviour.pool import PoolFlags, pool_draws
from replay.behaviour.spread import NoLoopSpread, rerun_turns, spread_from

INNER = 200  # bootstrap resamples of each replicate arm's tasks: the interval that arm would report


def no_loop_spread(path: Path) -> NoLoopSpread:
    """The spread of the reference arm at ``path`` (a ``task,raw_turns,policy_turns`` table)."""
    arm = read_paired(path)
    return spread_from(arm.raw, arm.policy, str(path), hashlib.sha256(path.read_bytes()).hexdigest())


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
        rerun = rerun_turns(spread.draw(raw, rng), raw, cap)
        q = loop_p(curve.expected(np.ceil(rerun)), math.inf)  # 0 or 1: h = 1 tips every exposed run
        rerun = rerun + curve.expected_calls(raw)  # and the policy's summariser calls
        looping = (1 - q) * rerun + q * np.maximum(cap, raw)
        inner = rng.integers(0, len(raw), (INNER, len(raw)))
        lows.append(np.percentile(rerun[inner].sum(1) / raw[inner].sum(1), tail))
        highs.append(np.percentile(looping[inner].sum(1) / raw[inner].sum(1), 100 - tail))
    return float(np.percentile(lows, tail)), float(np.percentile(highs, 100 - tail))
