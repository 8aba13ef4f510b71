"""Ingest log files into the store: one file, one transaction; re-ingesting is a no-op."""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Callable, Container, Iterable, Iterator
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

import duckdb

from replay.ingest.companions import Companion, companion_of
from replay.ingest.discover import special_kind
from replay.ingest.memory import bounded_memory
from replay.ingest.parse import (  # noqa: F401 (API)
    Parsed,
    batches,
    file_hash,
    members,
    parse_unit,
    parse_units,
    reread_warning,
    unit_size,
)
from replay.model import BadRecord
from replay.readers import folder_reader
from replay.readers.base import MAX_RECORD_BYTES
from replay.store.memory import db_setting
from replay.untrusted import for_terminal, path_text

SKIP_NAMES = {"MANIFEST.md", "README.md", "LICENSE"}
# logs a harness writes under a hidden name in the project folder, found where other hidden files are passed over:
# Aider's chat history (``aider/args.py``: ``--chat-history-file`` defaults to ``.aider.chat.history.md`` at the
# git root, else in the working folder)
HIDDEN_LOGS = frozenset({".aider.chat.history.md"})


def _hidden(name: str) -> bool:
    """Whether a folder walk or a glob passes a file over for its name: hidden, and no log a harness writes so."""
    return name.startswith(".") and name not in HIDDEN_LOGS


@dataclass
class FileOutcome:
    path: Path
    status: str  # ingested | unchanged | no run | unknown | failed
    format: str | None = None
    runs: int = 0
    items: int = 0
    requests: int = 0
    bad: list[BadRecord] = field(default_factory=list)
    bytes: int = 0
    warnings: list[BadRecord] = field(default_factory=list)  # stored, but changes a figure: printed with file, line
    no_run: str | None = None  # status "no run": what holds no run (replay.ingest.not_runs.NoRun.kind)


def expand_paths(
    paths: Iterable[str | Path],
    skipped: list[tuple[Path, str]] | None = None,
    companions: list[tuple[Path, Companion]] | None = None,
    literal: set[Path] | None = None,
) -> list[Path]:
    """Files named directly, found under directories, or matched by globs, sorted and unique.

    A folder that is one run (an OpenHands V1 conversation, a Cline task) is returned as the folder itself,
    not as its files. FIFOs, sockets and devices are never read: each goes to ``skipped`` as (path, what it is).
    A file found in a folder or by a glob that a harness writes beside its logs and no reader reads
    (:mod:`replay.ingest.companions`) is left out and goes to ``companions``; a file named literally is always kept,
    and goes to ``literal`` (ingest: an error if it holds no run, where one found in a folder is skipped)."""
    found: set[Path] = set()
    named: set[Path] = set()  # files given literally: read, and an error if not a log
    special: dict[Path, str] = {}
    folders: dict[Path, tuple | None] = {}  # folder -> folder_reader(folder): files named directly share folders
    for p in map(str, paths):
        matches = [Path(m) for m in expand_glob(p)] or [Path(p)]
        for m in matches:
            if m.is_dir():
                _walk(m, found, special)
            elif m.is_file():
                unit = _unit_of(m, folders)
                found.add(unit)
                if not glob.has_magic(p):
                    named.add(unit)
            elif kind := special_kind(m):
                special[m] = kind
            else:
                raise FileNotFoundError(f"{p}: no such file, directory or glob match")
    if skipped is not None:
        skipped.extend(sorted(special.items()))
    beside: list[tuple[Path, Companion]] = []
    for f in sorted(found - named):
        if f.name not in SKIP_NAMES and f.is_file() and (rule := companion_of(f)) is not None:
            beside.append((f, rule))
            found.discard(f)
    if companions is not None:
        companions.extend(beside)
    if literal is not None:
        literal.update(named)
    return sorted(f for f in found if f.name not in SKIP_NAMES)


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob pattern as a regex over '/'-separated paths: ``**/`` any folders (none included), ``*`` and ``?``
    within one name, ``[...]`` a character class."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:[^/]*/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and (end := pattern.find("]", i + 2)) > 0:
            body = pattern[i + 1 : end]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body).replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out))


def expand_glob(pattern: str) -> list[str]:
    """Paths matching a glob pattern, sorted. A ``**`` pattern walks its folders without following symbolic links
    to folders (Python's glob follows them: two self-links made it run forever); others use glob."""
    if "**" not in pattern:
        return sorted(glob.glob(pattern))
    parts = pattern.split("/")
    fixed = next(i for i, part in enumerate(parts) if glob.has_magic(part))
    root = "/".join(parts[:fixed]) or ("/" if pattern.startswith("/") else ".")
    regex = _glob_regex("/".join(parts[fixed:]))
    dotted = parts[-1].startswith(".")
    found = []
    for folder, dirs, files in os.walk(root):  # followlinks=False: a linked folder is a name, not a way in
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))  # as glob: hidden folders are not entered
        rel = os.path.relpath(folder, root)
        real = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]  # a linked folder is never a match
        for name in [*real, *files]:
            path = name if rel == "." else f"{rel}/{name}"
            if regex.fullmatch(path) and (not name.startswith(".") or dotted):  # as glob: a hidden name only by a dot
                found.append(os.path.join(root, path) if root != "." else path)
    return sorted(found)


def _unit_of(path: Path, folders: dict[Path, tuple | None]) -> Path:
    """A file named directly, or the run folder it belongs to (a Cline task's ui_messages.json, an OpenHands V1
    conversation's base_state.json or event file): the run is read whole. ``folders``: what folder_reader found,
    by folder, filled here."""
    for folder in (path.parent.parent, path.parent):  # the outer one first: a conversation, not its events folder
        if folder not in folders:
            folders[folder] = folder_reader(folder)
        found = folders[folder]
        if found and path in found[1]:
            return folder
    return path


def _walk(top: Path, found: set[Path], special: dict[Path, str]) -> None:
    """Add the run folders and files under ``top`` to ``found`` (FIFOs, sockets and devices to ``special``): a loop
    over a stack, not recursion (a folder 1,200 deep exceeded Python's recursion limit)."""
    stack = [top]
    while stack:
        folder = stack.pop()
        try:
            is_run = folder_reader(folder) is not None
            children = list(folder.iterdir())
        except OSError:  # unreadable: listed, so that ingest reports it (one line naming it) and reads the rest
            found.add(folder)
            continue
        if is_run:
            found.add(folder)
            continue
        for child in children:
            if child.is_dir() and not child.is_symlink():  # as rglob: linked folders are not followed
                stack.append(child)
            elif child.is_file() and not _hidden(child.name):
                found.add(child)
            elif not child.name.startswith(".") and (kind := special_kind(child)):
                special[child] = kind


@dataclass
class Stored:
    """The file hashes the store holds in ``files`` and in ``quarantine``, read once for a whole ingest and kept up to
    date by its writes (one query per file was a tenth of the parent's time)."""

    files: dict[str, str]  # file hash -> the reader that read it (format/version; version 1 before it was kept)
    quarantined: set[str]

    @classmethod
    def read(cls, con: duckdb.DuckDBPyConnection) -> Stored:
        return cls(
            dict(con.execute(f"SELECT file_hash, {READER_OF} FROM files").fetchall()),
            {r[0] for r in con.execute("SELECT DISTINCT file_hash FROM quarantine").fetchall()},
        )


READER_OF = "coalesce(reader_version, format || '/1')"  # files.reader_version; NULL on rows from before it


def _members(path: Path) -> list[Path]:
    """The files a unit reads: itself, or a run folder's members."""
    return members(path)


def _write(
    con: duckdb.DuckDBPyConnection,
    out: FileOutcome,
    parsed: Parsed,
    fhash: str,
    older: list[str],
    quarantined: bool,
) -> None:
    """Write one parsed unit in one transaction: runs, items and requests inserted batch by batch, each batch released
    once inserted.

    ``quarantined``: the quarantine holds rows of this file (from an earlier, failed read) to replace."""
    n = {"runs": 0, "items": 0, "requests": 0}
    now = datetime.now(UTC)
    con.execute("BEGIN")
    try:
        if quarantined:
            con.execute("DELETE FROM quarantine WHERE file_hash = ?", [fhash])
        for old in [*older, fhash] if parsed.reread else older:  # a re-read replaces its own earlier rows too
            _delete_file(con, old)
        while parsed.tables:
            name, rows = parsed.tables.pop(0)
            con.from_arrow(rows).insert_into(name)  # no view registered and dropped: ~1.5 ms less a batch
            n[name] += rows.num_rows
            del rows
        _quarantine(con, fhash, out.path, out.bad, now)
        con.execute(
            "INSERT INTO files VALUES (?,?,?,?,?,?,?,?,?,?)",
            [
                fhash,
                path_text(out.path),
                out.format,
                out.bytes,
                n["runs"],
                n["items"],
                n["requests"],
                len(out.bad),
                now,
                parsed.reader,
            ],
        )
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    out.runs, out.items, out.requests = n["runs"], n["items"], n["requests"]


def _delete_file(con: duckdb.DuckDBPyConnection, fhash: str) -> None:
    """Remove an ingested file version and everything read from it (inside the caller's transaction)."""
    for table in ("items", "requests"):
        con.execute(f"DELETE FROM {table} WHERE run_id IN (SELECT run_id FROM runs WHERE file_hash = ?)", [fhash])
    for table in ("runs", "quarantine", "files"):
        con.execute(f"DELETE FROM {table} WHERE file_hash = ?", [fhash])


def _quarantine(con: duckdb.DuckDBPyConnection, fhash: str, path: Path, bad: list[BadRecord], now: datetime) -> None:
    if bad:
        con.executemany(
            "INSERT INTO quarantine VALUES (?,?,?,?,?,?)",
            [[fhash, path_text(path), b.line, b.reason, b.raw[:100_000], now] for b in bad],
        )


def ingest_file(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    max_line_bytes: int = MAX_RECORD_BYTES,
    replace_older: bool = True,
    named: bool = True,
) -> FileOutcome:
    """Ingest one file (or run folder) in one transaction; a file already ingested is left alone.

    ``replace_older``: an earlier version of the same path (e.g. a session file that has since grown) is
    deleted in the same transaction, so the run is replaced rather than duplicated. ``named``: as
    :func:`store_parsed`."""
    return store_parsed(con, parse_unit(path, max_line_bytes), replace_older, named=named)


def store_parsed(
    con: duckdb.DuckDBPyConnection,
    parsed: Parsed,
    replace_older: bool = True,
    stored: Stored | None = None,
    named: bool = True,
) -> FileOutcome:
    """Write what :func:`replay.ingest.parse.parse_unit` read: rows, or the quarantine entry saying why none.

    ``stored``: what the store holds (:meth:`Stored.read`, updated here); None: looked up for this file. ``named``:
    the unit was named on the command line; one that holds no run is then quarantined with the reason, where one
    found in a folder is skipped (nothing stored; an earlier reading of the same content is removed)."""
    path, fhash = parsed.path, parsed.file_hash
    out = FileOutcome(
        path=path,
        status=parsed.status,
        format=parsed.format,
        bad=parsed.bad,
        bytes=parsed.bytes,
        warnings=parsed.warnings,
    )
    if fhash is None:  # not even hashable: quarantined by path
        _replace_quarantine(con, "path:" + path_text(path), path, out.bad)
        return out
    if parsed.status == "no run":
        out.no_run = parsed.no_run
        if not named:
            out.bad = []
        _forget(con, fhash, path, out.bad, stored)
        return out
    if parsed.status == "unchanged":
        ingested = quarantined = False
    elif parsed.reread:  # in the store, read by an earlier version of its reader
        ingested, quarantined = False, stored is not None and fhash in stored.quarantined
    elif stored is not None:
        ingested, quarantined = fhash in stored.files, fhash in stored.quarantined
    else:
        reader, quarantined = cast(
            tuple[str | None, bool],
            con.execute(
                f"SELECT (SELECT {READER_OF} FROM files WHERE file_hash = $h), "
                "(SELECT count(*) FROM quarantine WHERE file_hash = $h) > 0",
                {"h": fhash},
            ).fetchone(),
        )  # a SELECT without FROM: one row
        ingested = reader is not None
        if reader is not None and parsed.status == "ingested" and parsed.reader != reader:
            ingested, parsed.reread = False, True
            out.warnings = [*out.warnings, reread_warning(reader, parsed.reader or "")]
    if parsed.status == "unchanged" or ingested:
        out.status, out.format, out.bad, out.warnings = "unchanged", None, [], []
        return out
    if parsed.status in ("unknown", "failed"):
        _replace_quarantine(con, fhash, path, out.bad)
    else:
        versions = _older_versions(con, path, fhash) if replace_older else []
        older = [h for h, _, _ in versions]
        _write(con, out, parsed, fhash, older, quarantined)
        out.warnings += _shrunk(versions, out)
        if stored is not None and out.status == "ingested":
            for old in older:
                stored.files.pop(old, None)
            stored.files[fhash] = parsed.reader or ""
            stored.quarantined.difference_update(older)
    if stored is not None:
        (stored.quarantined.add if out.bad else stored.quarantined.discard)(fhash)
    return out


def _forget(
    con: duckdb.DuckDBPyConnection, fhash: str, path: Path, bad: list[BadRecord], stored: Stored | None
) -> None:
    """Replace what the store holds of content that holds no run (rows an earlier reader version made of it, an
    earlier quarantine entry) with ``bad`` (none: nothing), in one transaction; no statement when there is nothing
    to replace (deleting a file's rows scans the items)."""
    if stored is not None:
        in_files, in_quarantine = fhash in stored.files, fhash in stored.quarantined
    else:
        in_files, in_quarantine = cast(
            tuple[bool, bool],
            con.execute(
                "SELECT (SELECT count(*) FROM files WHERE file_hash = $h) > 0, "
                "(SELECT count(*) FROM quarantine WHERE file_hash = $h) > 0",
                {"h": fhash},
            ).fetchone(),
        )
    if not (in_files or in_quarantine or bad):
        return
    con.execute("BEGIN")
    try:
        if in_files:
            _delete_file(con, fhash)  # its quarantine entries too
        elif in_quarantine:
            con.execute("DELETE FROM quarantine WHERE file_hash = ?", [fhash])
        _quarantine(con, fhash, path, bad, datetime.now(UTC))
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    if stored is not None:
        stored.files.pop(fhash, None)
        (stored.quarantined.add if bad else stored.quarantined.discard)(fhash)


def _older_versions(con: duckdb.DuckDBPyConnection, path: Path, fhash: str) -> list[tuple[str, int, int]]:
    """(hash, bytes, items) of each earlier version the store holds of the file at ``path``, however the path was
    spelled then (relative, absolute, through a link)."""
    rows = con.execute(
        "SELECT file_hash, path, bytes, n_items FROM files WHERE file_hash <> ? AND (path = ? OR path LIKE ?)",
        [fhash, path_text(path), "%" + path_text(path.name)],
    ).fetchall()
    here = path_text(_resolved(path))
    return [
        (h, size, items) for h, p, size, items in rows if p == path_text(path) or path_text(_resolved(Path(p))) == here
    ]


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a link loop: the path as spelled
        return path.absolute()


def _shrunk(older: list[tuple[str, int, int]], out: FileOutcome) -> list[BadRecord]:
    """A warning when the version just stored is smaller than the one it replaced (a file truncated or replaced,
    not grown): the run now holds what the file holds."""
    return [
        BadRecord(
            0,
            f"the file shrank from {size:,} to {out.bytes:,} bytes ({items:,} items to {out.items:,} items) since it "
            "was last ingested: its runs were re-read from the file as it is now; restore the file and ingest it "
            "again if it was cut by mistake",
            "",
        )
        for _, size, items in older
        if out.bytes < size or out.items < items
    ]


def _replace_quarantine(con: duckdb.DuckDBPyConnection, fhash: str, path: Path, bad: list[BadRecord]) -> None:
    con.execute("BEGIN")
    con.execute("DELETE FROM quarantine WHERE file_hash = ?", [fhash])
    _quarantine(con, fhash, path, bad, datetime.now(UTC))
    con.execute("COMMIT")


def ingest(
    con: duckdb.DuckDBPyConnection,
    paths: Iterable[str | Path],
    progress: bool = False,
    max_line_bytes: int = MAX_RECORD_BYTES,
    replace_older: bool = True,
    workers: int = 0,
) -> list[FileOutcome]:
    """Ingest every file under ``paths``; each file commits on its own, so an interrupted ingest resumes.

    ``workers``: processes that parse files in parallel (0: REPLAY_WORKERS, else every core); this process
    does every store write. A file found in a folder that holds no run is skipped (status "no run")."""
    literal: set[Path] = set()
    files = expand_paths(paths, literal=literal)
    return list(_run(con, files, progress, max_line_bytes, replace_older, workers, literal))


def ingest_units(
    con: duckdb.DuckDBPyConnection,
    units: list[Path],
    progress: bool = False,
    max_line_bytes: int = MAX_RECORD_BYTES,
    replace_older: bool = True,
    workers: int = 0,
    named: Container[Path] | None = None,
) -> Iterator[FileOutcome]:
    """Ingest files and run folders already listed (e.g. by :func:`expand_paths` or discovery). ``named``: the
    units named on the command line (:func:`expand_paths`' ``literal``; None: all of them), as
    :func:`store_parsed`."""
    return _run(con, units, progress, max_line_bytes, replace_older, workers, named)


# Below this a process pool costs more to start than it saves: one core parses ~6-7 MB/s, and starting the pool (a
# forkserver importing the readers and DuckDB) takes 0.5-1 s, which two workers make up only past ~7-13 MB (the
# bundled 2.6 MB sample: 0.4 s here, 0.5-1.7 s on the pool)
POOL_MIN_BYTES = 8 << 20


def store_files(con: duckdb.DuckDBPyConnection) -> set[Path]:
    """The store's own database file and its write-ahead log: never logs to read, even in a folder being ingested."""
    row = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchone()
    if not row or not row[0]:
        return set()
    db = Path(row[0]).resolve()
    return {db, db.with_name(db.name + ".wal")}


def _run(
    con: duckdb.DuckDBPyConnection,
    files: list[Path],
    progress: bool,
    max_line_bytes: int,
    replace_older: bool = True,
    workers: int = 0,
    named: Container[Path] | None = None,
) -> Iterator[FileOutcome]:
    own = store_files(con)
    files = [f for f in files if f.resolve() not in own]
    sizes = {f: unit_size(f) for f in files}
    if sum(sizes.values()) < POOL_MIN_BYTES:
        workers = 1
    stored = Stored.read(con)
    parsed = parse_units(files, max_line_bytes, dict(stored.files), workers)
    if progress:
        from replay.progress import bar
    # DuckDB on one thread while files are written: an ingest's statements are small (a file's rows), and waking
    # DuckDB's other threads for each cost the single writer ~30% more CPU, taken from the parse workers' cores
    # (the checkpoint at the end of an ingest runs after the block, on every thread)
    with bounded_memory(con) as memory, db_setting(con, "threads", 1), bar() if progress else nullcontext() as pb:
        task = pb.add_task("ingest", total=sum(sizes.values())) if pb is not None else None
        for f, p in zip(files, parsed, strict=True):
            if pb is not None and task is not None:
                pb.update(task, description=f"ingest {for_terminal(f.name[:40])}")
            if memory and p.status == "ingested":
                memory.before_file(p.largest)
            yield store_parsed(con, p, replace_older, stored, named is None or f in named)
            if pb is not None and task is not None:
                pb.advance(task, sizes[f])


def _signature(path: Path) -> tuple[tuple[str, int, int, int, int], ...]:
    """Cheap change detector: (member, size, mtime, ctime, inode) of a file or run folder's members. Size and mtime
    alone missed a file replaced by another of the same size with its mtime set back; no write or rename keeps the
    ctime and inode. What a change then stores is decided by the content hash."""
    return tuple(
        (str(m), (st := m.stat()).st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
        for m in _members(path)
        if m.exists()
    )


def watch(
    con: duckdb.DuckDBPyConnection,
    sources: Callable[[], list[Path]],
    interval: float = 2.0,
    polls: int | None = None,
    report: Callable[[FileOutcome], None] | None = None,
    after_poll: Callable[[int], None] | None = None,
    max_line_bytes: int = MAX_RECORD_BYTES,
) -> int:
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
            # a session with no run yet is skipped until it grows into one (it is found in a folder, or named to
            # be watched)
            out = ingest_file(con, path, max_line_bytes, replace_older=True, named=False)
            seen[path] = sig
            if out.status == "ingested":
                ingested += 1
            if report and out.status != "unchanged":
                report(out)
        n += 1
        if after_poll:
            after_poll(n)
    return ingested
