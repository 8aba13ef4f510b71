"""The turn band of a run under a policy: how many turns it might take if the policy's pressure tips the agent into
a loop that runs to the harness's step cap.

Model: each recurring blind use (``replay.behaviour.pressure``: a use of a resource whose last look the view hides,
weighted by the chance that the next use is blind again, its loop exposure ``E``) tips the agent into a loop with
probability ``h`` (its propensity, per harness and model); a looping run ends at the cap ``N``; a run that does not
loop takes its recorded turns times ``s`` (masking also shortens runs). So ``loop_p = 1 - (1 - h) ** E`` and
``turns = s * n * (1 - loop_p) + loop_p * max(N, n)``.

Without a calibration nothing is known of ``h``: the band runs from ``h = 0`` (the recorded turns: the low end, not a
bound, since a policy can also shorten runs) to ``h = 1`` (any exposure tips it). A calibration
(``replay.behaviour.calibration``) fits ``h`` and ``s`` on one paired arm of that harness and model; only then is a
point given."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BAND_COLUMNS = ("loop_p_lo", "loop_p_hi", "turns_lo", "turns_hi", "cost_lo", "cost_hi")
POINT_COLUMNS = ("loop_p_point", "turns_point", "cost_point")
UNCALIBRATED = (0.0, 1.0)  # the propensity range when no paired data speaks for the harness and model


@dataclass(frozen=True)
class Propensity:
    """Per recurring blind use, the chance of tipping into a loop (``hazard``); ``shortening``: turns of a run that
    does not loop, as a share of its recorded turns."""

    hazard: float
    shortening: float = 1.0


def loop_p(exposure: np.ndarray | float, hazard: float) -> np.ndarray:
    """Chance that a run with loop exposure ``exposure`` tips into a loop."""
    p = np.asarray(exposure, dtype=np.float64)
    if hazard >= 1.0:
        return (p > 0).astype(np.float64)
    return 1.0 - np.exp(p * np.log1p(-hazard)) if hazard > 0 else np.zeros_like(p)


def turns(n: np.ndarray | float, exposure: np.ndarray | float, cap: int, prop: Propensity) -> np.ndarray:
    """Expected turns of runs of ``n`` recorded turns and loop exposure ``exposure`` under ``prop``."""
    q = loop_p(exposure, prop.hazard)
    n = np.asarray(n, dtype=np.float64)
    return prop.shortening * n * (1 - q) + q * np.maximum(cap, n)


def band(
    n: int, exposure: float, cap: int, cost: float | None, prop: Propensity | None = None, range_=UNCALIBRATED
) -> dict[str, float | None]:
    """The band (and, with ``prop``, the point) of one run: ``n`` recorded turns, ``exposure`` its loop exposure,
    ``cost`` its simulated cost under the policy (None: unpriced), each extra turn at the run's own mean per-turn
    cost under the policy."""
    per_turn = None if cost is None or n <= 0 else cost / n
    out: dict[str, float | None] = {}
    for end, h in zip(("lo", "hi"), range_, strict=True):
        t = float(turns(n, exposure, cap, Propensity(h)))
        out[f"loop_p_{end}"] = float(loop_p(exposure, h))
        out[f"turns_{end}"] = t
        out[f"cost_{end}"] = None if cost is None or per_turn is None else cost + (t - n) * per_turn
    if prop is not None:
        t = float(turns(n, exposure, cap, prop))
        out["loop_p_point"] = float(loop_p(exposure, prop.hazard))
        out["turns_point"] = t
        out["cost_point"] = None if per_turn is None else t * per_turn
    return out
