"""sweep: grid or random search over a policy's parameters, all runs x all points."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from replay.cli import app
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
)
from replay.store import open_store

SHOWN = 200  # points the closing table shows (a million-point sweep is not a table to read)


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
) -> None:
    """Run a sweep; resumable (rerun the same command after a kill: finished points are skipped). Ends with a
    table of the points (knobs, overflows, cost, cache hit rate, summaries; cheapest first).

    The tokenizer is -t, else the file's [sweep] tokenizer (a built-in name or a path, relative to the file)."""
    from dataclasses import replace

    from replay.sweeps import load_spec, run_sweep
    from replay.sweeps.runner import print_commit
    from replay.tokens.resolve import resolve_tokenizer

    spec = load_spec(grid, max_points)
    if ray_address:
        import os

        os.environ["RAY_ADDRESS"] = ray_address  # read by the ray executor (replay.sweeps.executors.run_ray)
    if tokenizer:
        spec = replace(spec, tokenizer=tokenizer)
    if show_config:
        console.print_json(data={"sweep_id": spec.sweep_id, **spec.__dict__, "points": spec.n_points})
        return
    con = open_store(db)
    # The spec holds the resolved id, so the sweep id is the same whether the tokenizer came by name or path.
    spec = replace(spec, tokenizer=resolve_tokenizer(con, spec.tokenizer))
    from replay.reports.sweep_summary import point_summary
    from replay.store.memory import bounded_db_memory
    from replay.sweeps.runner import DB_MEMORY_MB

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
        for line in unpriced_lines(con, outcome.sweep_id):
            say.print(line, style="bold yellow", highlight=False, markup=False)
        summary = point_summary(con, outcome.sweep_id)
    shown = summary.head(SHOWN) if fmt == "table" else summary  # json/csv: every point
    emit(
        shown,
        fmt,
        title=f"sweep {outcome.sweep_id}: {outcome.points} points, metrics summed over "
        f"{outcome.runs} runs (cheapest first)",
        wide=wide,
    )
    if shown.height < summary.height:
        say.print(
            f"... {summary.height - shown.height:,} more points in {outcome.parquet} (or --format csv)", highlight=False
        )


def unpriced_lines(con, sweep_id: str) -> list[str]:
    """A warning per model whose runs have no price in this sweep (their cost is null in sweep_results)."""
    cols = {
        r[0]
        for r in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'sweep_results'"
        ).fetchall()
    }
    if not {"price_source", "model"} <= cols:
        return []
    rows = con.execute(
        "SELECT model, count(DISTINCT run_id) FROM sweep_results WHERE sweep_id = ? AND "
        "price_source = 'unknown' GROUP BY model ORDER BY model NULLS LAST",
        [sweep_id],
    ).fetchall()
    return [
        f"WARNING: no price for {'runs with no model name' if m is None else repr(m)} ({n} run(s)): cost null; "
        "add [prices] or [price] to the sweep file (or price_model)"
        for m, n in rows
    ]
