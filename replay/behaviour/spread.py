"""The no-loop spread: how far a second run of a stochastic agent moves each task's turns when the policy tips no
loop, taken from a reference arm (a paired table in which a calibration fits ``h = 0``).

Per task, its policy turns over its raw turns (every task with turns in both runs: leaving out the runs that reached
the cap would keep, among long tasks, only those the policy shortened). A task to predict takes the factors of the
reference tasks at the same quantile of raw length in their own arm (``BINS`` quantile bins): a task long for its arm
regresses on a rerun as one long for the reference did, whatever the two harnesses' typical lengths.

It serves twice. The band (``replay.behaviour.rerun``) draws a factor per task. The calibration and its predictions
(``replay.behaviour.calibration``) take a task's loop chance over the lengths a rerun of it can take (``grid``): the
exposure of a run grows faster than its length (nothing is hidden before a window fills), so the chance at the raw
length alone understates it wherever the window is wide for the task. The study's masking arm at M = 72 (keep_last
36) took 41 more tasks to within 10 turns of its step cap than its raw arm, 8 of them tasks whose raw runs were
under 60 turns, where the window hides nothing."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from replay.errors import ReplayError

BINS = 5
MIN_TASKS = 20  # a reference with fewer usable tasks gives no spread worth the name
GRID = 64  # rerun factors per task in ``grid``: evenly spaced quantiles of its bin's factors


@dataclass(frozen=True)
class NoLoopSpread:
    """Per raw-length quantile bin of the reference arm, its factors (policy turns over raw turns); where they came
    from (``source``, ``sha256``)."""

    factors: tuple[np.ndarray, ...]
    tasks: int
    ratio: float
    source: str = ""
    sha256: str = ""

    def draw(self, lengths: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """A factor for each task of ``lengths`` raw turns, from the bin of its quantile among ``lengths``."""
        where = quantile_bins(lengths)
        out = np.empty(len(lengths))
        for b, f in enumerate(self.factors):
            mine = where == b
            out[mine] = f[rng.integers(0, len(f), int(mine.sum()))]
        return out

    def grid(self, lengths: np.ndarray) -> np.ndarray:
        """(tasks, GRID): each task's factors, the ``(i + 0.5) / GRID`` quantiles of its bin's, equally likely."""
        where = quantile_bins(lengths)
        levels = (np.arange(GRID) + 0.5) / GRID
        per_bin = np.array([np.quantile(f, levels) for f in self.factors])
        return per_bin[where]


def rerun_turns(factors: np.ndarray, raw: np.ndarray, cap: int) -> np.ndarray:
    """A task's turns on a rerun with no loop: its raw turns times the factor, within the cap (or its raw turns, if
    longer)."""
    return np.minimum(factors * raw, np.maximum(cap, raw))


def spread_from(raw: np.ndarray, policy: np.ndarray, where: str, sha256: str = "") -> NoLoopSpread:
    """The spread of a reference arm of ``raw`` and ``policy`` turns per task (``where``: its name in messages)."""
    keep = (raw > 0) & (policy > 0)
    raw, pol = raw[keep].astype(np.float64), policy[keep].astype(np.float64)
    if len(raw) < MIN_TASKS:
        raise ReplayError(
            f"{where}: {len(raw)} tasks with turns in both runs; the no-loop reference needs at least {MIN_TASKS}"
        )
    bins = quantile_bins(raw)
    if len(np.unique(bins)) < BINS:
        raise ReplayError(
            f"{where}: its raw turns tie too often to fill {BINS} length quantiles; give a reference of varied lengths"
        )
    factors = tuple(pol[bins == b] / raw[bins == b] for b in range(BINS))
    return NoLoopSpread(factors, len(raw), float(pol.sum() / raw.sum()), where, sha256)


def quantile_bins(lengths: np.ndarray) -> np.ndarray:
    """Per task, its bin (0 .. BINS - 1) by its mid-rank among ``lengths`` (ties share a bin)."""
    order = np.argsort(np.argsort(lengths, kind="stable"), kind="stable")
    ranks = np.empty(len(lengths))
    for value in np.unique(lengths):  # ties take their mean rank
        mine = lengths == value
        ranks[mine] = order[mine].mean()
    return np.minimum((ranks + 0.5) / len(lengths) * BINS, BINS - 1).astype(np.int64)
