"""``--behaviour`` for sweep and tune: each point's behaviour rows (``replay.behaviour``) over the sweep's runs, stored
under the point's policy setting, and summed per point: blind repeats, pressured requests (and their share of all
requests), blind uses and the loop exposure, re-reads, and the turn band under a step cap."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl

from replay.behaviour.calibration_file import read_calibration
from replay.behaviour.pool import harness_of
from replay.behaviour.rows import write_rows
from replay.behaviour.table import BandSettings, behaviour_rows
from replay.run_arrays import RunArrays
from replay.sweeps.adapter import resolve
from replay.sweeps.spec import SweepSpec, point_id

SUMMED = (
    "requests",
    "blind_repeats",
    "pressured_requests",
    "blind_uses",
    "loop_exposure",
    "mech_requests",
    "mech_prompt_tokens",
    "loop_episodes",
)
BANDED = ("turns_lo", "turns_hi", "cost_lo", "cost_hi", "turns_point", "cost_point")
PRESSURE_SHARE = "pressured_share"
UNDER = 0.01  # the tune chart marks the smallest setting whose pressured share is under this


@dataclass(frozen=True)
class BehaviourOptions:
    """``cap``: the harness's step cap (None: no band); ``calibration``: a calibration file for the point."""

    cap: int | None = None
    calibration: Path | None = None


def point_behaviour(
    con: duckdb.DuckDBPyConnection, spec: SweepSpec, runs: list[RunArrays], sweep_id: str, opts: BehaviourOptions
) -> pl.DataFrame:
    """One row per point of ``spec``: its behaviour summed over ``runs`` (rows also stored per run)."""
    harness = harness_of(con, [r.run_id for r in runs])
    cal = read_calibration(opts.calibration) if opts.calibration else None
    out = []
    for params in spec.iter_points():
        pid = point_id(params)
        point = resolve(spec.policy, params, spec.cache, spec.pricing())
        settings = None
        if opts.cap is not None:
            costs = dict(
                con.execute(
                    "SELECT run_id, cost_usd FROM sweep_results WHERE sweep_id = ? AND point_id = ?", [sweep_id, pid]
                ).fetchall()
            )
            settings = BandSettings(opts.cap, costs, harness, cal, str(opts.calibration) if cal else None)
        run_rows, ep_rows = behaviour_rows(runs, point.policy, point.budget, settings)
        write_rows(con, spec.policy, dict(point.policy.config.__dict__), run_rows, ep_rows)
        row: dict = {"point_id": pid}
        for c in SUMMED:
            row[c] = sum(r[c] for r in run_rows)
        row[PRESSURE_SHARE] = row["pressured_requests"] / max(row["requests"], 1)
        row["recorded_turns"] = row.pop("requests")
        if settings is not None:  # turns over every run (None unless each has the column); cost over those priced
            for c in BANDED:
                values = [r.get(c) for r in run_rows]
                known = [v for v in values if v is not None]
                row[c] = sum(known) if known and (c.startswith("cost") or len(known) == len(values)) else None
            row["band_cost_runs"] = sum(r.get("cost_lo") is not None for r in run_rows)
        out.append(row)
    return pl.DataFrame(out, infer_schema_length=None)
