"""Ingest log files into the store: one file, one transaction; re-ingesting is a no-op."""

from __future__ import annotations

import glob
import hashlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pyarrow as pa

from replay.model import BadRecord, Item, Request, Run, dumps
from replay.readers import detect, formats
from replay.readers.base import MAX_LINE_BYTES, ReadContext

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
    """Files named directly, found under directories, or matched by globs, sorted and unique."""
    found: set[Path] = set()
    for p in map(str, paths):
        matches = [Path(m) for m in glob.glob(p, recursive=True)] or [Path(p)]
        for m in matches:
            if m.is_dir():
                found.update(f for f in m.rglob("*") if f.is_file() and not f.name.startswith("."))
            elif m.is_file():
                found.add(m)
            else:
                raise FileNotFoundError(f"{p}: no such file, directory or glob match")
    return sorted(f for f in found if f.name not in SKIP_NAMES)


def file_hash(path: Path) -> str:
    h = hashlib.blake2b(digest_size=16)
    with path.open("rb") as fh:
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


def _write(con: duckdb.DuckDBPyConnection, out: FileOutcome, fhash: str, records: list) -> None:
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


def _quarantine(con: duckdb.DuckDBPyConnection, fhash: str, path: Path, bad: list[BadRecord], now: datetime) -> None:
    if bad:
        con.executemany("INSERT INTO quarantine VALUES (?,?,?,?,?,?)",
                        [[fhash, str(path), b.line, b.reason, b.raw[:100_000], now] for b in bad])


def ingest_file(con: duckdb.DuckDBPyConnection, path: Path, max_line_bytes: int = MAX_LINE_BYTES) -> FileOutcome:
    """Ingest one file in one transaction; a file already ingested is left alone."""
    fhash = file_hash(path)
    out = FileOutcome(path=path, status="ingested", bytes=path.stat().st_size)
    if con.execute("SELECT 1 FROM files WHERE file_hash = ?", [fhash]).fetchone():
        out.status = "unchanged"
        return out
    reader = detect(path)
    if reader is None:
        out.status = "unknown"
        out.bad = [BadRecord(0, f"unknown format (not one of: {', '.join(formats())}); convert it to the "
                             "canonical JSONL format described in docs/canonical-format.md", "")]
        _replace_quarantine(con, fhash, path, out.bad)
        return out
    out.format = reader.format
    ctx = ReadContext(path=path, file_hash=fhash, max_line_bytes=max_line_bytes)
    try:
        records = list(reader.read(ctx))
    except Exception as exc:  # a reader bug must not stop the whole ingest
        out.status = "failed"
        out.bad = [BadRecord(0, f"the {reader.format} reader failed: {type(exc).__name__}: {exc}; "
                             "please report it with this file", "")]
        _replace_quarantine(con, fhash, path, out.bad)
        return out
    out.bad = [r for r in records if isinstance(r, BadRecord)]
    _write(con, out, fhash, [r for r in records if not isinstance(r, BadRecord)])
    return out


def _replace_quarantine(con: duckdb.DuckDBPyConnection, fhash: str, path: Path, bad: list[BadRecord]) -> None:
    con.execute("BEGIN")
    con.execute("DELETE FROM quarantine WHERE file_hash = ?", [fhash])
    _quarantine(con, fhash, path, bad, datetime.now(UTC))
    con.execute("COMMIT")


def ingest(con: duckdb.DuckDBPyConnection, paths: Iterable[str | Path], progress: bool = False,
           max_line_bytes: int = MAX_LINE_BYTES) -> list[FileOutcome]:
    """Ingest every file under ``paths``; each file commits on its own, so an interrupted ingest resumes."""
    files = expand_paths(paths)
    return list(_run(con, files, progress, max_line_bytes))


def _run(con: duckdb.DuckDBPyConnection, files: list[Path], progress: bool,
         max_line_bytes: int) -> Iterator[FileOutcome]:
    if not progress:
        for f in files:
            yield ingest_file(con, f, max_line_bytes)
        return
    from replay.progress import bar

    with bar() as pb:
        task = pb.add_task("ingest", total=sum(f.stat().st_size for f in files))
        for f in files:
            pb.update(task, description=f"ingest {f.name[:40]}")
            yield ingest_file(con, f, max_line_bytes)
            pb.advance(task, f.stat().st_size)
