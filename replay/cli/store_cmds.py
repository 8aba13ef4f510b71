"""ingest, runs, quarantine and sql."""

from __future__ import annotations

from typing import Annotated

import typer

from replay.cli import app
from replay.cli.common import DEFAULT_DB_PATH, DbOption, FormatOption, console, emit
from replay.errors import ReplayError
from replay.ingest import ingest as ingest_paths
from replay.readers.base import MAX_LINE_BYTES
from replay.store import frame, open_store
from replay.store.queries import runs_table


@app.command()
def ingest(
    paths: Annotated[list[str], typer.Argument(help="Files, directories or globs of agent logs.")],
    db: DbOption = DEFAULT_DB_PATH,
    max_line_bytes: Annotated[int, typer.Option(help="Longest JSONL line accepted.")] = MAX_LINE_BYTES,
) -> None:
    """Ingest agent logs (format detected by content); already ingested files are skipped."""
    con = open_store(db)
    try:
        outcomes = ingest_paths(con, paths, progress=True, max_line_bytes=max_line_bytes)
    except FileNotFoundError as exc:
        raise ReplayError(f"{exc}; check the path") from exc
    for out in outcomes:
        for bad in out.bad[:5]:
            console.print(f"[yellow]{out.path}:{bad.line}[/]: {bad.reason}", highlight=False)
        if len(out.bad) > 5:
            console.print(f"[yellow]{out.path}[/]: {len(out.bad) - 5} more bad records (see `replay quarantine`)")
    counts = {s: sum(o.status == s for o in outcomes) for s in ("ingested", "unchanged", "unknown", "failed")}
    console.print(f"{len(outcomes)} files: " + ", ".join(f"{n} {s}" for s, n in counts.items()) +
                  f"; {sum(o.runs for o in outcomes)} runs, {sum(o.items for o in outcomes):,} items, "
                  f"{sum(o.requests for o in outcomes):,} requests, {sum(len(o.bad) for o in outcomes)} quarantined")


@app.command()
def runs(db: DbOption = DEFAULT_DB_PATH, fmt: FormatOption = "table") -> None:
    """List ingested runs: format, model, requests, tool calls, items, recorded usage."""
    emit(runs_table(open_store(db, read_only=True)), fmt, title="runs")


@app.command()
def quarantine(db: DbOption = DEFAULT_DB_PATH, fmt: FormatOption = "table") -> None:
    """Show records that could not be read, with file, line and reason."""
    con = open_store(db, read_only=True)
    emit(frame(con, "SELECT path, line, reason FROM quarantine ORDER BY path, line"), fmt, title="quarantine")


@app.command()
def sql(query: Annotated[str, typer.Argument(help="SQL over runs, items, requests, token_counts...")],
        db: DbOption = DEFAULT_DB_PATH, fmt: FormatOption = "table") -> None:
    """Run read-only SQL against the store."""
    import duckdb

    con = open_store(db, read_only=True)
    try:
        emit(frame(con, query), fmt)
    except duckdb.Error as exc:
        raise ReplayError(f"SQL failed: {exc}") from exc
