"""sweep: grid or random search over a policy's parameters, all runs x all points."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from replay.cli import app
from replay.cli.behaviour_options import BehaviourFlag, CalibrationOption, CapOption, check_options
from replay.cli.common import (
    DEFAULT_DB_PATH,
    DbOption,
    FormatOption,
    TokenizerOption,
    WideOption,
    WorkersOption,
    console,
    emit,
    note,
    output_folder,
    warnings_block,
)
from replay.store import open_store
from replay.untrusted import for_terminal

SHOWN = 200  # points the closing table shows (a million-point sweep is not a table to read)


SWEEP_PRICE_HOW = (
    "price them with [prices] (model -> input, output, ... USD/Mtok) or [price] in the sweep file, or price_model"
)


@app.command()
def sweep(
    grid: Annotated[Path, typer.Argument(help="Sweep file (TOML: [sweep], [fixed], [grid] or [random]).")],
    db: DbOption = DEFAULT_DB_PATH,
    executor: Annotated[str, typer.Option(help="serial, local (process pool on all cores) or ray.")] = "local",
    workers: WorkersOption = 0,
    out: Annotated[Path, typer.Option(help="Folder for the sweep's Parquet file.")] = Path("out"),
    show_config: Annotated[bool, typer.Option("--show-config", help="Print the parsed sweep and exit.")] = False,
    tokenizer: TokenizerOption = None,
    ray_address: Annotated[
        str | None,
        typer.Option(
            "--ray-address",
            help="With --executor ray: the cluster to join (sets RAY_ADDRESS; 'auto' joins a local "
            "`ray start` cluster); default: RAY_ADDRESS, else a Ray started for this sweep.",
        ),
    ] = None,
    max_points: Annotated[
        int | None,
        typer.Option(
            "--max-points",
            help="Refuse a sweep of more points than this (default: the file's [sweep] max_points, "
            "else 1,000,000); the count is checked before any point is built.",
        ),
    ] = None,
    shard_items: Annotated[
        int | None,
        typer.Option(
            "--shard-items",
            help="Load the runs from the store in shards of at most this many items (a bigger run is "
            "a shard of its own); every point runs over a shard before the next is loaded, so the memory of the sweep "
            "and of each worker is bounded by a shard, not the store. Default: 100,000 (~70 MB of runs a worker).",
        ),
    ] = None,
    fmt: FormatOption = "table",
    wide: WideOption = False,
    behaviour: BehaviourFlag = False,
    cap: CapOption = None,
    calibration: CalibrationOption = None,
) -> None:
    """Run a sweep; resumable (rerun the same command after a kill: finished points are skipped). Ends with a
    table of the points (knobs, overflows, cost, cache hit rate, summaries; cheapest first).

    The tokenizer is -t, else the file's [sweep] tokenizer (a built-in name or a path, relative to the file)."""
    from dataclasses import replace

    from replay.sweeps import load_spec, run_sweep
    from replay.sweeps.runner import print_commit
    from replay.tokens.resolve import resolve_tokenizer

    check_options(behaviour, cap, calibration)
    spec = load_spec(grid, max_points)
    if ray_address:
        import os

        os.environ["RAY_ADDRESS"] = ray_address  # read by the ray executor (replay.sweeps.executors.run_ray)
    if tokenizer:
        spec = replace(spec, tokenizer=tokenizer)
    if show_config:
        console.print_json(data={"sweep_id": spec.sweep_id, **spec.__dict__, "points": spec.n_points})
        return
    output_folder(out, "--out")
    con = open_store(db)
    # The spec holds the resolved id, so the sweep id is the same whether the tokenizer came by name or path.
    spec = replace(spec, tokenizer=resolve_tokenizer(con, spec.tokenizer))
    from replay.reports.sweep_summary import point_summary, price_cover
    from replay.store.memory import bounded_db_memory
    from replay.sweeps.runner import DB_MEMORY_MB
    from replay.sweeps.window_warnings import sweep_window_warnings

    say = console if fmt == "table" else Console(stderr=True, markup=False)  # keep json/csv output parseable
    outcome = run_sweep(
        con,
        spec,
        executor=executor,
        workers=workers,
        out_dir=out,
        on_commit=print_commit,
        note=note,
        shard_items=shard_items,
    )
    say.print(
        f"sweep {outcome.sweep_id}: {outcome.points} points x {outcome.runs} runs; "
        f"{outcome.skipped} already done, {outcome.computed} computed, {outcome.errors} rows with errors; "
        f"results in table sweep_results of {db} and {outcome.parquet}",
        highlight=False,
    )
    with bounded_db_memory(con, DB_MEMORY_MB):  # both scan every result row of the sweep
        summary = point_summary(con, outcome.sweep_id)
        cover = price_cover(con, outcome.sweep_id)
    if cover.total and not cover.priced:  # a cost column with no value sorts nothing: say so and leave it out
        summary = summary.drop("cost_usd").sort("overflow_incidents", "point_id")
        order = "fewest overflows first: no run has a price, so there is no cost to sort by"
    else:
        order = f"cheapest first; cost over {cover.label()}" if cover.total else "fewest overflows first"
    if behaviour:
        from replay.simulator.load import load_runs
        from replay.sweeps.behaviour_points import BehaviourOptions, point_behaviour

        arrays = load_runs(con, spec.tokenizer, spec.runs)
        per_point = point_behaviour(con, spec, arrays, outcome.sweep_id, BehaviourOptions(cap, calibration))
        summary = summary.join(per_point, on="point_id", how="left", maintain_order="left")
    shown = summary.head(SHOWN) if fmt == "table" else summary  # json/csv: every point
    emit(
        shown,
        fmt,
        title=f"sweep {outcome.sweep_id}: {outcome.points} points, metrics summed over {outcome.runs} runs ({order})",
        wide=wide,
    )
    warnings_block(sweep_window_warnings(spec) + [for_terminal(line) for line in cover.lines(SWEEP_PRICE_HOW)], say)
    if shown.height < summary.height:
        say.print(
            f"... {summary.height - shown.height:,} more points in {outcome.parquet} (or --format csv)", highlight=False
        )
