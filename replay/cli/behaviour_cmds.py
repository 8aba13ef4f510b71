"""behaviour: per run under a policy setting, identical repeat calls the view hid, pressure, re-reads, loop episodes
and the turn band; ``calibrate`` and ``predict`` for the loop propensity of one harness."""

from __future__ import annotations

import json
import math
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from replay.cli import app
from replay.cli.common import (
    DEFAULT_DB_PATH,
    MAX_TOKENS,
    DbOption,
    FormatOption,
    TokenizerOption,
    _existing_store,
    console,
    emit,
    note,
)
from replay.errors import ReplayError
from replay.untrusted import for_terminal

if TYPE_CHECKING:
    from replay.behaviour.table import BandSettings

behaviour_app = typer.Typer(
    help="Behaviour under a policy: repeats, pressure, loops, the turn band; calibrate and predict the propensity.",
    invoke_without_command=True,
    rich_markup_mode=None,
)
app.add_typer(behaviour_app, name="behaviour")

PolicyOpt = Annotated[str, typer.Option("--policy", "-p", help="Policy name or preset.")]
SetsOpt = Annotated[list[str], typer.Option("--set", help="Policy parameter key=value (repeatable).")]
WindowOpt = Annotated[int, typer.Option(min=1, max=MAX_TOKENS, help="Context window, tokens.")]
# the measuring command's --db is checked only when it runs: a subcommand's own --db is the one that counts
LazyDbOption = Annotated[
    Path,
    typer.Option(
        "--db",
        help="DuckDB store file (env REPLAY_DB); it must exist (`replay ingest` creates it).",
        envvar="REPLAY_DB",
    ),
]
CapOpt = Annotated[int, typer.Option("--cap", min=1, help="The harness's step cap (turns a loop runs to).")]
ReferenceOpt = Annotated[
    Path | None,
    typer.Option(
        help="CSV task,raw_turns,policy_turns: a paired arm where the policy tipped no loop (fits h = 0); its per-task "
        "spread is what a rerun does to a task's turns."
    ),
]


@behaviour_app.callback()
def behaviour(
    ctx: typer.Context,
    policy: PolicyOpt = "full",
    sets: SetsOpt = [],  # noqa: B006
    runs: Annotated[str | None, typer.Option(help="LIKE pattern on run_id or source path.")] = None,
    tokenizer: TokenizerOption = None,
    window: WindowOpt = 200_000,
    reserve: Annotated[int, typer.Option(min=0, max=MAX_TOKENS, help="Reply reserve, tokens.")] = 0,
    cap: Annotated[
        int | None, typer.Option("--cap", min=1, help="The harness's step cap: adds the turn band (and its cost).")
    ] = None,
    calibration: Annotated[
        Path | None, typer.Option(help="A calibration file (behaviour calibrate): the point, for its harness only.")
    ] = None,
    episodes: Annotated[bool, typer.Option("--episodes", help="Print the loop episodes, not the run rows.")] = False,
    db: LazyDbOption = DEFAULT_DB_PATH,
    fmt: FormatOption = "table",
) -> None:
    """Per run under --policy: identical repeat calls (tool, file, line range or command), those whose earlier
    result was unchanged (stale) and those whose earlier result the policy's view hid when the call was decided
    (blind); pressured requests (the view hides the latest read or search of a resource used again); blind uses
    (the request's own call names a resource whose latest look the view hides) and the loop exposure (blind uses
    times the share of uses that are blind once the policy acts: what the band counts); the re-reads
    a blind edit needs, inserted and the policy re-run (mech); loop episodes with the share the view hid; with
    --cap, the turn band. Rows are stored (behaviour_runs, behaviour_episodes). Nothing here is about solve rates."""
    if ctx.invoked_subcommand is not None:
        return
    db = _existing_store(db)
    from replay.behaviour.pool import harness_of
    from replay.behaviour.table import behaviour_rows
    from replay.cli.behaviour_output import print_rows
    from replay.policies import Budget, make_policy, parse_sets
    from replay.simulator.load import load_runs
    from replay.store import open_store
    from replay.tokens.resolve import resolve_tokenizer

    if calibration is not None and cap is None:
        raise ReplayError("--calibration gives the turn point under a step cap: give --cap N too")
    params = parse_sets(sets)
    pol = make_policy(policy, params)
    budget = Budget(window, reserve)
    con = open_store(db)
    try:
        arrays = load_runs(con, resolve_tokenizer(con, tokenizer), runs)
        if not arrays:
            raise ReplayError(f"--runs {runs!r} matches no run with requests in {db}; `replay runs` lists them")
        settings = None
        if cap is not None:
            from replay.simulator.run import simulate_run

            costs = {r.run_id: simulate_run(r, pol, None, budget)[1].get("cost_usd") for r in arrays}
            settings = band_settings(cap, costs, harness_of(con, [r.run_id for r in arrays]), calibration)
        run_rows, ep_rows = behaviour_rows(arrays, pol, budget, settings)
        from replay.behaviour.rows import write_rows

        write_rows(con, policy, dict(pol.config.__dict__), run_rows, ep_rows)
    finally:
        con.close()
    print_rows(run_rows, ep_rows, episodes, fmt, policy, cap is not None)


def band_settings(cap: int, costs: dict, harness: dict, calibration: Path | None) -> BandSettings:
    """The band settings with the calibration read (if given)."""
    from replay.behaviour.calibration_file import read_calibration
    from replay.behaviour.table import BandSettings as Settings

    cal = read_calibration(calibration) if calibration else None
    if cal is not None and cal.harness not in set(harness.values()):
        console.print(
            f"note: the calibration is for harness {for_terminal(cal.harness)}; none of these runs is, so no point "
            "is given",
            highlight=False,
            markup=False,
        )
    return Settings(cap, costs, harness, cal, str(calibration) if calibration else None)


@behaviour_app.command()
def calibrate(
    paired: Annotated[Path, typer.Option(help="CSV task,raw_turns,policy_turns: one paired arm.")],
    cap: CapOpt,
    runs: Annotated[str, typer.Option(help="The pool: LIKE pattern on stored raw runs of the arm's harness.")],
    out: Annotated[Path, typer.Option(help="The calibration file to write (TOML).")],
    policy: PolicyOpt = "masking",
    sets: SetsOpt = [],  # noqa: B006
    model: Annotated[str | None, typer.Option(help="The arm's model (the point is then for it only).")] = None,
    reference: ReferenceOpt = None,
    tokenizer: TokenizerOption = None,
    window: WindowOpt = 200_000,
    db: DbOption = DEFAULT_DB_PATH,
) -> None:
    """Fit the loop propensity of the pool's harness on one paired arm: the hazard per recurring blind use that
    reproduces the arm's turn ratio, its bootstrap replicates (tasks and pool runs resampled), and a held-out check
    (fit on half the tasks, predict the other half). With --reference, each task's loop chance is taken over the
    lengths a rerun of it can take (the file keeps that spread; its predictions use it). The file states where it
    came from."""
    import hashlib

    from replay.behaviour.calibration import Calibration, fit, held_out, pool_key, ratio, read_paired, replicates
    from replay.behaviour.calibration_file import write_calibration
    from replay.behaviour.pool import pool_flags, pool_harness
    from replay.behaviour.rerun import no_loop_spread
    from replay.policies import Budget, make_policy, parse_sets
    from replay.simulator.load import load_runs
    from replay.store import open_store
    from replay.tokens.resolve import resolve_tokenizer

    pol = make_policy(policy, parse_sets(sets))
    arm = read_paired(paired)
    spread = no_loop_spread(reference) if reference is not None else None
    con = open_store(db, read_only=True)
    try:
        pool = load_runs(con, resolve_tokenizer(con, tokenizer), runs)
        harness = pool_harness(con, pool, f"--runs {runs!r}") if pool else ""
        flags = pool_flags(pool, pol, Budget(window))
    finally:
        con.close()
    curve = flags.curve()
    prop = fit(arm.raw, arm.policy, curve, cap, spread=spread)
    check = held_out(arm, flags, cap, spread)
    observed = float(arm.policy.sum() / arm.raw.sum())
    cal = Calibration(
        harness=harness,
        model=model,
        policy=policy,
        settings=pol.config.as_dict(),
        cap=cap,
        fit=prop,
        reps=replicates(arm, flags, cap, spread=spread),
        spread=spread,
        provenance={
            "paired_file": str(paired),
            "paired_sha256": hashlib.sha256(paired.read_bytes()).hexdigest(),
            "tasks": len(arm.raw),
            "observed_ratio": round(observed, 6),
            "reproduced_ratio": round(ratio(arm.raw, curve, cap, prop, spread), 6),
            "rerun_lengths": (
                f"each task's loop chance over the lengths a rerun can take, spread as in {reference}"
                if spread is not None
                else "each task's loop chance at its raw length (no --reference)"
            ),
            "pool": runs,
            "pool_runs": curve.runs,
            "pool_requests": curve.requests,
            "pool_sha256": pool_key(flags),
            "store": str(db),
            "window": window,
            "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "model_meaning": "turn counts only; nothing about solve rates",
        },
        check={
            "split": "sha256(task) first byte even: fitted; odd: predicted",
            "fit_tasks": check.fit_tasks,
            "check_tasks": check.check_tasks,
            "observed": round(check.observed, 6),
            "predicted": round(check.predicted, 6),
            "interval_lo": round(check.lo, 6),
            "interval_hi": round(check.hi, 6),
            "inside": check.inside,
        },
    )
    write_calibration(cal, out)
    if spread is None:
        note(
            "note: no --reference, so each task's loop chance is taken at its raw length, which predicts too little "
            "for a window wider than most raw runs (the Complexity Trap's 500-task M=72 and summary arms came out "
            "below their intervals so); --reference REF.csv, a paired arm where the policy tipped no loop, takes it "
            "over the lengths a rerun can take (docs/behaviour.md)"
        )
    console.print(
        f"{out}: harness {for_terminal(harness)}, hazard {prop.hazard:.4g} per recurring blind use, "
        f"ratio {observed:.3f} reproduced as {cal.provenance['reproduced_ratio']:.3f}; "
        f"held out: predicted {check.predicted:.3f} [{check.lo:.3f}, {check.hi:.3f}] "
        f"for observed {check.observed:.3f} "
        f"({'inside' if check.inside else 'OUTSIDE'})",
        highlight=False,
        markup=False,
    )


@behaviour_app.command()
def predict(
    calibration: Annotated[Path, typer.Option(help="The file `replay behaviour calibrate` wrote.")],
    lengths: Annotated[Path, typer.Option(help="CSV task,raw_turns: the raw lengths of the tasks to predict.")],
    cap: CapOpt,
    runs: Annotated[str, typer.Option(help="The pool: LIKE pattern on stored raw runs of the calibration's harness.")],
    policy: PolicyOpt = "masking",
    sets: SetsOpt = [],  # noqa: B006
    reference: ReferenceOpt = None,
    tokenizer: TokenizerOption = None,
    window: WindowOpt = 200_000,
    db: DbOption = DEFAULT_DB_PATH,
    fmt: FormatOption = "json",
) -> None:
    """Predict an arm's turn ratio (policy turns over raw turns) for tasks of the given raw lengths, with its 95%
    interval (the calibration's replicates, each on its resample of the pool and of the tasks), beside the
    uncalibrated band (its 95% ends over resamples of tasks and pool, with a no-loop spread per task: --reference's,
    else the calibration's). The point and interval use the spread the calibration was fitted with."""
    from replay.behaviour.band import Propensity
    from replay.behaviour.calibration import interval, pool_key, ratio, read_lengths
    from replay.behaviour.calibration_file import check_same_harness, check_same_pool, read_calibration
    from replay.behaviour.pool import pool_flags, pool_harness
    from replay.behaviour.rerun import arm_band, no_loop_spread
    from replay.policies import Budget, make_policy, parse_sets
    from replay.simulator.load import load_runs
    from replay.store import open_store
    from replay.tokens.resolve import resolve_tokenizer

    cal = read_calibration(calibration)
    spread = no_loop_spread(reference) if reference is not None else cal.spread
    pol = make_policy(policy, parse_sets(sets))
    raw = read_lengths(lengths)
    con = open_store(db, read_only=True)
    try:
        pool = load_runs(con, resolve_tokenizer(con, tokenizer), runs)
        if pool:
            check_same_harness(cal, pool_harness(con, pool, f"--runs {runs!r}"), str(calibration))
        flags = pool_flags(pool, pol, Budget(window))
    finally:
        con.close()
    check_same_pool(cal, pool_key(flags), str(calibration))
    curve = flags.curve()
    lo, hi = interval(raw, flags, cap, cal.reps, spread=cal.spread)
    band_95 = [round(x, 4) for x in arm_band(raw, flags, cap, spread)] if spread is not None else None
    out = {
        "harness": cal.harness,
        "model": cal.model,
        "policy": policy,
        "settings": pol.config.as_dict(),
        "cap": cap,
        "tasks": len(raw),
        "ratio_point": round(ratio(raw, curve, cap, cal.fit, cal.spread), 4),
        "ratio_interval_95": [round(lo, 4), round(hi, 4)],
        "band_ratio_lo": round(ratio(raw, curve, cap, Propensity(0.0), cal.spread), 4),
        "band_ratio_hi": round(ratio(raw, curve, cap, Propensity(math.inf), cal.spread), 4),
        "band_95": band_95,
        "band_assumes": (
            f"h from 0 to 1; tasks and pool runs resampled; each task's no-loop turns spread as in {spread.source} "
            f"({spread.tasks} tasks, ratio {spread.ratio:.3f}), matched by raw-length quantile; the range an arm's "
            "95% interval (a bootstrap over its tasks) can reach"
            if spread is not None
            else "h from 0 to 1 on these lengths, no rerun spread (give --reference, or calibrate with one, for "
            "band_95): an observed arm's ratio also moves by a rerun of either arm"
        ),
        "calibration": str(calibration),
        "calibrated_on": f"{cal.policy} {json.dumps(cal.settings, sort_keys=True)} cap {cal.cap}",
        "note": "band_ratio_lo is the raw turns (no loop), not a bound; turn counts only, nothing about solve rates",
    }
    if fmt == "json":
        sys.stdout.write(json.dumps(out) + "\n")
        return
    import polars as pl

    row = {k: json.dumps(v) if isinstance(v, list | dict) else v for k, v in out.items()}
    emit(pl.DataFrame([row]), fmt, title="predicted turn ratio")
