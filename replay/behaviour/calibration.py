"""Calibrating the loop propensity on one paired arm, and predicting another arm's turn ratio from it.

A paired arm is a table of tasks with their turns under the raw agent and under a policy setting. With the pool's
exposure curve under that setting (``replay.behaviour.pool``) each task's expected recurring blind uses follow from its
raw length, and the band model (``replay.behaviour.band``) gives its expected turns for a propensity. The fit: the
propensity (as the rate ``-ln(1 - h)``) that reproduces the arm's turn ratio (sum of policy turns over sum of raw
turns), every extra turn put down to loops; an arm shorter than its raw one gets ``h = 0`` and the shortening ``s`` of
its ratio. Its uncertainty: the same fit on bootstrap resamples of the tasks and, paired with each, a resample of the
pool's runs (``replay.behaviour.pool.pool_draws``); a prediction uses the same pool resample with each replicate, so a
thin pool shows as a wide interval. Its held-out check: fitted on one half of the tasks (split by a hash of the task
name), predicted on the other.

With a no-loop spread (``replay.behaviour.spread``, from a reference arm), a task's loop chance is taken over the
lengths a rerun of it can take, not at its raw length alone: the policy run is another run of a stochastic agent, and
a run's exposure grows faster than its length. The calibration fits, and its predictions use, the same spread."""

from __future__ import annotations

import csv
import hashlib
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from replay.behaviour.band import Propensity, expected_turns, loop_p
from replay.behaviour.pool import PoolFlags, PressureCurve, pool_draws
from replay.behaviour.spread import NoLoopSpread, rerun_turns
from replay.errors import ReplayError

REPLICATES = 200  # bootstrap resamples for the intervals
SEED = 0
LEVEL = 0.95


@dataclass(frozen=True)
class Paired:
    tasks: tuple[str, ...]
    raw: np.ndarray
    policy: np.ndarray


def read_table(path: Path, columns: tuple[str, ...]) -> list[dict[str, str]]:
    """Rows of a CSV file that has ``columns`` (more are allowed); errors name the file and line."""
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            missing = [c for c in columns if c not in (reader.fieldnames or [])]
            if missing:
                raise ReplayError(f"{path}: line 1: no column {', '.join(missing)}; expected {','.join(columns)}")
            rows = list(reader)
    except OSError as exc:
        raise ReplayError(f"{path}: cannot read ({exc.strerror}); give a CSV with columns {','.join(columns)}") from exc
    if not rows:
        raise ReplayError(f"{path}: no rows; give a CSV with columns {','.join(columns)}")
    return rows


def _turns(path: Path, line: int, row: dict[str, str], col: str) -> int:
    try:
        value = int(float(row[col]))
    except (TypeError, ValueError):
        raise ReplayError(f"{path}: line {line}: {col} {row[col]!r} is not a number of turns") from None
    if value < 0:
        raise ReplayError(f"{path}: line {line}: {col} {value} is a negative number of turns")
    return value


def read_paired(path: Path) -> Paired:
    """A ``task,raw_turns,policy_turns`` table."""
    rows = read_table(path, ("task", "raw_turns", "policy_turns"))
    raw = [_turns(path, i + 2, r, "raw_turns") for i, r in enumerate(rows)]
    pol = [_turns(path, i + 2, r, "policy_turns") for i, r in enumerate(rows)]
    return Paired(tuple(r["task"] for r in rows), np.array(raw), np.array(pol))


def read_lengths(path: Path) -> np.ndarray:
    """The raw_turns column of a ``task,raw_turns`` table."""
    rows = read_table(path, ("task", "raw_turns"))
    return np.array([_turns(path, i + 2, r, "raw_turns") for i, r in enumerate(rows)])


@dataclass(frozen=True)
class Exposure:
    """Tasks of ``lengths`` raw turns under one curve: per task and rerun length (columns; one column, the raw
    length, without a spread) its expected recurring blind uses, and its expected summariser calls."""

    lengths: np.ndarray
    blind: np.ndarray
    calls: np.ndarray

    def ratio(self, cap: int, prop: Propensity) -> float:
        """Predicted turn ratio (sum of expected policy turns, the policy's summariser calls included, over sum of
        raw turns)."""
        q = loop_p(self.blind, prop.rate).mean(axis=1)
        return float(expected_turns(self.lengths, q, cap, prop, self.calls).sum() / self.lengths.sum())


def exposure(lengths: np.ndarray, curve: PressureCurve, cap: int, spread: NoLoopSpread | None) -> Exposure:
    """The exposure of tasks of ``lengths`` raw turns; with ``spread``, at each length a rerun can take (the raw
    length times each factor of the task's bin, within the cap or the raw length if longer)."""
    n = np.asarray(lengths, dtype=np.float64)
    if spread is None:
        runs = n[:, None]
    else:
        runs = np.ceil(rerun_turns(spread.grid(n), n[:, None], cap))
    blind = curve.expected(runs.ravel()).reshape(runs.shape)
    return Exposure(n, blind, curve.expected_calls(n))


def ratio(
    lengths: np.ndarray, curve: PressureCurve, cap: int, prop: Propensity, spread: NoLoopSpread | None = None
) -> float:
    """Predicted turn ratio of tasks of ``lengths`` raw turns (``Exposure.ratio``)."""
    return exposure(lengths, curve, cap, spread).ratio(cap, prop)


def fit(
    raw: np.ndarray,
    policy: np.ndarray,
    curve: PressureCurve,
    cap: int,
    clamp: bool = False,
    spread: NoLoopSpread | None = None,
) -> Propensity:
    """The propensity that reproduces the arm's ratio. An arm beyond what the curve can give even at ``h = 1`` is
    refused, or with ``clamp`` (a bootstrap replicate whose pool resample shows too little exposure) gets
    ``h = 1``, the most the model allows. The rate is bracketed by doubling, then bisected."""
    s = 1.0
    target = float(policy.sum() / raw.sum())
    tasks = exposure(raw, curve, cap, spread)
    if tasks.ratio(cap, Propensity(0.0, s)) >= target:  # no loops needed: all of it is shortening
        return Propensity(0.0, target)
    most = tasks.ratio(cap, Propensity(math.inf, s))
    if most < target:
        if clamp:
            return Propensity(math.inf, s)
        raise ReplayError(
            f"the arm's turn ratio {target:.3f} is more than the pool's pressure can give even if every recurring "
            f"blind use tipped a loop ({most:.3f} at cap {cap}); check --cap and that the pool (--runs) is of the "
            "arm's harness"
        )
    lo, hi = 0.0, 1.0
    while tasks.ratio(cap, Propensity(hi, s)) < target and hi < 1e300:
        lo, hi = hi, hi * 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if tasks.ratio(cap, Propensity(mid, s)) < target else (lo, mid)
    return Propensity((lo + hi) / 2, s)


def replicates(
    paired: Paired, pool: PoolFlags, cap: int, n: int = REPLICATES, spread: NoLoopSpread | None = None
) -> list[Propensity]:
    """The fit on ``n`` bootstrap resamples of the tasks, the i-th on the i-th resample of the pool."""
    rng = np.random.default_rng(SEED)
    draws = pool_draws(len(pool.sets), n)
    out = []
    for d in draws:
        i = rng.integers(0, len(paired.raw), len(paired.raw))
        out.append(fit(paired.raw[i], paired.policy[i], pool.curve(d), cap, clamp=True, spread=spread))
    return out


def interval(
    lengths: np.ndarray,
    pool: PoolFlags,
    cap: int,
    reps: list[Propensity],
    seed: int = SEED,
    spread: NoLoopSpread | None = None,
) -> tuple[float, float]:
    """The ``LEVEL`` interval of the predicted ratio: each replicate's propensity, on its own resample of the pool
    (under the setting to predict) and on a resample of the lengths."""
    rng = np.random.default_rng(seed + 1)
    draws = pool_draws(len(pool.sets), len(reps))
    values = [
        ratio(lengths[rng.integers(0, len(lengths), len(lengths))], pool.curve(d), cap, p, spread)
        for p, d in zip(reps, draws, strict=True)
    ]
    tail = (1 - LEVEL) / 2 * 100
    return float(np.percentile(values, tail)), float(np.percentile(values, 100 - tail))


def pool_key(pool: PoolFlags) -> str:
    """The pool's identity (its run ids): a prediction must resample the same runs its calibration did."""
    return hashlib.sha256("\n".join(pool.run_ids).encode()).hexdigest()


def half(task: str) -> int:
    return hashlib.sha256(task.encode()).digest()[0] & 1


@dataclass(frozen=True)
class HeldOut:
    fit_tasks: int
    check_tasks: int
    observed: float
    predicted: float
    lo: float
    hi: float

    @property
    def inside(self) -> bool:
        return self.lo <= self.observed <= self.hi


def held_out(paired: Paired, pool: PoolFlags, cap: int, spread: NoLoopSpread | None = None) -> HeldOut:
    """Fit on the tasks whose hash is even, predict the odd ones."""
    curve = pool.curve()
    side = np.array([half(t) for t in paired.tasks])
    a, b = side == 0, side == 1
    if a.sum() < 2 or b.sum() < 2:
        raise ReplayError("the paired table needs at least 4 tasks for a held-out check")
    part = Paired(tuple(np.array(paired.tasks)[a]), paired.raw[a], paired.policy[a])
    prop = fit(part.raw, part.policy, curve, cap, spread=spread)
    lo, hi = interval(paired.raw[b], pool, cap, replicates(part, pool, cap, spread=spread), spread=spread)
    observed = float(paired.policy[b].sum() / paired.raw[b].sum())
    return HeldOut(int(a.sum()), int(b.sum()), observed, ratio(paired.raw[b], curve, cap, prop, spread), lo, hi)


@dataclass(frozen=True)
class Calibration:
    """What ``replay behaviour calibrate`` writes: the fit, its replicates, where it came from, its check."""

    harness: str
    model: str | None
    policy: str
    settings: dict
    cap: int
    fit: Propensity
    reps: list[Propensity]
    provenance: dict = field(default_factory=dict)
    check: dict = field(default_factory=dict)
    spread: NoLoopSpread | None = None  # the rerun spread it was fitted with (None: at raw lengths)
