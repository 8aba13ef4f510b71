"""sweep: grid or random search over a policy's parameters, all runs x all points."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from replay.cli import app
from replay.cli.common import DEFAULT_DB_PATH, DbOption, FormatOption, TokenizerOption, WideOption, console, emit
from replay.store import open_store


@app.command()
def sweep(
    grid: Annotated[Path, typer.Argument(help="Sweep file (TOML: [sweep], [fixed], [grid] or [random]).")],
    db: DbOption = DEFAULT_DB_PATH,
    executor: Annotated[str, typer.Option(help="serial, local (process pool on all cores) or ray.")] = "local",
    workers: Annotated[int, typer.Option(help="Worker processes (0 = all cores).")] = 0,
    out: Annotated[Path, typer.Option(help="Folder for the sweep's Parquet file.")] = Path("out"),
    show_config: Annotated[bool, typer.Option("--show-config", help="Print the parsed sweep and exit.")] = False,
    tokenizer: TokenizerOption = None,
    fmt: FormatOption = "table", wide: WideOption = False,
) -> None:
    """Run a sweep; resumable (rerun the same command after a kill: finished points are skipped). Ends with a
    table of the points (knobs, overflows, cost, cache hit rate, summaries; cheapest first).

    The tokenizer is -t, else the file's [sweep] tokenizer (a built-in name or a path, relative to the file)."""
    from dataclasses import replace

    from replay.sweeps import load_spec, run_sweep
    from replay.sweeps.runner import print_commit
    from replay.tokens.resolve import resolve_tokenizer

    spec = load_spec(grid)
    if tokenizer:
        spec = replace(spec, tokenizer=tokenizer)
    if show_config:
        console.print_json(data={"sweep_id": spec.sweep_id, **spec.__dict__, "points": len(spec.points())})
        return
    con = open_store(db)
    # The spec holds the resolved id, so the sweep id is the same whether the tokenizer came by name or path.
    spec = replace(spec, tokenizer=resolve_tokenizer(con, spec.tokenizer))
    from replay.reports.sweep_summary import point_summary
    from replay.sweeps.results import sweep_frame

    note = console if fmt == "table" else Console(stderr=True, markup=False)  # keep json/csv output parseable
    outcome = run_sweep(con, spec, executor=executor, workers=workers, out_dir=out, on_commit=print_commit)
    note.print(f"sweep {outcome.sweep_id}: {outcome.points} points x {outcome.runs} runs; "
                  f"{outcome.skipped} already done, {outcome.computed} computed, {outcome.errors} rows with errors; "
                  f"results in table sweep_results of {db} and {outcome.parquet}", highlight=False)
    for line in unpriced_lines(con, outcome.sweep_id):
        note.print(line, style="bold yellow", highlight=False, markup=False)
    emit(point_summary(sweep_frame(con, outcome.sweep_id)), fmt, title=f"sweep {outcome.sweep_id}: "
         f"{outcome.points} points, metrics summed over {outcome.runs} runs (cheapest first)", wide=wide)


def unpriced_lines(con, sweep_id: str) -> list[str]:
    """A warning per model whose runs have no price in this sweep (their cost is null in sweep_results)."""
    cols = {r[0] for r in con.execute("SELECT column_name FROM information_schema.columns "
                                      "WHERE table_name = 'sweep_results'").fetchall()}
    if not {"price_source", "model"} <= cols:
        return []
    rows = con.execute("SELECT model, count(DISTINCT run_id) FROM sweep_results WHERE sweep_id = ? AND "
                       "price_source = 'unknown' GROUP BY model ORDER BY model NULLS LAST", [sweep_id]).fetchall()
    return [f"WARNING: no price for {'runs with no model name' if m is None else repr(m)} ({n} run(s)): cost null; "
            "add [prices] or [price] to the sweep file (or price_model)" for m, n in rows]
