"""ingest, runs, quarantine and sql."""

from __future__ import annotations

import math
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Annotated

import polars as pl
import typer
from rich.text import Text

from replay.cli import app
from replay.cli.common import (
    DEFAULT_DB_PATH,
    DbOption,
    FormatOption,
    NewDbOption,
    PriceOption,
    PricesOption,
    WideOption,
    console,
    emit,
    finite_seconds,
    note,
)
from replay.errors import Interrupted, ReplayError
from replay.ingest import FileOutcome, expand_paths
from replay.ingest import ingest_units as ingest_files
from replay.ingest import watch as watch_paths
from replay.ingest.companions import Companion
from replay.ingest.companions import summary as companions_summary
from replay.ingest.discover import Found, discover, harness_names
from replay.metrics.prices import pricing_from_options
from replay.metrics.recorded_bill import (
    TOKENS,
    bill_summary,
    grouped_bill,
    request_bill,
    runs_bill,
    unpriced_reasons,
    within_days,
)
from replay.readers.base import MAX_RECORD_BYTES
from replay.store import frame, open_store
from replay.store.queries import runs_table
from replay.store.sandbox import COUNT_SECONDS, DEFAULT_MEMORY, count_rows, open_sandboxed, run_query
from replay.untrusted import for_terminal, path_text

QUARANTINED_EXIT = 3


@app.command()
def ingest(
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            help="Files, directories or globs of agent logs. None: find each harness's logs in its default location "
            "(REPLAY_<HARNESS>_DIR, CLAUDE_CONFIG_DIR, CODEX_HOME, GEMINI_DATA_DIR override it)."
        ),
    ] = None,
    db: NewDbOption = DEFAULT_DB_PATH,
    max_record_mb: Annotated[
        float,
        typer.Option(
            help="Largest record read, in MB (2^20 bytes): a longer JSONL line or a larger single-document JSON file "
            "is quarantined with its file, line and size, and the rest ingests. Peak memory is about five times "
            "the largest record read (DuckDB holds two copies while it commits it)."
        ),
    ] = MAX_RECORD_BYTES / 2**20,
    max_line_bytes: Annotated[
        int | None, typer.Option(hidden=True, help="The record limit in bytes (older spelling of --max-record-mb).")
    ] = None,
    harness: Annotated[
        list[str] | None,
        typer.Option("--harness", help="With no paths: only this harness (repeatable): " + ", ".join(harness_names())),
    ] = None,
    watch: Annotated[
        bool,
        typer.Option(
            "--watch",
            help="Keep polling and ingest sessions as they grow (a grown file replaces its earlier "
            "version of the run). Ctrl-C stops.",
        ),
    ] = False,
    interval: Annotated[float, typer.Option(help="Seconds between polls with --watch.", callback=finite_seconds)] = 2.0,
) -> None:
    """Ingest agent logs (format detected by content); already ingested files are skipped, and so are files found
    in a folder that hold no run (empty, a session with no conversation yet), counted in one line.

    Exit code 0: everything read; 3: some records (or files) were quarantined, see `replay quarantine`."""
    if paths and harness:
        raise ReplayError("--harness selects what discovery looks for; it cannot be combined with paths")
    if max_line_bytes is None:
        if not math.isfinite(max_record_mb) or max_record_mb <= 0:
            raise ReplayError(
                f"--max-record-mb {max_record_mb}: expected a positive number of MB (default "
                f"{MAX_RECORD_BYTES / 2**20:g})"
            )
        max_line_bytes = int(max_record_mb * 2**20)
    elif max_line_bytes <= 0:
        raise ReplayError(f"--max-line-bytes {max_line_bytes}: expected a positive number of bytes")
    con = open_store(db)
    literal: set[Path] = set()  # files named on the command line: an error if one holds no run
    if not paths:
        found = discover(harness)
        for f in found:
            console.print(for_terminal(_found_line(f)), highlight=False)
            for folder in f.unreadable:
                console.print(
                    for_terminal(
                        f"{f.harness}: cannot read {folder}: skipped; give read access (chmod u+rx) and rerun"
                    ),
                    highlight=False,
                )
            for path, kind in f.special:
                _say_special(path, kind)
        if not any(f.logs for f in found):
            names = ", ".join(f.harness for f in found)
            console.print(
                f"No agent logs found for {names} in their default locations. Pass paths "
                "(replay ingest PATH...) or point REPLAY_<HARNESS>_DIR at the logs.",
                highlight=False,
            )
            raise typer.Exit(1)

        def sources() -> list[Path]:
            return [log for f in discover(harness) for log in f.logs]
    else:
        said: set[Path] = set()

        def sources() -> list[Path]:
            skipped: list[tuple[Path, str]] = []
            beside: list[tuple[Path, Companion]] = []
            try:
                found = expand_paths(paths, skipped, beside, literal)
            except FileNotFoundError as exc:
                raise ReplayError(f"{exc}; check the path") from exc
            for path, kind in skipped:
                if path not in said:  # once, not at every poll of --watch
                    said.add(path)
                    _say_special(path, kind)
            if new := [(path, rule) for path, rule in beside if path not in said]:
                said.update(path for path, _ in new)
                console.print(for_terminal(companions_summary(new)), highlight=False)
            return found

    if watch:
        console.print(f"watching every {interval:g} s; Ctrl-C stops", highlight=False)
        try:
            watch_paths(con, sources, interval, report=_report_one, max_line_bytes=max_line_bytes)
        except (KeyboardInterrupt, Interrupted):
            console.print("stopped")
        return
    outcomes = list(ingest_files(con, sources(), progress=True, max_line_bytes=max_line_bytes, named=literal))
    if skipped := [o for o in outcomes if o.status == "no run" and not o.bad]:  # found in a folder
        console.print(for_terminal(no_run_summary(skipped)), highlight=False)
        outcomes = [o for o in outcomes if o.status != "no run" or o.bad]
    for out in outcomes:
        for warning in out.warnings[:5]:
            console.print(
                Text.assemble(
                    (f"{for_terminal(str(out.path))}:{warning.line}", "yellow"),
                    f": warning: {for_terminal(warning.reason)}",
                ),
                highlight=False,
            )
        if len(out.warnings) > 5:
            console.print(
                Text.assemble(
                    (for_terminal(str(out.path)), "yellow"),
                    f": {len(out.warnings) - 5} more warnings (runs.metadata.warnings holds them)",
                )
            )
        for bad in out.bad[:5]:
            console.print(
                Text.assemble((f"{for_terminal(str(out.path))}:{bad.line}", "yellow"), f": {for_terminal(bad.reason)}"),
                highlight=False,
            )
        if len(out.bad) > 5:
            console.print(
                Text.assemble(
                    (for_terminal(str(out.path)), "yellow"),
                    f": {len(out.bad) - 5} more bad records (see `replay quarantine`)",
                )
            )
    counts = {s: sum(o.status == s for o in outcomes) for s in ("ingested", "unchanged", "no run", "unknown", "failed")}
    console.print(
        f"{len(outcomes)} files: "
        + ", ".join(f"{n} {s}" for s, n in counts.items() if n or s != "no run")
        + f"; {sum(o.runs for o in outcomes)} runs, {sum(o.items for o in outcomes):,} items, "
        f"{sum(o.requests for o in outcomes):,} requests, {sum(len(o.bad) for o in outcomes)} quarantined"
    )
    if any(o.bad for o in outcomes):
        con.close()  # before the exit exception, which keeps this frame (and a connection in it) alive
        raise typer.Exit(QUARANTINED_EXIT)


def no_run_summary(skipped: list[FileOutcome]) -> str:
    """One line: how many files found in folders were skipped as holding no run, by kind."""
    kinds = Counter(o.no_run or "?" for o in skipped)
    n = len(skipped)
    parts = ", ".join(f"{kind} x{k}" if k > 1 else kind for kind, k in kinds.items())
    return f"skipped {n} file{'s' if n != 1 else ''} holding no run ({parts})"


def _say_special(path: Path, kind: str) -> None:
    """One line for a path that is not a regular file (reading a FIFO would wait forever, a device never end)."""
    console.print(
        for_terminal(f"{path_text(path)}: {kind}, not a regular file: skipped (copy the log to a file to ingest it)"),
        highlight=False,
    )


def _found_line(f: Found) -> str:
    """One line per harness: how many logs, where (or where it looked)."""
    home = str(Path.home())

    def short(p: Path) -> str:
        return "~" + str(p)[len(home) :] if str(p).startswith(home + "/") else str(p)

    via = "" if f.source == "default" else f" (${f.source})"
    if f.existing:
        return f"{f.harness}: {len(f.logs)} logs in {', '.join(short(r) for r in f.existing)}{via}"
    n = len(f.roots) - 1
    more = f" and {n} other place{'s' if n > 1 else ''}" if n else ""
    return f"{f.harness}: none (no {short(f.roots[0])}{more}){via}"


def _report_one(out: FileOutcome) -> None:
    detail = (
        f"{out.runs} runs, {out.requests} requests"
        if out.status == "ingested"
        else (out.bad[0].reason if out.bad else out.no_run or "")
    )
    console.print(for_terminal(f"{out.status} {out.path} ({out.format or '?'}): {detail}"), highlight=False)
    for warning in out.warnings:
        console.print(for_terminal(f"{out.path}:{warning.line}: warning: {warning.reason}"), highlight=False)


@app.command()
def runs(
    db: DbOption = DEFAULT_DB_PATH,
    fmt: FormatOption = "table",
    wide: WideOption = False,
    by: Annotated[
        str,
        typer.Option(
            "--by",
            help="run (one row each), or the recorded bill grouped by model (each request's own), harness, "
            "day, week or month (UTC): runs, requests, tokens, cost.",
        ),
    ] = "run",
    since: Annotated[
        datetime | None, typer.Option(help="Only requests on or after this UTC day (YYYY-MM-DD).", formats=["%Y-%m-%d"])
    ] = None,
    until: Annotated[
        datetime | None,
        typer.Option(help="Only requests on or before this UTC day (YYYY-MM-DD).", formats=["%Y-%m-%d"]),
    ] = None,
    prices: PricesOption = None,
    price: PriceOption = [],  # noqa: B006
    compact: Annotated[
        bool,
        typer.Option(
            "--compact",
            help="For narrow terminals: only the run (or group), its requests and its cost, numbers whole "
            "(table only; json and csv keep every column).",
        ),
    ] = False,
) -> None:
    """List ingested runs: format, model, requests, what the run cost by its recorded usage (each request at its
    own model's list price on its day: uncached input, cache reads, 5 min and 1 h cache writes, long-context
    tiers, output) and the summariser calls its log records beside its requests (``summariser_calls``, their
    cost ``summary_cost_usd``, part of ``cost_usd``) and the server-side iterations its responses record beyond
    the request's own (``server_calls``: Claude Code's advisor calls and the executor's further iterations, an
    API-side compaction; ``server_cost_usd``, part of ``cost_usd``), tool calls, items. A cost that cannot be
    computed is empty and ``cost_note`` says why (a model with no price, no per-request usage); totals leave it out
    and name it."""
    con = open_store(db, read_only=True)
    bill = within_days(
        request_bill(con, pricing_from_options(prices, price)), since and since.date(), until and until.date()
    )
    if by != "run":
        table = grouped_bill(bill, by).select(
            by,
            "runs",
            "requests",
            "cost_usd",
            *TOKENS,
            "summariser_calls",
            "summary_cost_usd",
            "server_calls",
            "server_cost_usd",
            "unpriced_requests",
            "cost_note",
        )
        title = f"recorded bill by {by}"
        if fmt == "table":  # thousands of tokens, so cost and the four counts fit 80 columns
            ktok = {
                "in_ktok": "input_tokens",
                "read_ktok": "cache_read",
                "write_ktok": "cache_write_5m",
                "out_ktok": "output_tokens",
            }
            table = table.with_columns(pl.col("cache_write_5m") + pl.col("cache_write_1h")).select(
                pl.col(by).cast(pl.String).fill_null("(none)"),
                "cost_usd",
                *[(pl.col(c) / 1e3).round().cast(pl.Int64).alias(k) for k, c in ktok.items()],
                "requests",
                "runs",
                (pl.col("cache_write_1h") / 1e3).round().cast(pl.Int64).alias("write_1h_ktok"),
                "unpriced_requests",
                "cost_note",
            )
            title += " (thousands of tokens; write: 5 min and 1 h)"
    else:
        table = (
            runs_table(con)
            .drop("requests")
            .join(runs_bill(bill), on="run_id", how="left", coalesce=True)
            .with_columns(pl.col("requests").fill_null(0))
        )  # the requests billed (within --since/--until)
        if since or until:  # a run with no request in the range is not listed
            table = table.filter(pl.col("run_id").is_in(bill["run_id"].unique().implode()))
        table = table.select(
            "run_id",
            "requests",
            "cost_usd",
            "model",
            "format",
            "tool_calls",
            "items",
            "recorded_usage",
            *TOKENS,
            pl.col("summariser_calls").fill_null(0),
            "summary_cost_usd",
            pl.col("server_calls").fill_null(0),
            "server_cost_usd",
            "unpriced_requests",
            pl.col("cost_note").fill_null("no requests"),
        )
        title = "runs"
    if compact and fmt == "table":
        label = pl.col(table.columns[0]).cast(pl.String).fill_null("(none)")
        short = table.select(label, "requests", "cost_usd")
        emit(short, fmt, title=f"{title.split(' (')[0]} (compact; --format csv: all columns)", label_room=True)
    else:
        emit(table, fmt, title=title, wide=wide)
    if fmt == "table":
        for line in bill_summary(table, by, unpriced_reasons(bill)):
            console.print(Text(for_terminal(line)), highlight=False)


@app.command()
def quarantine(db: DbOption = DEFAULT_DB_PATH, fmt: FormatOption = "table") -> None:
    """Show records that could not be read, with file, line and reason."""
    con = open_store(db, read_only=True)
    emit(frame(con, "SELECT path, line, reason FROM quarantine ORDER BY path, line"), fmt, title="quarantine")


TABLE_ROWS = 1000  # a terminal table of more rows is not read, and takes long to render


@app.command()
def sql(
    query: Annotated[str, typer.Argument(help="SQL over runs, items, requests, token_counts...")],
    db: DbOption = DEFAULT_DB_PATH,
    fmt: FormatOption = "table",
    timeout: Annotated[
        float | None, typer.Option(help="Stop the query after this many seconds (Ctrl-C also stops it).")
    ] = None,
    limit: Annotated[
        int | None, typer.Option(help="Rows shown at most (default: 1,000 in a table, all in csv/json; 0: all).", min=0)
    ] = None,
    memory_limit: Annotated[
        str, typer.Option(help="DuckDB memory for the query; past it the query stops with a message.")
    ] = DEFAULT_MEMORY,
) -> None:
    """Run read-only SQL against the store's tables (no file, URL or extension access), within a memory limit."""
    con = open_sandboxed(db, memory_limit)
    rows = (TABLE_ROWS if fmt == "table" else 0) if limit is None else limit
    deadline = None if timeout is None else time.monotonic() + timeout
    frame = run_query(con, query, timeout, rows or None)
    if rows and frame.height > rows:
        frame = frame.head(rows)
        budget = COUNT_SECONDS if deadline is None else min(COUNT_SECONDS, deadline - time.monotonic())
        total = count_rows(con, query, budget)
        left = f"{total - rows:,} more rows were left out" if total is not None else "more rows were left out"
        note(f"first {rows:,} rows shown; {left} (--limit 0 shows all, --format csv writes them)")
    with _stop_at(deadline, timeout):
        emit(frame, fmt)


class _Overdue(Exception):
    """The --timeout of `replay sql` passed while its result was being written."""


@contextmanager
def _stop_at(deadline: float | None, timeout: float | None) -> Iterator[None]:
    """Stop the block at ``deadline`` (time.monotonic) with one line: --timeout covers writing the result too (a
    30-million-row table took over a minute to render after its query had finished)."""
    if deadline is None or threading.current_thread() is not threading.main_thread():
        yield
        return

    def overdue(signum: int, frame: object) -> None:
        raise _Overdue

    previous = signal.signal(signal.SIGALRM, overdue)
    signal.setitimer(signal.ITIMER_REAL, max(deadline - time.monotonic(), 0.001))
    try:
        yield
    except _Overdue:
        sys.stdout.flush()
        raise ReplayError(
            f"SQL stopped after --timeout {timeout:g} s while writing its result (the output above is cut short); "
            "raise --timeout, add a LIMIT or narrow the query"
        ) from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
