"""placeholders: how often the next calls repeat the call a placeholder replaced, per wording."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import polars as pl
import typer
from rich.console import Console

from replay.cli import app
from replay.cli.common import DEFAULT_DB_PATH, DbOption, FormatOption, console, emit, flat_for_csv, output_file
from replay.errors import ReplayError
from replay.metrics.placeholders import DEFAULT_K, SCOPES, recall_rates
from replay.store import open_store
from replay.store.queries import has_relation


@app.command()
def placeholders(
    k: Annotated[int, typer.Option("--k", help="Watch the next k tool calls after a placeholder.")] = DEFAULT_K,
    baseline: Annotated[
        str, typer.Option(help="Baseline runs: 'format' (runs of the same formats as the wording's events) or 'all'.")
    ] = "format",
    by_run: Annotated[
        bool,
        typer.Option(
            "--by-run",
            help="One row per wording and run (events cluster by run; the pooled interval assumes they do not).",
        ),
    ] = False,
    csv: Annotated[Path | None, typer.Option("--csv", help="Also write the table to this CSV file.")] = None,
    db: DbOption = DEFAULT_DB_PATH,
    fmt: FormatOption = "table",
) -> None:
    """Placeholder re-call rate per wording (Wilson 95% CI) against outputs not replaced at the same age."""
    if k < 1:
        raise ReplayError(f"--k {k}: watch at least one call")
    if baseline not in SCOPES:
        raise ReplayError(f"--baseline {baseline!r}: choose one of {', '.join(SCOPES)}")
    if csv is not None:
        output_file(csv, "--csv")
    con = open_store(db, read_only=True)
    if not has_relation(con, "placeholders"):
        con.close()
        raise ReplayError(
            f"{db}: this store predates placeholder events, so its runs were ingested without them; "
            "re-ingest the logs into a new store (`replay ingest PATHS --db NEW.duckdb`) and run "
            "`replay placeholders --db NEW.duckdb`"
        )
    try:
        table = recall_rates(con, k, baseline, by_run)
    finally:
        con.close()
    if csv is not None:  # wordings and run ids come from the logs: cells as a spreadsheet shows text
        csv.parent.mkdir(parents=True, exist_ok=True)
        flat_for_csv(table).write_csv(csv)
    if not table.height:
        if fmt != "table":  # still one parseable (empty) document on stdout; the reason on stderr
            emit(table, fmt)
        out = console if fmt == "table" else Console(stderr=True, markup=False)
        out.print(
            "no placeholder events in this store, so no wording has a rate. Logs that record what each "
            "request sent (e.g. SWE-agent 1.x trajectories) or clipped outputs give them; files ingested "
            "before replay recorded placeholders need a new store (re-ingesting the same file is a no-op)"
        )
        return
    title = f"placeholder re-calls within the next {k} calls (baseline: {baseline} runs, same age, not replaced)"
    emit(_display(table) if fmt == "table" else table, fmt, title=title, keep=("rate %", "95% CI"))


def _display(table: pl.DataFrame) -> pl.DataFrame:
    """A narrow view for the terminal: short wording, rates as percentages with their intervals."""

    def ci(lo: str, hi: str) -> pl.Expr:
        return pl.format("[{}, {}]", (pl.col(lo) * 100).round(1), (pl.col(hi) * 100).round(1))

    short = (
        pl.when(pl.col("wording").str.len_chars() > 48)
        .then(pl.col("wording").str.slice(0, 47) + pl.lit("…"))
        .otherwise(pl.col("wording"))
    )
    return table.select(
        *(["run_id"] if "run_id" in table.columns else []),
        short.alias("wording"),
        "origin",
        "events",
        "recalls",
        (pl.col("rate") * 100).round(1).alias("rate %"),
        ci("ci_low", "ci_high").alias("95% CI"),
        pl.col("base_events").alias("base n"),
        (pl.col("base_rate") * 100).round(1).alias("base %"),
        ci("base_ci_low", "base_ci_high").alias("base 95% CI"),
    )
