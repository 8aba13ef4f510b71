"""The turn band of a run under a policy: how many turns it might take if the policy's pressure tips the agent into a
loop that runs to the harness's step cap.

Model: each recurring blind use (``replay.behaviour.pressure``: a use of a resource whose last look the view hides,
weighted by the chance that the next use is blind again, its loop exposure ``E``) tips the agent into a loop with
probability ``h`` (its propensity, per harness and model; fitted and stored as the rate ``-ln(1 - h)``); a looping run
ends at the cap ``N``; a run that does not loop takes its recorded turns times ``s`` (masking also shortens runs). So
``loop_p = 1 - (1 - h) ** E`` and ``turns = s * n * (1 - loop_p) + loop_p * max(N, n)``.

Without a calibration nothing is known of ``h``: the band runs from ``h = 0`` (the recorded turns: the low end, not a
bound, since a policy can also shorten runs) to ``h = 1`` (any exposure tips it). A calibration
(``replay.behaviour.calibration``) fits ``h`` and ``s`` on one paired arm of that harness and model; only then is a
point given."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

BAND_COLUMNS = ("loop_p_lo", "loop_p_hi", "turns_lo", "turns_hi", "cost_lo", "cost_hi")
POINT_COLUMNS = ("loop_p_point", "turns_point", "cost_point")
UNCALIBRATED = (0.0, math.inf)  # the rate range when no paired data speaks for the harness and model


@dataclass(frozen=True)
class Propensity:
    """Per recurring blind use, the rate of tipping into a loop: ``rate = -ln(1 - h)`` for the chance ``h`` (a rate,
    not ``h``, is what is fitted and stored: a chance within 1e-16 of 1 rounds to 1, and a steep arm needs those);
    ``inf`` is ``h = 1``. ``shortening``: turns of a run that does not loop, as a share of its recorded turns."""

    rate: float
    shortening: float = 1.0

    @property
    def hazard(self) -> float:
        """The chance ``h`` per recurring blind use."""
        return -math.expm1(-self.rate)


def loop_p(exposure: np.ndarray | float, rate: float) -> np.ndarray:
    """Chance that a run with loop exposure ``exposure`` tips into a loop at ``rate`` per recurring blind use."""
    p = np.asarray(exposure, dtype=np.float64)
    if math.isinf(rate):
        return (p > 0).astype(np.float64)
    with np.errstate(over="ignore"):  # a rate near the float limit times an exposure: -inf, a chance of 1
        return -np.expm1(-rate * p)


def turns(
    n: np.ndarray | float, exposure: np.ndarray | float, cap: int, prop: Propensity, calls: np.ndarray | float = 0.0
) -> np.ndarray:
    """Expected turns of runs of ``n`` recorded turns and loop exposure ``exposure`` under ``prop``; ``calls``: the
    policy's own summariser calls in a run that does not loop (a looping run's cap counts them)."""
    return expected_turns(n, loop_p(exposure, prop.rate), cap, prop, calls)


def expected_turns(
    n: np.ndarray | float, q: np.ndarray | float, cap: int, prop: Propensity, calls: np.ndarray | float = 0.0
) -> np.ndarray:
    """Expected turns of runs of ``n`` recorded turns that loop with chance ``q`` (see ``turns``)."""
    n = np.asarray(n, dtype=np.float64)
    return (prop.shortening * n + calls) * (1 - q) + q * np.maximum(cap, n)


def band(
    n: int,
    exposure: float,
    cap: int,
    cost: float | None,
    prop: Propensity | None = None,
    range_=UNCALIBRATED,
    calls: int = 0,
) -> dict[str, float | None]:
    """The band (and, with ``prop``, the point) of one run: ``n`` recorded turns, ``exposure`` its loop exposure,
    ``cost`` its simulated cost under the policy (None: unpriced), each extra turn at the run's own mean per-turn
    cost under the policy; ``calls`` its summariser calls under the policy, turns too (their cost is in ``cost``).
    ``range_``: the rates at the band's two ends."""
    per_turn = None if cost is None or n <= 0 else cost / n
    out: dict[str, float | None] = {}
    for end, rate in zip(("lo", "hi"), range_, strict=True):
        t = float(turns(n, exposure, cap, Propensity(rate), calls))
        out[f"loop_p_{end}"] = float(loop_p(exposure, rate))
        out[f"turns_{end}"] = t
        out[f"cost_{end}"] = None if cost is None or per_turn is None else cost + (t - n - calls) * per_turn
    if prop is not None:
        t = float(turns(n, exposure, cap, prop, calls))
        out["loop_p_point"] = float(loop_p(exposure, prop.rate))
        out["turns_point"] = t
        out["cost_point"] = None if cost is None or per_turn is None else cost + (t - n - calls) * per_turn
    return out
