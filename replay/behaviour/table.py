"""Behaviour rows of many runs under one policy setting, with the turn band when a step cap is given."""

from __future__ import annotations

from dataclasses import dataclass

from replay.behaviour.band import band
from replay.behaviour.calibration import Calibration
from replay.behaviour.measure import behaviour
from replay.policies.base import AnyPolicy, Budget
from replay.run_arrays import RunArrays


@dataclass(frozen=True)
class BandSettings:
    """``cap``: the harness's step cap; ``costs``: per run id its simulated cost under the policy (None unpriced);
    ``harness``: per run id its harness; ``calibration`` (and its file ``source``): the point for runs of its
    harness (and model, when it names one)."""

    cap: int
    costs: dict[str, float | None]
    harness: dict[str, str | None]
    calibration: Calibration | None = None
    source: str | None = None

    def covers(self, run: RunArrays) -> bool:
        cal = self.calibration
        if cal is None or self.harness.get(run.run_id) != cal.harness:
            return False
        return cal.model is None or cal.model == run.model


def behaviour_rows(
    runs: list[RunArrays], policy: AnyPolicy, budget: Budget, settings: BandSettings | None = None
) -> tuple[list[dict], list[dict]]:
    """(run rows, episode rows); with ``settings`` each run row carries its band (and point, where calibrated)."""
    run_rows, ep_rows = [], []
    for run in runs:
        row, eps = behaviour(run, policy, budget)
        if settings is not None:
            cal = settings.calibration if settings.covers(run) else None
            fit = cal.fit if cal is not None else None
            cost = settings.costs.get(run.run_id)
            calls = row["summaries"]
            row.update(
                cap=settings.cap, **band(run.n_requests, row["loop_exposure"], settings.cap, cost, fit, calls=calls)
            )
            row["calibration"] = settings.source if cal is not None else None
        run_rows.append(row)
        ep_rows.extend(eps)
    return run_rows, ep_rows
