"""tune: recommend a policy's thresholds for a new model (tokenizer, window, reply reserve)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from replay.cli import app
from replay.cli.behaviour_options import BehaviourFlag, CalibrationOption, CapOption, check_options
from replay.cli.common import (
    CACHE_HELP,
    DEFAULT_DB_PATH,
    MAX_TOKENS,
    DbOption,
    PriceOption,
    PricesOption,
    RequiredTokenizerOption,
    WorkersOption,
    console,
    emit,
    note,
    output_folder,
    warnings_block,
)
from replay.errors import ReplayError
from replay.policies import tunable
from replay.untrusted import for_terminal

SHOWN = 15
TUNABLE_HELP = (
    f"Policy to tune: {', '.join(tunable())}; or pkg.module:Class, a policy whose class has a tuning space "
    "(docs/policies.md)."
)


@app.command()
def tune(
    tokenizer: RequiredTokenizerOption,
    window: Annotated[int, typer.Option(min=1, max=MAX_TOKENS, help="The model's context window, tokens.")],
    reserve: Annotated[
        int, typer.Option(min=0, max=MAX_TOKENS, help="Reply reserve, tokens: overflow if prompt + reserve > window.")
    ],
    policy: Annotated[str, typer.Option("--policy", "-p", help=TUNABLE_HELP)] = "seed_a",
    db: DbOption = DEFAULT_DB_PATH,
    out: Annotated[Path, typer.Option(help="Folder for recommended.toml, front.csv/.parquet, front.png/.svg.")] = Path(
        "out/tune"
    ),
    points: Annotated[
        int, typer.Option(help="Grid size (at most this many points; the knobs share levels; 1 to 1,000,000).")
    ] = 96,
    runs: Annotated[str | None, typer.Option(help="LIKE pattern on run_id or source path.")] = None,
    cache: Annotated[str, typer.Option(help=CACHE_HELP)] = "auto",
    model: Annotated[
        str | None,
        typer.Option(
            help="The new model: every run is priced (and, with --cache auto, "
            "cached) as this model (genai-prices name)."
        ),
    ] = None,
    prices: PricesOption = None,
    price: PriceOption = [],  # noqa: B006
    executor: Annotated[str, typer.Option(help="serial, local (process pool) or ray.")] = "local",
    workers: WorkersOption = 0,
    behaviour: BehaviourFlag = False,
    cap: CapOption = None,
    calibration: CalibrationOption = None,
) -> None:
    """Sweep the policy's knobs at this window and reserve (ranges relative to the window); keep the points that
    pass `replay check`'s default gate against the policy's defaults, then those with zero (else the fewest)
    overflow incidents; print the Pareto front of summaries, cache hit, evicted repeat reads and cost; name the
    runs that still overflow; write recommended.toml, defaults.toml and a chart.

    Resumable: the same arguments give the same sweep id, so a rerun skips finished points."""
    from replay.metrics.prices import pricing_from_options
    from replay.store import open_store
    from replay.sweeps.behaviour_points import BehaviourOptions
    from replay.sweeps.runner import sweep_workers
    from replay.sweeps.spec import MAX_POINTS
    from replay.sweeps.tune import tune as run
    from replay.sweeps.tune_grid import fit_warnings, tune_grid
    from replay.sweeps.tune_report import answer, front_columns, summary_lines, tradeoff
    from replay.tokens.resolve import resolve_given

    check_options(behaviour, cap, calibration)
    if not 1 <= points <= MAX_POINTS:  # checked before the grid is laid out (its levels grow with --points)
        raise ReplayError(
            f"--points {points:,}: give 1 to {MAX_POINTS:,} (the default 96 covers each knob at a few levels)"
        )
    workers = sweep_workers(workers, 0, note) if executor != "ray" else workers
    pricing = pricing_from_options(prices, price, model)  # a bad price file fails before any counting
    tune_grid(policy, window, points, reserve)  # an unknown policy or a bad window fails before any counting
    output_folder(out, "--out")
    con = open_store(db)
    tok = resolve_given(con, tokenizer)
    if tok.counted:
        console.print(f"{tok.tokenizer_id}: counted {tok.counted:,} new content hashes", highlight=False)
    early = fit_warnings(policy, window, reserve)
    for line in early:
        console.print(for_terminal(line), style="bold yellow", highlight=False, markup=False)
    opts = BehaviourOptions(cap, calibration) if behaviour else None
    res = run(
        con,
        policy,
        window,
        reserve,
        tok.tokenizer_id,
        out,
        points,
        runs,
        cache,
        executor,
        workers,
        pricing=pricing,
        behaviour=opts,
    )
    lines = summary_lines(res)
    title = (
        f"Pareto front ({res.front.height} points, cheapest first)"
        if res.gate_passed
        else f"Pareto front of all swept points ({res.front.height}; none passes the gate)"
    )
    emit(
        front_table(res, front_columns(res)), title=title, keep=KEY_COLUMNS, all_in=f"{res.files['front_csv']} has all"
    )
    if res.front.height > SHOWN:
        console.print(f"... {res.front.height - SHOWN} more in {res.files['front_csv']}", highlight=False)
    trade = tradeoff(res)
    if trade.height:
        emit(
            trade,
            title="no point passes the gate: the trade-off",
            keep=("overflow_incidents", "cost_usd", "fails_on"),
            all_in="points.parquet has all",
        )
    for line in lines:  # run ids and model names from the logs among them
        if not line.startswith("WARNING"):
            console.print(for_terminal(line), highlight=False, markup=False)
    console.print(
        f"wrote {res.files['policy']} and {res.files['defaults']} (gate: replay check "
        f"{res.files['defaults']} {res.files['policy']}), {res.files['front_csv']}, "
        f"{res.files['chart_png']} and .svg; {res.computed} points computed in {res.seconds:.1f} s",
        highlight=False,
        markup=False,
    )
    whole = f"WARNING: {res.why}{res.choice}"  # what was chosen instead is the ANSWER below: said once
    warnings_block(
        [(res.why if line == whole else line).removeprefix("WARNING: ") for line in lines if line.startswith("WARNING")]
    )
    console.print(for_terminal(answer(res)), style="bold", highlight=False, markup=False)


KEY_COLUMNS = ("summaries_per_100", "cache_hit_%", "cost_usd", "overflow_incidents")


def front_table(res, cols: list[str]):
    """The front's first SHOWN points and the defaults, as a frame ``emit`` prints: the point (→: the
    recommended one), the knobs and the metrics, cache hit as a percentage."""
    import polars as pl

    rec = res.recommended["point_id"]
    keep = [
        c
        for c in cols
        if c in res.front.columns
        and c not in ("point_id", "runs_with_overflow", "emergencies", "repeat_evicted_tokens", "gate_ok")
    ]
    rows = [
        {"point": ("→ " if r["point_id"] == rec else "") + r["point_id"][:8], **{c: r[c] for c in keep}}
        for r in res.front.head(SHOWN).iter_rows(named=True)
    ]
    if res.defaults:  # the reference every point is gated against
        rows.append(
            {"point": ("→ " if rec == "defaults" else "") + "defaults", **{c: res.defaults.get(c) for c in keep}}
        )
    frame = pl.DataFrame(rows, infer_schema_length=None)
    return frame.with_columns(
        (pl.col("cache_hit_rate") * 100).round(1),
        pl.col("cost_usd").cast(pl.Float64).round(2),
        pl.col("summaries_per_100").round(2),
    ).rename({"cache_hit_rate": "cache_hit_%"})
