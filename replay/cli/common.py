"""Options and output helpers shared by every command."""

from __future__ import annotations

import errno
import json
import math
import os
import re
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Annotated, Literal

import duckdb
import polars as pl
import typer
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from replay.errors import Interrupted, ReplayError
from replay.policies.base import DEFAULT_WINDOW
from replay.store import DEFAULT_DB
from replay.untrusted import for_csv, for_terminal, json_text, path_text
from replay.worker_limits import check_workers


def _existing_store(path: Path) -> Path:
    """A command that reads the store never creates one: a mistyped --db is an error, not an empty store."""
    if path is not None and not Path(path).exists():
        raise typer.BadParameter(
            f"no store at {path}; create it with `replay ingest PATHS --db {path}` (or set REPLAY_DB)"
        )
    return path


DbOption = Annotated[
    Path,
    typer.Option(
        "--db",
        help="DuckDB store file (env REPLAY_DB); it must exist (`replay ingest` creates it).",
        envvar="REPLAY_DB",
        callback=_existing_store,
    ),
]
NewDbOption = Annotated[
    Path, typer.Option("--db", help="DuckDB store file (env REPLAY_DB); created if missing.", envvar="REPLAY_DB")
]
WideOption = Annotated[
    bool,
    typer.Option(
        "--wide", help="Every column, however wide (default: the columns that fit the terminal, the others named)."
    ),
]
DEFAULT_DB_PATH = DEFAULT_DB
OutFormat = Literal["table", "json", "csv"]
FormatOption = Annotated[str, typer.Option("--format", help="Output: table, json or csv.")]
TOKENIZER_HELP = (
    "Tokenizer: a built-in NAME (`replay tokenizers` lists them: o200k, cl100k, claude-legacy, "
    "tekken, ...) or a PATH (tokenizer.json, model directory, .gguf, .tiktoken). Items not yet "
    "counted are counted (cached in the store). Unknown names are errors."
)
TokenizerOption = Annotated[
    str | None,
    typer.Option("--tokenizer", "-t", help=TOKENIZER_HELP + " Omitted: chars/4 estimates, labelled as such."),
]
RequiredTokenizerOption = Annotated[str, typer.Option("--tokenizer", "-t", help=TOKENIZER_HELP)]
CACHE_HELP = (
    "Cache model for every run: anthropic, openai, deepseek, gemini, vllm, llamacpp, none; auto (default): "
    "each run under its provider's own (Claude -> anthropic, GPT -> openai, DeepSeek -> deepseek, Gemini -> "
    "gemini, else none)."
)
PricesOption = Annotated[
    Path | None,
    typer.Option(
        "--prices",
        help="TOML/JSON price file: [model] input, output, cache_read, cache_write, cache_write_1h "
        "(USD/Mtok), provider, same_as; a model name or glob. Overrides genai-prices.",
    ),
]
PriceOption = Annotated[
    list[str],
    typer.Option(
        "--price",
        help="Price override for every run, key=value (repeatable): input, output, cache_read, "
        "cache_write, cache_write_1h (USD/Mtok), provider, same_as=MODEL.",
    ),
]

# markup off: text from logs and users (paths, names, SQL results) prints literally; style with Text/style=.
console = Console(markup=False)
WorkersOption = Annotated[
    int,
    typer.Option(
        "--workers",
        help="Worker processes (0 = as many as the cores and free memory allow; more is lowered to that, with a note).",
        callback=lambda value: check_workers(value),
    ),
]


MAX_TOKENS = 100_000_000  # a window or reserve past this is a typo (the largest context windows are ~10M)
# --window of the commands that replay a run on its harness's own policy when no window is chosen
OWN_WINDOW_HELP = (
    f"Context window, tokens (the same default, {DEFAULT_WINDOW:,}, in every command); not given, `recorded` or a "
    "run's own harness preset takes each request's window as `replay fidelity` does (the serving model's)."
)


def finite_seconds(value: float) -> float:
    """A number of seconds, finite and > 0 (typer's FloatRange lets NaN through)."""
    if not (math.isfinite(value) and value > 0):
        raise typer.BadParameter(f"{value}: give a number of seconds > 0")
    return value


def note(line: str) -> None:
    """A one-line notice on stderr (stdout stays the command's output); text from a log in it is shown inert."""
    Console(stderr=True, markup=False, highlight=False).print(for_terminal(line), style="yellow")


def flat_for_csv(frame: pl.DataFrame) -> pl.DataFrame:
    """Lists, arrays and structs (which CSV cannot hold) as one JSON text per cell; every text cell through
    ``for_csv`` (log content: no controls, no formula a spreadsheet would run)."""
    nested = [c for c, t in frame.schema.items() if t.is_nested()]
    frame = frame.with_columns(
        pl.Series(c, [None if v is None else json.dumps(v, default=str) for v in frame[c].to_list()], pl.String)
        for c in nested
    )
    text = [c for c, t in frame.schema.items() if t == pl.String]
    return frame.with_columns(pl.col(c).map_elements(for_csv, return_dtype=pl.String) for c in text)


def emit(
    frame: pl.DataFrame,
    fmt: str = "table",
    title: str | None = None,
    wide: bool | None = None,
    keep: tuple[str, ...] = (),
    all_in: str | None = None,
    label_room: bool = False,
) -> None:
    """Print a frame as a rich table, JSON rows or CSV. A table keeps the columns that fit the terminal whole, in
    frame order, and names the ones left out; ``keep``: the columns the command exists for, shown at any width
    (the others make room for them); ``wide`` True: every column (None: the command has no --wide); ``all_in``:
    where a command without --format finds every column; ``label_room``: the first column (a label: a run id, a
    model) takes the room the others leave."""
    if fmt == "json":
        sys.stdout.write(json_text(frame.write_json()) + "\n")
    elif fmt == "csv":
        sys.stdout.write(flat_for_csv(frame).write_csv())
    elif fmt == "table":
        hidden: list[str] = []
        widths = {c: _column_width(frame, c, fold_header=not wide) for c in frame.columns}
        if not wide and frame.columns:  # a long id folds onto more lines, never cut
            first = frame.columns[0]
            room = max(24, console.width * 3 // 10)
            if label_room:  # the width the other columns leave (3 a column for padding and divider, 1 the edge)
                room = max(room, console.width - 4 - sum(widths[c] + 3 for c in frame.columns[1:]))
            widths[first] = min(widths[first], room)
            _fold_text_to_fit(frame, widths, [first, *(c for c in keep if c in frame.columns)])
            frame, hidden = fit_columns(frame, console.width, widths, keep)
        table = Table(title=Text(title) if title else None, box=box.SIMPLE_HEAD)
        for col in frame.columns:
            name = col if wide or len(col) <= widths[col] else header(col)
            table.add_column(
                Text(name),
                justify="right" if frame[col].dtype.is_numeric() else "left",
                overflow="fold",
                no_wrap=bool(wide),
                width=None if wide else widths[col],
            )
        costs = [c.endswith("cost_usd") for c in frame.columns]
        for row in frame.iter_rows():  # an unknown cost says so (why: its note); a blank could read as free
            table.add_row(
                *(Text(UNKNOWN_COST if v is None and cost else cell(v)) for v, cost in zip(row, costs, strict=True))
            )
        if wide:  # every column whole, however wide the terminal: lines longer than it wrap there, not in cells
            Console(markup=False, width=max(console.width, _table_width(frame) + 4), file=console.file).print(table)
        else:
            console.print(table)
        if hidden:
            more = all_in or ("--wide shows all" if wide is not None else "--format csv or json gives all")
            console.print(
                Text(f"columns left out at {console.width} columns: {', '.join(hidden)} ({more})", style="dim")
            )
    else:
        raise ReplayError(f"--format {fmt!r}: choose table, json or csv")


# a cost the table cannot give: no price for a model, or no usage to price (the row's note or the footer says which)
UNKNOWN_COST = "unknown"


def _fold_text_to_fit(frame: pl.DataFrame, widths: dict[str, int], must: list[str]) -> None:
    """Narrow the text columns among ``must`` (folded onto more lines, never cut) until every column in ``must``
    fits the terminal: the widest give way first; numbers keep their width (at least 8 characters each)."""
    must = list(dict.fromkeys(must))
    text = [c for c in must if not frame[c].dtype.is_numeric()]
    room = console.width - 1 - sum(widths[c] + 3 for c in must if c not in text) - 3 * len(text)
    if not text or sum(widths[c] for c in text) <= room:
        return
    left, todo = room, sorted(text, key=lambda c: widths[c])
    for i, col in enumerate(todo):  # water-filling: a narrow column keeps its width, the rest share what is left
        share = max(8, left // (len(todo) - i))
        widths[col] = min(widths[col], share)
        left -= widths[col]


def warnings_block(lines: list[str], out: Console | None = None, title: str = "WARNINGS") -> None:
    """The warnings under a table, as one short block: a header and one bullet per warning, folded at the
    terminal's width (text from a log, such as run ids and model names, with its controls made visible)."""
    if not lines:
        return
    out = out or console
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for line in lines:
        grid.add_row("-", Text(for_terminal(line)))
    out.print(Text(f"{title} ({len(lines)}):", style="bold yellow"))
    out.print(grid, style="yellow")


def cell(v: object) -> str:
    """A value as a table shows it: floats to 4 significant digits (whole from 10,000), numbers with thousands
    separators, text with its control characters made visible (it may come from a log)."""
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 10_000 else f"{v:,.4g}"  # never an exponent
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return for_terminal(str(v))


def header(col: str) -> str:
    """A column name on two lines, broken after the underscore that makes the longer line shortest."""
    cuts = [i + 1 for i, ch in enumerate(col) if ch == "_"]
    if not cuts:
        return col
    at = min(cuts, key=lambda i: max(i, len(col) - i))
    return col[:at] + "\n" + col[at:]


def _column_width(frame: pl.DataFrame, col: str, fold_header: bool = False) -> int:
    """The widest cell of ``col``, and its header (its longer line when the header may take two)."""
    head = max(len(line) for line in header(col).split("\n")) if fold_header else len(col)
    unknown = len(UNKNOWN_COST) if col.endswith("cost_usd") and frame[col].null_count() else 0
    return max([head, unknown] + [len(cell(v)) for v in frame[col].to_list()])


def _table_width(frame: pl.DataFrame) -> int:
    """Characters a table of ``frame`` needs with every cell whole (padding and divider: 3 per column)."""
    return sum(_column_width(frame, c) + 3 for c in frame.columns)


def fit_columns(
    frame: pl.DataFrame, width: int, widths: dict[str, int] | None = None, keep: tuple[str, ...] = ()
) -> tuple[pl.DataFrame, list[str]]:
    """The columns of ``frame``, in order, whose cells fit ``width`` whole (the first and those in ``keep``
    always, the others in the room left; ``widths``: each column's, default its widest cell), and the names of
    the columns left out."""

    def need(col: str) -> int:
        return (widths[col] if widths else _column_width(frame, col)) + 3

    must = {frame.columns[0], *(c for c in keep if c in frame.columns)} if frame.columns else set()
    used, shown = 1 + sum(need(c) for c in must), []
    for col in frame.columns:
        if col not in must:
            if used + need(col) > width:
                continue
            used += need(col)
        shown.append(col)
    return frame.select(shown), [c for c in frame.columns if c not in shown]


INTERRUPTED_EXIT = 130  # the shell's code for a command ended by Ctrl-C
DISK_FULL_EXIT = 75  # EX_TEMPFAIL (sysexits.h): a temporary failure (disk full, out of memory), rerun once resolved
_QUOTED_PATH = re.compile(r'"(/[^"]+|[A-Za-z]:\\[^"]+)"')  # DuckDB's 'Could not write file "PATH": ...'
_ctrl_c: list[int] = []  # the signal that stops this run (SIGINT, SIGTERM, SIGHUP): whatever exception follows
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # each stops a command the way Ctrl-C does


def _on_sigint(signum: int, frame: object) -> None:
    if _ctrl_c:  # already stopping: a second Ctrl-C must not break the cleanup with a traceback
        return
    if _inside(frame, _on_unraisable.__code__):  # a stop sent again (below) reached the hook before it returned
        _send_again(signum)
        return
    _ctrl_c.append(signum)
    raise Interrupted


def _inside(frame: object, code: object) -> bool:
    """Whether ``frame`` or a frame that called it runs ``code``."""
    while frame is not None:
        if getattr(frame, "f_code", None) is code:
            return True
        frame = getattr(frame, "f_back", None)
    return False


def _send_again(signum: int) -> None:
    """Send ``signum`` to this process from a helper thread a moment later: the main thread takes it in the code it
    runs then."""

    def send() -> None:
        time.sleep(0.01)
        os.kill(os.getpid(), signum)

    threading.Thread(target=send, daemon=True).start()


_unraisable_before = [sys.unraisablehook]  # the hook run_app replaced, which every other exception goes to


def _on_unraisable(unraisable: object) -> None:
    """A stop raised while a finaliser ran (a ``__del__``, a weakref callback) is lost there: Python prints it as an
    ignored exception, with a traceback, and carries on. Print nothing and send the signal again, so that it stops
    the command in the code that runs next; pass every other exception on."""
    if isinstance(getattr(unraisable, "exc_value", None), Interrupted) and _ctrl_c:
        _send_again(_ctrl_c.pop())
        return
    _unraisable_before[0](unraisable)  # type: ignore[arg-type]


def disk_full(exc: BaseException) -> str | None:
    """The path being written when ``exc``, or an error it caused or interrupted (a failed ROLLBACK after a failed
    COMMIT), was a full disk: ENOSPC (or EDQUOT, EFBIG: a quota, ``ulimit -f``) from the OS, DuckDB's "No space left
    on device"; "" when the path is not
    known; None when the disk was not full."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
            return path_text(e.filename or "")
        text = str(e)
        if any(words in text for words in ("No space left on device", "Disk quota exceeded", "File too large")):
            found = _QUOTED_PATH.search(text)
            return found.group(1) if found else ""
        todo += [e.__cause__, e.__context__]
    return None


PATH_FAULTS = (errno.EEXIST, errno.ENOTDIR, errno.EISDIR, errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOENT)


def output_folder(path: Path, option: str) -> Path:
    """Refuse, before any work, an output folder that is a file or lies under one (the work would be done and
    then lost); a missing folder is made when written."""
    blocker = next((p for p in (path, *path.parents) if p.exists()), None)
    if blocker is not None and not blocker.is_dir():
        raise ReplayError(
            f"{option} {for_terminal(path_text(path))}: {for_terminal(path_text(blocker))} is a file, not a "
            "folder; give a folder path"
        )
    return path


def output_file(path: Path, option: str) -> Path:
    """Refuse, before any work, an output file path that is a folder or lies under a file."""
    if path.is_dir():
        raise ReplayError(f"{option} {for_terminal(path_text(path))}: is a folder; give a file path in it")
    output_folder(path.parent, option)
    return path


def path_fault(exc: BaseException) -> str | None:
    """One line for an error of the file system on a named path (an output folder that is a file, a missing or
    read-only folder, no permission), or None when ``exc`` is not one."""
    if isinstance(exc, OSError) and exc.errno in PATH_FAULTS and exc.filename:
        return (
            f"{for_terminal(path_text(exc.filename))}: {exc.strerror or 'cannot be used'}; check the path (a part of "
            "it that is a file, a folder missing or not writable) and rerun; finished work is kept"
        )
    return None


def _error_line(message: str) -> None:
    """``error: message`` on stderr as one line (a terminal may fold it; rich does not wrap it); a file name, run
    id or harness name from a log in it has its controls, line breaks included, made visible."""
    message = for_terminal(message)
    Console(stderr=True, soft_wrap=True).print(Text.assemble(("error:", "bold red"), f" {message}"), highlight=False)


def run_app(app: typer.Typer) -> None:
    """Run the CLI, turning ReplayError into a one-line message and exit code 2, Ctrl-C into one line and 130
    (also when it surfaced as another error: DuckDB reports an interrupted statement as its own exception), a full
    disk into one line and 75 (every transaction committed before it is kept; the rerun continues)."""
    _ctrl_c.clear()  # a Ctrl-C seen by an earlier run in this process (tests run the CLI in-process) is not this one's
    previous = {s: signal.signal(s, _on_sigint) for s in STOP_SIGNALS}
    _unraisable_before[0], sys.unraisablehook = sys.unraisablehook, _on_unraisable
    try:
        _run(app)
    finally:
        sys.unraisablehook = _unraisable_before[0]
        if not _ctrl_c:  # after a stop they stay ignored (below); otherwise the caller's handlers come back
            for s, handler in previous.items():
                signal.signal(s, handler)


def _run(app: typer.Typer) -> None:
    try:
        app()
    except SystemExit:
        raise
    except BaseException as exc:
        if not _ctrl_c and (path := disk_full(exc)) is not None:
            _error_line(
                f"disk full while writing {for_terminal(path) or 'the store or an output file'}: free space (or "
                "raise the quota or file size limit) and rerun the same command; finished work is kept"
            )
            raise SystemExit(DISK_FULL_EXIT) from None
        if not _ctrl_c and isinstance(exc, (MemoryError, duckdb.OutOfMemoryException)):
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else "MemoryError"
            _error_line(
                f"out of memory ({detail}): finished work is kept; free memory, lower --workers, or raise "
                "DuckDB's limit (SET memory_limit in the store), then rerun the same command"
            )
            raise SystemExit(DISK_FULL_EXIT) from None
        if isinstance(exc, ReplayError) and not _ctrl_c:
            _error_line(str(exc))
            raise SystemExit(2) from None
        if not _ctrl_c and (bad_path := path_fault(exc)):
            _error_line(bad_path)
            raise SystemExit(2) from None
        if not _ctrl_c:
            raise
        signum = _ctrl_c[0]
        how = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
        Console(stderr=True, soft_wrap=True).print(
            f"interrupted ({how}): work committed so far is kept (each file, each batch of sweep points is one "
            "transaction); rerun the same command to continue",
            highlight=False,
        )
        # ignored, not handled, from here: Python's finalisation resets a Python handler to the default, so a
        # further signal while worker pools shut down would kill the process (exit -2) instead of 128 + signal
        for s in STOP_SIGNALS:
            signal.signal(s, signal.SIG_IGN)
        raise SystemExit(INTERRUPTED_EXIT if signum == signal.SIGINT else 128 + signum) from None
