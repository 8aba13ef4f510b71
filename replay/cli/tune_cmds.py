"""tune: recommend a policy's thresholds for a new model (tokenizer, window, reply reserve)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

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
    note,
)
from replay.errors import ReplayError
from replay.policies import tunable

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
    from replay.sweeps.tune_report import front_columns, summary_lines
    from replay.tokens.resolve import resolve_given

    check_options(behaviour, cap, calibration)
    if not 1 <= points <= MAX_POINTS:  # checked before the grid is laid out (its levels grow with --points)
        raise ReplayError(
            f"--points {points:,}: give 1 to {MAX_POINTS:,} (the default 96 covers each knob at a few levels)"
        )
    workers = sweep_workers(workers, 0, note) if executor != "ray" else workers
    con = open_store(db)
    tok = resolve_given(con, tokenizer)
    if tok.counted:
        console.print(f"{tok.tokenizer_id}: counted {tok.counted:,} new content hashes", highlight=False)
    pricing = pricing_from_options(prices, price, model)
    tune_grid(policy, window, points, reserve)  # an unknown policy or a bad window fails before any counting
    early = fit_warnings(policy, window, reserve)
    for line in early:
        console.print(line, style="bold yellow", highlight=False, markup=False)
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
    table = Table(title=title, title_justify="left")
    cols = [
        c
        for c in front_columns(res)
        if c in res.front.columns
        and c not in ("point_id", "runs_with_overflow", "emergencies", "repeat_evicted_tokens", "gate_ok")
    ]
    heads = {
        "summaries_per_100": "summ/100",
        "cache_hit_rate": "cache",
        "repeat_evicted": "evicted",
        "cost_usd": "cost $",
        "overflow_incidents": "overfl",
        "protect": "protect",
        "tail_fraction": "tail",
        "reclaim_floor": "reclaim",
        "summary_at": "summary_at",
        "keep_user_tokens": "keep_user",
        "clear_at_least": "clear_min",
        "summary_tokens": "summ_tok",
    }
    table.add_column("rec", no_wrap=True)
    for c in cols:  # at 80 columns cells fold onto a second line: a number is never cut
        table.add_column(heads.get(c, c), justify="right", overflow="fold")
    for row in res.front.head(SHOWN).iter_rows(named=True):
        mark = "→" if row["point_id"] == res.recommended["point_id"] else ""
        table.add_row(mark, *(_cell(c, row[c]) for c in cols))
    if res.defaults:  # the reference every point is gated against
        d = res.defaults
        mark = "→ dflt" if res.recommended["point_id"] == "defaults" else "dflt"
        table.add_row(mark, *(_cell(c, d.get(c)) for c in cols))
    console.print(table)
    if res.front.height > SHOWN:
        console.print(f"... {res.front.height - SHOWN} more in {res.files['front_csv']}", highlight=False)
    for line in lines:
        if line in early:
            continue
        style = "bold yellow" if line.startswith("WARNING") else None
        console.print(line, style=style, highlight=False, markup=False)
    console.print(
        f"wrote {res.files['policy']} and {res.files['defaults']} (gate: replay check "
        f"{res.files['defaults']} {res.files['policy']}), {res.files['front_csv']}, "
        f"{res.files['chart_png']} and .svg; {res.computed} points computed in {res.seconds:.1f} s",
        highlight=False,
        markup=False,
    )


def _cell(col: str, v: Any) -> str:  # a value of a polars row
    if v is None:
        return ""
    if col == "cache_hit_rate":
        return f"{100 * float(v):.1f}%"
    if col == "cost_usd":
        return f"{float(v):,.2f}"
    if isinstance(v, float):
        return f"{v:,.0f}" if v.is_integer() and abs(v) >= 100 else f"{v:.4g}"
    return f"{v:,}" if isinstance(v, int) else str(v)
