"""Ingest log files into the store: one file, one transaction; re-ingesting is a no-op."""

from __future__ import annotations

import glob
import hashlib
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pyarrow as pa

from replay.errors import ReplayError
from replay.model import BadRecord, Item, Request, Run, dumps
from replay.readers import detect, folder_reader, formats
from replay.readers.base import MAX_LINE_BYTES, ReadContext, is_compressed, open_decompressed

SKIP_NAMES = {"MANIFEST.md", "README.md", "LICENSE"}


@dataclass
class FileOutcome:
    path: Path
    status: str  # ingested | unchanged | unknown | failed
    format: str | None = None
    runs: int = 0
    items: int = 0
    requests: int = 0
    bad: list[BadRecord] = field(default_factory=list)
    bytes: int = 0


def expand_paths(paths: Iterable[str | Path]) -> list[Path]:
    """Files named directly, found under directories, or matched by globs, sorted and unique.

    A folder that is one run (an OpenHands V1 conversation, a Cline task) is returned as the folder itself,
    not as its files."""
    found: set[Path] = set()
    for p in map(str, paths):
        matches = [Path(m) for m in glob.glob(p, recursive=True)] or [Path(p)]
        for m in matches:
            if m.is_dir():
                _walk(m, found)
            elif m.is_file():
                found.add(_unit_of(m))
            else:
                raise FileNotFoundError(f"{p}: no such file, directory or glob match")
    return sorted(f for f in found if f.name not in SKIP_NAMES)


def _unit_of(path: Path) -> Path:
    """A file named directly, or the run folder it belongs to (a Cline task's ui_messages.json, an OpenHands V1
    conversation's base_state.json or event file): the run is read whole."""
    for folder in (path.parent.parent, path.parent):  # the outer one first: a conversation, not its events folder
        found = folder_reader(folder)
        if found and path in found[1]:
            return folder
    return path


def _walk(folder: Path, found: set[Path]) -> None:
    if folder_reader(folder):
        found.add(folder)
        return
    for child in folder.iterdir():
        if child.is_dir() and not child.is_symlink():  # as rglob: linked folders are not followed
            _walk(child, found)
        elif child.is_file() and not child.name.startswith("."):
            found.add(child)


def _members(path: Path) -> list[Path]:
    """The files a unit reads: itself, or a run folder's members."""
    found = folder_reader(path) if path.is_dir() else None
    return found[1] if found else [path]


def unit_size(path: Path) -> int:
    return sum(f.stat().st_size for f in _members(path))


def file_hash(path: Path) -> str:
    """Content hash of a file (of its decompressed content when compressed) or of a run folder's members."""
    h = hashlib.blake2b(digest_size=16)
    members = _members(path)
    for member in members:
        if path.is_dir():
            h.update(member.relative_to(path).as_posix().encode() + b"\0")
        with (open_decompressed(member) if is_compressed(member) else member.open("rb")) as fh:
            while chunk := fh.read(1 << 20):
                h.update(chunk)
    return h.hexdigest()


def _table(rows: list, columns: list[str], extra: Callable[[object], dict] | None = None) -> pa.Table:
    data = {c: [getattr(r, c) for r in rows] for c in columns}
    if extra:
        for key, values in _transpose([extra(r) for r in rows]).items():
            data[key] = values
    return pa.table(data)


def _transpose(dicts: list[dict]) -> dict[str, list]:
    keys = dicts[0].keys() if dicts else []
    return {k: [d[k] for d in dicts] for k in keys}


ITEM_COLUMNS = ["run_id", "seq", "step", "turn", "role", "kind", "tool_name", "call_id", "args", "text",
                "is_error", "resource", "access"]
REQUEST_COLUMNS = ["run_id", "step", "ts", "input_tokens", "cache_read", "cache_write", "output_tokens",
                   "prompt_tokens", "model", "line"]


def _item_extra(item: Item) -> dict:
    payload = item.payload
    return {"content_hash": item.content_hash, "chars": len(payload), "ts": item.ts, "line": item.line}


def _write(con: duckdb.DuckDBPyConnection, out: FileOutcome, fhash: str, records: list,
           older: list[str] | None = None) -> None:
    runs = [r for r in records if isinstance(r, Run)]
    items = [r for r in records if isinstance(r, Item)]
    reqs = [r for r in records if isinstance(r, Request)]
    per_run = {r.run_id: 0 for r in runs}
    for q in reqs:
        per_run[q.run_id] = max(per_run.get(q.run_id, 0), q.step + 1)
    now = datetime.now(UTC)
    con.execute("BEGIN")
    try:
        con.execute("DELETE FROM quarantine WHERE file_hash = ?", [fhash])
        for old in older or []:
            _delete_file(con, old)
        for run in runs:
            con.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?)",
                        [run.run_id, fhash, run.format, run.source_path, run.model, run.harness, run.started_at,
                         run.parent_run_id, per_run[run.run_id], dumps(run.metadata)])
        if items:
            items_tbl = _table(items, ITEM_COLUMNS, _item_extra)  # noqa: F841 (read by DuckDB)
            con.execute("INSERT INTO items SELECT * FROM items_tbl")
        if reqs:
            reqs_tbl = _table(reqs, REQUEST_COLUMNS)  # noqa: F841
            con.execute("INSERT INTO requests SELECT * FROM reqs_tbl")
        _quarantine(con, fhash, out.path, out.bad, now)
        con.execute("INSERT INTO files VALUES (?,?,?,?,?,?,?,?,?)",
                    [fhash, str(out.path), out.format, out.bytes, len(runs), len(items), len(reqs), len(out.bad), now])
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    out.runs, out.items, out.requests = len(runs), len(items), len(reqs)


def _delete_file(con: duckdb.DuckDBPyConnection, fhash: str) -> None:
    """Remove an ingested file version and everything read from it (inside the caller's transaction)."""
    for table in ("items", "requests"):
        con.execute(f"DELETE FROM {table} WHERE run_id IN (SELECT run_id FROM runs WHERE file_hash = ?)", [fhash])
    for table in ("runs", "quarantine", "files"):
        con.execute(f"DELETE FROM {table} WHERE file_hash = ?", [fhash])


def _quarantine(con: duckdb.DuckDBPyConnection, fhash: str, path: Path, bad: list[BadRecord], now: datetime) -> None:
    if bad:
        con.executemany("INSERT INTO quarantine VALUES (?,?,?,?,?,?)",
                        [[fhash, str(path), b.line, b.reason, b.raw[:100_000], now] for b in bad])


def ingest_file(con: duckdb.DuckDBPyConnection, path: Path, max_line_bytes: int = MAX_LINE_BYTES,
                replace_older: bool = False) -> FileOutcome:
    """Ingest one file (or run folder) in one transaction; a file already ingested is left alone.

    ``replace_older``: an earlier version of the same path (e.g. a session file that has since grown) is
    deleted in the same transaction, so the run is replaced rather than duplicated."""
    out = FileOutcome(path=path, status="ingested", bytes=unit_size(path))
    try:
        fhash = file_hash(path)
    except (ReplayError, OSError, EOFError, ValueError) as exc:  # unreadable compressed file, missing zstandard
        out.status = "failed"
        out.bad = [BadRecord(0, f"cannot read: {exc}", "")]
        _replace_quarantine(con, "path:" + str(path), path, out.bad)
        return out
    if con.execute("SELECT 1 FROM files WHERE file_hash = ?", [fhash]).fetchone():
        out.status = "unchanged"
        return out
    with tempfile.TemporaryDirectory(prefix="replay-") as tmp:
        plain = _decompressed(path, Path(tmp)) if is_compressed(path) else path
        reader = detect(plain)
        if reader is None:
            out.status = "unknown"
            out.bad = [BadRecord(0, f"unknown format (not one of: {', '.join(formats())}); convert it to the "
                                 "canonical JSONL format described in docs/canonical-format.md", "")]
            _replace_quarantine(con, fhash, path, out.bad)
            return out
        out.format = reader.format
        ctx = ReadContext(path=plain, file_hash=fhash, max_line_bytes=max_line_bytes)
        try:
            records = list(reader.read(ctx))
        except Exception as exc:  # a reader bug must not stop the whole ingest
            out.status = "failed"
            out.bad = [BadRecord(0, f"the {reader.format} reader failed: {type(exc).__name__}: {exc}; "
                                 "please report it with this file", "")]
            _replace_quarantine(con, fhash, path, out.bad)
            return out
    if plain != path:
        records = [replace(r, source_path=str(path)) if isinstance(r, Run) else r for r in records]
    out.bad = [r for r in records if isinstance(r, BadRecord)]
    older = [row[0] for row in con.execute("SELECT file_hash FROM files WHERE path = ? AND file_hash <> ?",
                                           [str(path), fhash]).fetchall()] if replace_older else []
    _write(con, out, fhash, [r for r in records if not isinstance(r, BadRecord)], older)
    return out


def _decompressed(path: Path, folder: Path) -> Path:
    """A plain copy of a compressed file, named as the file inside (x.jsonl.gz -> x.jsonl)."""
    plain = folder / path.with_suffix("").name
    with open_decompressed(path) as src, plain.open("wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    return plain


def _replace_quarantine(con: duckdb.DuckDBPyConnection, fhash: str, path: Path, bad: list[BadRecord]) -> None:
    con.execute("BEGIN")
    con.execute("DELETE FROM quarantine WHERE file_hash = ?", [fhash])
    _quarantine(con, fhash, path, bad, datetime.now(UTC))
    con.execute("COMMIT")


def ingest(con: duckdb.DuckDBPyConnection, paths: Iterable[str | Path], progress: bool = False,
           max_line_bytes: int = MAX_LINE_BYTES, replace_older: bool = False) -> list[FileOutcome]:
    """Ingest every file under ``paths``; each file commits on its own, so an interrupted ingest resumes."""
    files = expand_paths(paths)
    return list(_run(con, files, progress, max_line_bytes, replace_older))


def ingest_units(con: duckdb.DuckDBPyConnection, units: list[Path], progress: bool = False,
                 max_line_bytes: int = MAX_LINE_BYTES, replace_older: bool = False) -> Iterator[FileOutcome]:
    """Ingest files and run folders already listed (e.g. by :func:`expand_paths` or discovery)."""
    return _run(con, units, progress, max_line_bytes, replace_older)


def _run(con: duckdb.DuckDBPyConnection, files: list[Path], progress: bool,
         max_line_bytes: int, replace_older: bool = False) -> Iterator[FileOutcome]:
    if not progress:
        for f in files:
            yield ingest_file(con, f, max_line_bytes, replace_older)
        return
    from replay.progress import bar

    with bar() as pb:
        sizes = {f: unit_size(f) for f in files}
        task = pb.add_task("ingest", total=sum(sizes.values()))
        for f in files:
            pb.update(task, description=f"ingest {f.name[:40]}")
            yield ingest_file(con, f, max_line_bytes, replace_older)
            pb.advance(task, sizes[f])


def _signature(path: Path) -> tuple[tuple[str, int, int], ...]:
    """Cheap change detector: (member, size, mtime) of a file or run folder's members."""
    return tuple((str(m), (st := m.stat()).st_size, st.st_mtime_ns) for m in _members(path) if m.exists())


def watch(con: duckdb.DuckDBPyConnection, sources: Callable[[], list[Path]], interval: float = 2.0,
          polls: int | None = None, report: Callable[[FileOutcome], None] | None = None,
          after_poll: Callable[[int], None] | None = None, max_line_bytes: int = MAX_LINE_BYTES) -> int:
    """Poll ``sources()`` every ``interval`` seconds and ingest what is new or has changed.

    A changed file (a session that grew) replaces its earlier version: the same path keeps one version in the
    store, so a run is updated, never duplicated. Runs until interrupted, or ``polls`` polls; returns the number
    of files ingested."""
    import time

    seen: dict[Path, tuple] = {}
    ingested, n = 0, 0
    while polls is None or n < polls:
        if n:
            time.sleep(interval)
        for path in sources():
            try:
                sig = _signature(path)
            except OSError:  # removed or replaced while we looked: next poll
                continue
            if seen.get(path) == sig:
                continue
            out = ingest_file(con, path, max_line_bytes, replace_older=True)
            seen[path] = sig
            if out.status == "ingested":
                ingested += 1
            if report and out.status != "unchanged":
                report(out)
        n += 1
        if after_poll:
            after_poll(n)
    return ingested
