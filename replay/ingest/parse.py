"""Read one log file or run folder into store-ready rows: the part of ingest that runs in worker processes.

A worker hashes, parses and splits records into columns, and types them as Arrow tables batch by batch
(:func:`batches`), each column list released as its batch is made; the parent, the single writer, inserts the batches
(Arrow buffers: cheap to pickle), one transaction per file (``replay.ingest``). Typing in the parent took a tenth of
its time, and the parent is what an ingest waits for.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shutil
import signal
import tempfile
from collections import deque
from collections.abc import Iterator, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import Any, cast

import pyarrow as pa

from replay.errors import ReplayError
from replay.ingest.companions import rule_for
from replay.ingest.not_runs import NoRun, empty, no_conversation, why_no_run
from replay.model import BadRecord, Item, Request, Run, content_hash, dumps
from replay.readers import detect, folder_reader, formats, reader_key
from replay.readers.base import (
    HEAD_BYTES,
    MAX_RECORD_BYTES,
    ReadContext,
    Reader,
    decode_head,
    is_compressed,
    open_decompressed,
    open_log,
    read_isolated,
)
from replay.readers.builder import WARNINGS_KEY
from replay.untrusted import path_text

_S, _I = pa.large_string(), pa.int64()
# The store's columns, in table order, as Arrow types (replay/store/schema.py).
RUN_SCHEMA: dict[str, pa.DataType] = {
    "run_id": _S,
    "file_hash": _S,
    "format": _S,
    "source_path": _S,
    "model": _S,
    "harness": _S,
    "started_at": _S,
    "parent_run_id": _S,
    "n_requests": _I,
    "metadata": _S,
}
ITEM_SCHEMA: dict[str, pa.DataType] = {
    "run_id": _S,
    "seq": _I,
    "step": _I,
    "turn": _I,
    "role": _S,
    "kind": _S,
    "tool_name": _S,
    "call_id": _S,
    "args": _S,
    "text": _S,
    "is_error": pa.bool_(),
    "resource": _S,
    "access": _S,
    "content_hash": _S,
    "chars": _I,
    "ts": _S,
    "line": _I,
}
REQUEST_SCHEMA: dict[str, pa.DataType] = {
    "run_id": _S,
    "step": _I,
    "ts": _S,
    "input_tokens": _I,
    "cache_read": _I,
    "cache_write": _I,
    "output_tokens": _I,
    "prompt_tokens": _I,
    "model": _S,
    "line": _I,
    "cache_write_1h": _I,
}
ITEM_COLUMNS = list(ITEM_SCHEMA)[:13]  # read from the Item; the rest are derived
EMPTY: Mapping[str, str] = {}


@dataclass
class Parsed:
    """One unit as read: its status and, when read, its rows as columns in the store's column order."""

    path: Path
    status: str  # ingested (read, to be written) | unchanged | no run | unknown | failed
    bytes: int
    file_hash: str | None = None  # None: the content could not even be hashed
    format: str | None = None
    bad: list[BadRecord] = field(default_factory=list)
    warnings: list[BadRecord] = field(default_factory=list)  # read and stored, but worth knowing (file and line)
    runs: dict[str, list] | None = None  # column -> values, in the store's column order (until typed)
    items: dict[str, list] | None = None
    requests: dict[str, list] | None = None
    tables: list[tuple[str, pa.Table]] = field(default_factory=list)  # the rows typed: (table, batch), in order
    largest: int = 0  # characters of the longest item
    reader: str | None = None  # the reader that read it (replay.readers.reader_key), as files.reader_version
    reread: bool = False  # in the store already, read by an earlier version of its reader: read again
    no_run: str | None = None  # status "no run": what holds no run (replay.ingest.not_runs.NoRun.kind)


def members(path: Path) -> list[Path]:
    """The files a unit reads: itself, or a run folder's members (an unreadable folder: itself)."""
    try:
        found = folder_reader(path) if path.is_dir() else None
    except OSError:
        found = None
    return found[1] if found else [path]


def unit_size(path: Path) -> int:
    """Bytes of a unit's files (0 for what cannot be looked at: its read reports why)."""
    try:
        return sum(f.stat().st_size for f in members(path))
    except OSError:
        return 0


def _not_a_unit(path: Path) -> str | None:
    """Why a folder given as a unit cannot be read (unreadable, or not one run), or None for a file or run folder."""
    try:
        if not path.is_dir() or folder_reader(path) is not None:
            return None
        os.listdir(path)
    except OSError as exc:
        return (
            f"cannot read this folder ({exc.strerror or exc}): the logs in it were not read; give read access "
            "(chmod u+rx) and rerun, or leave it out"
        )
    return "a folder that is not one run; give the files in it, or the folder above it"


def file_hash(path: Path) -> str:
    """Content hash of a file (of its decompressed content when compressed) or of a run folder's members."""
    h = hashlib.blake2b(digest_size=16)
    for member in members(path):
        if path.is_dir():
            h.update(member.relative_to(path).as_posix().encode() + b"\0")
        with open_decompressed(member) if is_compressed(member) else member.open("rb") as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
    return h.hexdigest()


def decompressed(path: Path, folder: Path) -> Path:
    """A plain copy of a compressed file, named as the file inside (x.jsonl.gz -> x.jsonl)."""
    plain = folder / path.with_suffix("").name
    with open_decompressed(path) as src, plain.open("wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    return plain


def reread_warning(old: str, new: str) -> BadRecord:
    """The warning for a file read again because its reader changed version since it was ingested."""
    return BadRecord(
        0,
        f"read again: ingested by reader {old}, and {new} reads this format differently; its runs were replaced "
        "(rerun what you simulated or counted on them)",
        "",
    )


def _built_in(reader: Reader) -> bool:
    """Whether ``reader`` is one of replay's own (they read compressed files as streams)."""
    return type(reader).__module__.startswith("replay.readers.")


def parse_unit(path: Path, max_line_bytes: int = MAX_RECORD_BYTES, known: Mapping[str, str] = EMPTY) -> Parsed:
    """Hash and read one unit; a unit whose hash is in ``known`` (already in the store: hash -> the reader that read
    it) is not read again unless its reader has changed version since (then it is read again, with a warning)."""
    out = Parsed(path=path, status="ingested", bytes=unit_size(path))
    if (reason := _not_a_unit(path)) is not None:
        out.status, out.bad = "failed", [BadRecord(0, reason, "")]
        return out
    try:
        out.file_hash = fhash = file_hash(path)
    except ReplayError as exc:  # a damaged, mislabelled or oversized compressed file, zstandard missing
        out.status, out.bad = "failed", [BadRecord(0, str(exc), "")]
        return out
    except (OSError, EOFError, ValueError) as exc:
        out.status, out.bad = "failed", [BadRecord(0, f"cannot read: {exc}", "")]
        return out
    try:
        reader = detect(path)  # a compressed file is sniffed through its decompressed head
    except ReplayError as exc:
        out.status, out.bad = "failed", [BadRecord(0, str(exc), "")]
        return out
    if fhash in known:
        if reader is None or (key := reader_key(reader)) == known[fhash]:
            out.status = "unchanged"
            return out
        out.reread = True
        out.warnings.append(reread_warning(known[fhash], key))
    if reader is None and not path.is_dir() and (nothing := empty(path)) is not None:
        return _holds_no_run(out, nothing)
    if reader is None:
        out.status = "unknown"
        no_run, rule = _no_run(path), rule_for(path)
        if no_run is not None:
            out.bad = [BadRecord(no_run[0], no_run[1], "")]
            return out
        reason = (
            f"unknown format: named like {rule.harness}'s {rule.shown}, a file written beside its logs that holds no"
            " run (no model call or usage; docs/readers.md lists them): if it is that, ingest the session's log"
            " instead, else convert it to the canonical JSONL format described in docs/canonical-format.md"
            if rule
            else f"unknown format (not one of: {', '.join(formats())}); convert it to the "
            "canonical JSONL format described in docs/canonical-format.md"
        )
        out.bad = [BadRecord(0, reason, "")]
        return out
    out.format, out.reader = reader.format, reader_key(reader)
    # built-in readers decompress as they read (replay.readers.base.open_log); a plugin reader may open the path
    # itself, so it alone is given a plain temporary copy of a compressed file
    copy = is_compressed(path) and not _built_in(reader)
    with tempfile.TemporaryDirectory(prefix="replay-") if copy else nullcontext() as tmp:
        try:
            plain = decompressed(path, Path(tmp)) if tmp is not None else path  # a folder only for a copy
        except ReplayError as exc:
            out.status, out.bad = "failed", [BadRecord(0, str(exc), "")]
            return out
        except OSError as exc:  # the temporary folder is full or not writable
            reason = (
                f"cannot write its decompressed copy in {path_text(tmp)} ({exc.strerror or exc}) for the "
                f"{reader.format} reader plugin: free space there, set TMPDIR to a folder with room, or decompress "
                "the file first"
            )
            out.status, out.bad = "failed", [BadRecord(0, reason, "")]
            return out
        ctx = ReadContext(path=plain, file_hash=fhash, max_line_bytes=max_line_bytes)
        try:
            records = read_isolated(reader, ctx)
        except ReplayError as exc:  # a compressed file damaged past its head, or past its size bound
            out.status, out.bad = "failed", [BadRecord(0, str(exc), "")]
            return out
        except Exception as exc:  # a reader bug must not stop the whole ingest
            out.status = "failed"
            out.bad = [
                BadRecord(
                    0,
                    f"the {reader.format} reader failed: {type(exc).__name__}: {exc}; please report it with this file",
                    "",
                )
            ]
            return out
    if not any(isinstance(r, Run | BadRecord) for r in records):
        return _holds_no_run(out, no_conversation(reader.format))
    if plain != path:
        records = [replace(r, source_path=str(path)) if isinstance(r, Run) else r for r in records]
    _columns(out, records)
    del records  # the columns hold the values now, each list released as its batch is typed
    out.largest = max(cast(dict[str, list], out.items)["chars"], default=0)  # set by _columns
    try:
        out.tables = list(batches(out, BATCH_ROWS, BATCH_CHARS))
    except ReplayError as exc:  # nothing written: the file is quarantined whole, with the reason
        out.status, out.bad, out.tables = "failed", [BadRecord(0, str(exc), "")], []
    out.runs = out.items = out.requests = None
    return out


def _holds_no_run(out: Parsed, why: NoRun) -> Parsed:
    """``out`` as a unit that holds no run: skipped when found in a folder, an error (``bad``) when named."""
    out.status, out.no_run, out.bad = "no run", why.kind, [BadRecord(0, why.reason, "")]
    return out


def _no_run(path: Path) -> tuple[int, str] | None:
    """(line, reason) when ``path`` is a harness log known to hold no run (``replay.ingest.not_runs``)."""
    if path.is_dir():
        return None
    try:
        with open_log(path) as fh:
            head = decode_head(fh.read(HEAD_BYTES))
    except (OSError, EOFError, ValueError, ReplayError):
        return None
    return why_no_run(head)


BATCH_ROWS = 50_000
BATCH_CHARS = 32 * 2**20  # item text and arguments per batch: bounds the typed copy of a file's rows


def batches(parsed: Parsed, rows: int = BATCH_ROWS, chars: int = BATCH_CHARS) -> Iterator[tuple[str, pa.Table]]:
    """The parsed columns as Arrow tables typed as the store's tables, ``(table, rows)`` per batch: at most ``rows``
    rows and, for items, about ``chars`` characters of text (one larger item is a batch of its own). Values are
    released from ``parsed`` as their batch is made.

    Raises ReplayError naming the reader when it gave a value its column cannot hold."""
    for name, schema in (("runs", RUN_SCHEMA), ("items", ITEM_SCHEMA), ("requests", REQUEST_SCHEMA)):
        columns: dict[str, list] = getattr(parsed, name) or {}
        sizes = columns.get("chars") if name == "items" else None
        while columns and (left := len(next(iter(columns.values())))):
            n = min(rows, left)
            if sizes:
                n = _fits(sizes, n, chars)
            yield name, _table(parsed, _take(columns, n), schema)  # no name here keeps the batch alive


def _take(columns: dict[str, list], n: int) -> dict[str, list]:
    """The first ``n`` values of every column, removed from ``columns``."""
    taken = {c: values[:n] for c, values in columns.items()}
    for values in columns.values():
        del values[:n]
    return taken


def _fits(sizes: list[int], n: int, chars: int) -> int:
    """How many of the first ``n`` rows fit in ``chars`` characters (at least one)."""
    total = 0
    for i, size in enumerate(islice(sizes, n)):
        total += size
        if total > chars:
            return max(1, i)
    return n


# The system allocator: a batch's buffers go back to the OS when it is inserted (Arrow's default pool keeps them)
_POOL = pa.system_memory_pool()


def _table(parsed: Parsed, columns: dict[str, list], schema: dict[str, pa.DataType]) -> pa.Table:
    lines = columns.get("line")
    try:
        arrays = {}
        for c, kind in schema.items():
            values = columns.pop(c)
            try:
                arrays[c] = _array(values, kind)
            except UnicodeEncodeError:  # a lone surrogate ("\\ud800" in JSON): not Unicode the store can hold
                arrays[c] = _array(_unpaired(parsed, c, values, lines), kind)
        return pa.table(arrays)
    except (TypeError, OverflowError, ValueError, pa.ArrowException) as exc:
        raise ReplayError(
            f"the {parsed.format} reader gave a value the store cannot hold ({type(exc).__name__}: "
            f"{str(exc)[:300]}); please report it with this file"
        ) from exc


_SURROGATE = re.compile("[\ud800-\udfff]")


def _unpaired(parsed: Parsed, column: str, values: list, lines: list | None) -> list:
    """``values`` with each lone UTF-16 surrogate as U+FFFD, and a warning naming the lines changed."""
    fixed = [_SURROGATE.sub("\ufffd", v) if isinstance(v, str) else v for v in values]
    changed = [(lines[i] if lines else None) or 0 for i, (a, b) in enumerate(zip(values, fixed, strict=True)) if a != b]
    shown = ", ".join(map(str, sorted(set(changed))[:10]))
    parsed.warnings.append(
        BadRecord(
            changed[0] if changed else 0,
            f"{column}: {len(changed)} values held lone UTF-16 surrogates (e.g. a \\ud800 escape), invalid Unicode the "
            f"store cannot hold; stored with U+FFFD in their place (lines {shown})",
            "",
        )
    )
    return fixed


def _array(values: list, kind: pa.DataType) -> pa.Array:
    """``values`` as an Arrow array of ``kind``; whole numbers only in an integer column (a bool counts as 0/1, a
    float is refused rather than truncated)."""
    if kind != _I:
        return pa.array(values, kind, memory_pool=_POOL)
    found = pa.array(values, memory_pool=_POOL)
    if not (pa.types.is_integer(found.type) or pa.types.is_boolean(found.type) or pa.types.is_null(found.type)):
        raise TypeError(f"expected whole numbers, got {found.type} (e.g. {next(v for v in values if v is not None)!r})")
    return found if found.type == _I else found.cast(_I, memory_pool=_POOL)


def _columns(out: Parsed, records: list) -> None:
    """Split records by kind into the store's columns (item hashes and run metadata JSON computed here)."""
    runs: list[Run] = []
    items: list[Item] = []
    reqs: list[Request] = []
    for r in records:
        if isinstance(r, Item):
            items.append(r)
        elif isinstance(r, Request):
            reqs.append(r)
        elif isinstance(r, Run):
            runs.append(r)
        elif isinstance(r, BadRecord):
            out.bad.append(r)
    out.warnings += [  # after any said before the read (a re-read)
        BadRecord(w.get("line") or 0, str(w.get("message")), "") for r in runs for w in r.metadata.get(WARNINGS_KEY, [])
    ]
    stamps = _Timestamps(out.bad)
    per_run = {r.run_id: 0 for r in runs}
    for q in reqs:
        per_run[q.run_id] = max(per_run.get(q.run_id, 0), q.step + 1)
    out.runs = {
        "run_id": [r.run_id for r in runs],
        "file_hash": [out.file_hash] * len(runs),
        "format": [r.format for r in runs],
        "source_path": [path_text(r.source_path) for r in runs],
        "model": [r.model for r in runs],
        "harness": [r.harness for r in runs],
        "started_at": [stamps.iso(r.started_at, 0) for r in runs],
        "parent_run_id": [r.parent_run_id for r in runs],
        "n_requests": [per_run[r.run_id] for r in runs],
        "metadata": [dumps(r.metadata) for r in runs],
    }
    columns = {c: [getattr(i, c) for i in items] for c in ITEM_COLUMNS}
    payloads = [i.payload for i in items]
    columns["content_hash"] = [content_hash(p) for p in payloads]
    columns["chars"] = [len(p) for p in payloads]
    columns["ts"] = [stamps.iso(i.ts, i.line) for i in items]
    columns["line"] = [i.line for i in items]
    out.items = columns
    out.requests = {c: [getattr(q, c) for q in reqs] for c in REQUEST_SCHEMA}
    out.requests["ts"] = [stamps.iso(q.ts, q.line) for q in reqs]


class _Timestamps:
    """Timestamps as the store keeps them (text): a number is an epoch (seconds, or milliseconds when larger than
    1e11) written as ISO-8601 UTC; anything else that is not text costs its field, with a quarantine entry naming
    the line, never the file."""

    def __init__(self, bad: list[BadRecord]) -> None:
        self.bad = bad
        self.reported: set[int | None] = set()  # lines already quarantined (None: no line)

    def iso(self, value: Any, line: int | None) -> str | None:
        if value is None or isinstance(value, str):
            return value
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            try:
                when = datetime.fromtimestamp(value / 1000 if abs(value) > 1e11 else value, UTC)
                return when.isoformat().replace("+00:00", "Z")
            except (OverflowError, OSError, ValueError):
                pass
        if line not in self.reported:
            self.reported.add(line)
            reason = f"timestamp {value!r:.80} is neither ISO-8601 text nor an epoch number; record kept without it"
            self.bad.append(BadRecord(line or 0, reason, ""))
        return None


# -- the worker pool ---------------------------------------------------------------------------------------------

_KNOWN: Mapping[str, str] = EMPTY
_MAX_LINE = MAX_RECORD_BYTES


def _init(known: Mapping[str, str], max_line_bytes: int) -> None:
    global _KNOWN, _MAX_LINE
    _KNOWN, _MAX_LINE = known, max_line_bytes
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's: a worker dying of it would hang the pool


def _work(path: Path) -> Parsed:
    return parse_unit(path, _MAX_LINE, _KNOWN)


# Past two units a worker, more are read ahead while the units in flight hold this much: results are taken in order,
# so with only two a worker, workers sat idle while the parent waited for a larger file or stored one
READ_AHEAD_BYTES = 32 << 20


def parse_units(
    units: list[Path], max_line_bytes: int = MAX_RECORD_BYTES, known: Mapping[str, str] = EMPTY, workers: int = 0
) -> Iterator[Parsed]:
    """Each unit parsed, in order: on a process pool of ``workers`` (0: every core) when there is more than one
    unit, else in this process. Two units per worker are read ahead, more while the units in flight hold at most
    READ_AHEAD_BYTES, so memory stays bounded by the largest few files, not by the corpus."""
    n = min(workers or default_workers(), len(units))
    if n <= 1:
        for u in units:
            yield parse_unit(u, max_line_bytes, known)
        return
    import multiprocessing as mp

    # forkserver, never fork: forking a parent whose polars/numba/DuckDB threads are running crashed a worker
    # in garbage collection (seen under pytest); the server imports the readers once and forks workers from a
    # single-threaded process
    method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    context = mp.get_context(method)
    if method == "forkserver":
        # a worker re-runs the caller's script (multiprocessing does, unless it runs as `python -m`): a script that
        # imports replay.ingest and replay.store then imported DuckDB in every worker of every pool; preloaded
        # here, the server imports them once, and what a worker would load at its first file (replay.ingest.preload)
        context.set_forkserver_preload([__name__, "replay.ingest", "replay.store", "replay.ingest.preload"])
    pool = _pool(context, n, known, max_line_bytes)
    try:
        todo = deque((u, unit_size(u)) for u in units)
        pending: deque[tuple[Any, int]] = deque()
        flight = 0  # bytes of the units submitted and not yet taken
        while todo or pending:
            while todo and (len(pending) < 2 * n or flight + todo[0][1] <= READ_AHEAD_BYTES):
                unit, size = todo.popleft()
                pending.append((pool.apply_async(_work, (unit,)), size))
                flight += size
            result, size = pending.popleft()
            parsed = result.get()
            flight -= size
            yield parsed
    finally:
        # close and join, never terminate: terminate deadlocks when a worker is sending a large result as the
        # result thread stops (seen on Ctrl-C); the read-ahead is bounded, so the units in flight finish soon
        pool.close()
        pool.join()


def _pool(context: Any, n: int, known: Mapping[str, str], max_line_bytes: int) -> Any:
    """The worker pool, its workers born ignoring Ctrl-C (the parent stops them cleanly; a worker that died of it
    would print a traceback or hang the pool)."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return context.Pool(n, initializer=_init, initargs=(known, max_line_bytes))
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return context.Pool(n, initializer=_init, initargs=(known, max_line_bytes))
    finally:
        signal.signal(signal.SIGINT, previous)


def default_workers() -> int:
    """REPLAY_WORKERS, else every core, capped by the usable cores and the available memory
    (:func:`replay.worker_limits.cap_workers`)."""
    from replay.worker_limits import cap_workers

    value = os.environ.get("REPLAY_WORKERS", "0")
    try:
        requested = int(value)
    except ValueError:
        raise ReplayError(f"REPLAY_WORKERS={value!r}: expected a whole number of worker processes") from None
    return cap_workers(requested, option="REPLAY_WORKERS")[0]
