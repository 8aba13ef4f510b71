"""Tune a policy for a new model: sweep its main knobs relative to the window (replay.sweeps.tune_grid), keep the
points that pass `replay check`'s default gate against the policy's defaults and choose one (replay.sweeps.select),
then say and write what was found (replay.sweeps.tune_report). When no swept point passes the gate, the
recommendation is the defaults and the summary says why. The CLI (`replay tune`) only parses options and prints.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from replay.errors import ReplayError
from replay.metrics.coverage import cover_of_rows
from replay.metrics.prices import DEFAULT_PRICING, Pricing
from replay.sweeps.behaviour_points import BehaviourOptions, point_behaviour
from replay.sweeps.select import (
    TuneResult,
    aggregate_points,
    choose,
    gate,
    nearest_to_passing,
    overflowing_runs,
    unfittable,
    why_none,
)
from replay.sweeps.spec import SweepSpec, point_id
from replay.sweeps.tune_grid import defaults_spec, fit_warnings, tune_spec
from replay.sweeps.tune_report import write_outputs


def run_tune(
    con: duckdb.DuckDBPyConnection, spec: SweepSpec, executor: str = "local", workers: int = 0, progress: bool = True
) -> TuneResult:
    """Run (or resume) the tuning sweep and the defaults, gate every point against the defaults, choose one;
    writes nothing."""
    from replay.sweeps import run_sweep
    from replay.sweeps.results import sweep_frame
    from replay.sweeps.runner import load_sweep_runs

    t0 = time.perf_counter()
    runs = load_sweep_runs(con, spec)
    outcome = run_sweep(con, spec, executor=executor, workers=workers, progress=progress, runs=runs)
    frame = sweep_frame(con, outcome.sweep_id)
    points = aggregate_points(frame)
    if "cost_usd" not in points.columns:  # no run has a price: cost is unknown everywhere, nothing to rank by
        raise ReplayError(
            "tune: no run has a price (their models are unknown to genai-prices); pass --model "
            "NEW_MODEL, --prices FILE or --price input=.. --price output=.."
        )
    dspec = defaults_spec(spec)
    dout = run_sweep(
        con, dspec, executor="serial" if len(runs) < 4 else executor, workers=workers, progress=False, runs=runs
    )
    dframe = sweep_frame(con, dout.sweep_id)
    dflt = aggregate_points(dframe)
    drow = dflt.row(0, named=True) if dflt.height else None
    points = points.join(gate(frame, dframe), on="point_id", how="left").with_columns(
        pl.col("gate_ok").fill_null(False)
    )
    best: dict[str, Any] | None
    _, best_fr, best, best_zero = choose(points, spec.policy)
    passed = points.filter(pl.col("gate_ok"))
    by_id = {point_id(p): p for p in spec.points()}
    if passed.height:
        feas, fr, rec, zero = choose(passed, spec.policy)
        params, why, choice, rec_id = dict(by_id[rec["point_id"]]), "", "", rec["point_id"]
    else:
        if drow is None:
            raise ReplayError("tune: the defaults gave no result; see the error column of sweep_results")
        why, choice = why_none(points, drow), ""
        feas = points.filter(pl.col("point_id").is_in(best_fr["point_id"].to_list()))
        if int(best["overflow_incidents"]) < int(drow["overflow_incidents"]):
            # an overflow is a failed request: fewer of them outweighs the gate's softer metrics; say so
            fr, rec, zero, rec_id = best_fr, best, best_zero, best["point_id"]
            params = dict(by_id[rec_id])
            choice = (
                f". Recommended instead: the swept point with the fewest overflow incidents "
                f"({int(best['overflow_incidents']):,} vs the defaults' {int(drow['overflow_incidents']):,}); "
                f"it fails the gate on {best['gate_blockers']}; to accept that, gate it with: replay check "
                f"defaults.toml recommended.toml {best['gate_tol']}"
            )
            best = None
        else:
            fr, rec, rec_id = best_fr, {**drow, "point_id": "defaults"}, None
            zero, params = int(drow["overflow_incidents"]) == 0, dict(dspec.fixed)
            choice = (
                ". The defaults overflow no more than any swept point: keep them (recommended.toml holds them); "
                "the best swept point is in best_swept.toml"
            )
    points = points.with_columns(
        pl.col("point_id").is_in(feas["point_id"].to_list()).alias("feasible"),
        pl.col("point_id").is_in(fr["point_id"].to_list()).alias("on_front"),
        (pl.col("point_id") == (rec_id or "")).alias("recommended"),
    )
    over = overflowing_runs(frame, rec_id) if rec_id else overflowing_runs(dframe)
    return TuneResult(
        spec,
        points,
        fr,
        rec,
        params,
        zero,
        drow,
        seconds=time.perf_counter() - t0,
        computed=outcome.computed,
        gate_passed=bool(passed.height),
        why=why,
        choice=choice,
        best_swept=None if passed.height else best,
        overflowing=over,
        default_overflowing=overflowing_runs(dframe),
        warnings=fit_warnings(spec.policy, spec.fixed.get("window", 0), spec.fixed.get("reserve", 0)),
        unfittable=unfittable(runs, spec.fixed.get("window"), spec.fixed.get("reserve")),
        cost_cover=cover_of_rows(frame),
        nearest=None if passed.height else nearest_to_passing(points),
    )


def tune(
    con: duckdb.DuckDBPyConnection,
    policy: str,
    window: int,
    reserve: int,
    tokenizer_id: str | None,
    out_dir: Path | None = None,
    points: int = 96,
    runs: str | None = None,
    cache: str = "auto",
    executor: str = "local",
    workers: int = 0,
    progress: bool = True,
    pricing: Pricing = DEFAULT_PRICING,
    behaviour: BehaviourOptions | None = None,
) -> TuneResult:
    """The whole tuning: sweep (resumable), aggregate, zero-overflow filter, front, recommendation, files; with
    ``behaviour`` each point's behaviour (and turn band) joins its row, and the chart shades the band."""
    if points < 1:
        raise ReplayError(f"tune: --points must be >= 1, got {points}")
    res = run_tune(
        con, tune_spec(policy, window, reserve, tokenizer_id, points, runs, cache, pricing), executor, workers, progress
    )
    if behaviour is not None:
        from replay.sweeps.runner import load_sweep_runs

        per_point = point_behaviour(con, res.spec, load_sweep_runs(con, res.spec), res.spec.sweep_id, behaviour)
        res.points = res.points.join(per_point, on="point_id", how="left", maintain_order="left")
    if out_dir is not None:
        write_outputs(res, out_dir)
    return res
