"""What every reader shares: the reader protocol, a read context and safe JSONL iteration."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO, Protocol, runtime_checkable

from replay.errors import ReplayError
from replay.model import BadRecord, Record, Run
from replay.readers.fastjson import loads_large, loads_line
from replay.readers.jsonl_mend import BLANK, is_padding, joined_record, note, tail_record
from replay.untrusted import path_text

MAX_LINE_BYTES = 16 * 1024 * 1024  # the most of a first line read to recognise a format
MAX_RECORD_BYTES = 256 * 2**20  # default record limit (replay ingest --max-record-mb): a longer JSONL line or a larger
# JSON document is quarantined unread; parsing a record needs a few times its size in memory
HEAD_BYTES = 64 * 1024


@dataclass(frozen=True)
class ReadContext:
    """Per-file facts a reader needs: where it reads and how to name its runs."""

    path: Path
    file_hash: str
    max_line_bytes: int = MAX_RECORD_BYTES  # the record limit: longest JSONL line, largest JSON document
    stats: dict[str, Any] = field(default_factory=dict, compare=False)  # duplicate_lines, the last line read
    skip: frozenset[int] = frozenset()  # lines iter_json_lines passes over (quarantined by read_isolated)

    def run_id(self, suffix: str | int | None = None) -> str:
        stem = logical_path(self.path).stem  # x.jsonl.gz names its runs as x.jsonl does
        base = f"{os.fsencode(stem).decode('utf-8', 'backslashreplace')}-{self.file_hash[:8]}"
        return base if suffix is None else f"{base}/{suffix}"


class Reader(Protocol):
    """A format reader: recognises its format by content and yields canonical records."""

    format: str
    # optional ``version: int`` (default 1): raised when the reader reads a file differently, so files ingested by
    # the earlier version are read again (replay.readers.reader_key)

    def sniff(self, head: str, path: Path) -> bool:
        """True when ``head`` (the first 64 KB, decoded leniently) is this format."""

    def read(self, ctx: ReadContext) -> Iterator[Record]:
        """Yield Run, Item, Request and BadRecord records in log order."""


@runtime_checkable
class FolderReader(Protocol):
    """A reader whose run may be a folder of files (e.g. an OpenHands V1 conversation, a Cline task).

    ``members`` returns the files that make up the run when ``path`` is such a folder, else None; the
    folder is then ingested as one unit (one hash over its members, one transaction)."""

    format: str

    def members(self, path: Path) -> list[Path] | None:
        """The files of the run folder ``path`` (sorted), or None when it is not one."""


# Compressed logs are decompressed as they are read (:func:`open_log`), never copied whole to a temporary file: a
# small file could fill the temporary folder, and a full one stopped every later file of an ingest.
COMPRESSED_SUFFIXES = (".gz", ".bz2", ".zst")


def is_compressed(path: Path) -> bool:
    return path.suffix.lower() in COMPRESSED_SUFFIXES


def logical_path(path: Path) -> Path:
    """The path as the log inside is named: x.jsonl.gz -> x.jsonl (a plain file: itself)."""
    return path.with_suffix("") if is_compressed(path) else path


def open_log(path: Path) -> BinaryIO:
    """A log's bytes as a buffered stream (``read``, ``readline``, ``peek``): the file itself, or a compressed file's
    content decompressed as it is read and bounded (:func:`open_decompressed`). Not seekable when compressed."""
    return open_decompressed(path) if is_compressed(path) else path.open("rb")


def read_log(path: Path, limit: int | None = None) -> bytes:
    """A log's whole content (decompressed); with ``limit``, at most ``limit + 1`` bytes (more means too large)."""
    with open_log(path) as fh:
        return fh.read() if limit is None else fh.read(limit + 1)


def open_decompressed(path: Path, limit: int | None = None) -> BinaryIO:
    """A buffered binary stream of the decompressed content of a .gz/.bz2/.zst file, read in pieces and bounded: past
    ``limit`` bytes (None: :func:`decompressed_limit`) or on damaged data it raises ReplayError saying what is wrong
    and what to do."""
    suffix = path.suffix.lower()
    if suffix == ".gz":
        inner: BinaryIO = gzip.open(path, "rb")  # type: ignore[assignment]  # a binary file typeshed types apart
    elif suffix == ".bz2":
        inner = bz2.open(path, "rb")  # type: ignore[assignment]  # a binary file typeshed types apart
    elif suffix == ".zst":
        try:
            import zstandard
        except ImportError as exc:
            raise ReplayError(
                f"{path_text(path)}: zstd-compressed; install the 'zstandard' package (pip install zstandard) "
                "or decompress it with `zstd -d` first"
            ) from exc
        inner = zstandard.ZstdDecompressor().stream_reader(path.open("rb"), closefd=True)
    else:
        raise ValueError(f"{path_text(path)}: not a compressed file")
    bounded = _Bounded(inner, path, decompressed_limit(path) if limit is None else limit)
    return io.BufferedReader(bounded, 1 << 16)


RATIO_LIMIT = 1000  # decompressed size per compressed byte past which a file is taken for a bomb...
FLOOR_LIMIT = 256 * 2**20  # ...once it is past this size (a small file may legitimately compress very well)
LIMIT_VARIABLE = "REPLAY_MAX_DECOMPRESSED_MB"
TOOLS = {".gz": "gzip -t", ".bz2": "bzip2 -t", ".zst": "zstd -t"}


def decompressed_limit(path: Path) -> int:
    """The most bytes a compressed file may expand to: REPLAY_MAX_DECOMPRESSED_MB when set, else 1,000 times its
    size, at least 256 MB."""
    value = os.environ.get(LIMIT_VARIABLE)
    if value:
        try:
            mb = float(value)
        except ValueError:
            mb = float("nan")
        if not (0 < mb < 2**40):  # NaN fails too
            raise ReplayError(f"{LIMIT_VARIABLE}={value!r}: expected a positive number of MB")
        return int(mb * 2**20)
    return max(FLOOR_LIMIT, RATIO_LIMIT * path.stat().st_size)


class _Bounded(io.RawIOBase):
    """A decompressing stream that stops at a size limit and turns any decoder error into one ReplayError (its
    message says what is wrong and what to do; the caller names the file)."""

    def __init__(self, inner: BinaryIO, path: Path, limit: int) -> None:
        super().__init__()
        self.inner, self.path, self.limit, self.total = inner, path, limit, 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        chunk = self.read(len(buffer))
        buffer[: len(chunk)] = chunk
        return len(chunk)

    def read(self, n: int = -1) -> bytes:
        want = self.limit + 1 - self.total if n is None or n < 0 else min(n, self.limit + 1 - self.total)
        try:
            chunk = self.inner.read(max(want, 1))
        except ReplayError:
            raise
        except Exception as exc:  # gzip, bz2, zlib and zstandard each raise their own kinds
            tool = TOOLS.get(self.path.suffix.lower(), "")
            raise ReplayError(
                f"not readable as {self.path.suffix} ({type(exc).__name__}: {str(exc)[:200]}): damaged, cut short or "
                f"mislabelled; check it with `{tool}`, or rename it to what it holds"
            ) from None
        self.total += len(chunk)
        if self.total > self.limit:
            raise ReplayError(
                f"expands past {self.limit / 2**20:,.0f} MB from {self.path.stat().st_size:,} bytes (a compression "
                f"bomb or a damaged file); if it is genuine, set {LIMIT_VARIABLE} higher"
            )
        return chunk

    def close(self) -> None:
        if not self.closed:
            self.inner.close()
        super().close()


UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
UTF8_BOM = b"\xef\xbb\xbf"
# a line repeated byte for byte is dropped only when it carries one of these: ids, or the millisecond timestamp a
# harness writes on every event. A hand-written timestamp is not an identity: the canonical reader passes ID_KEYS (two
# runs of one canonical file may log the same request line)
ID_KEYS = frozenset({"id", "uuid", "event_id", "eventId"})
IDENTITY_KEYS = ID_KEYS | {"timestamp", "ts"}
DEEP = "JSON nested deeper than the parser allows (over ~1,000 levels); a real log never is: damaged or hostile line"


def decode_head(raw: bytes) -> str:
    """The first bytes of a file as text: UTF-16 (by its BOM) or UTF-8 (BOM dropped), undecodable bytes replaced."""
    if raw[:2] in UTF16_BOMS:
        return raw.decode("utf-16", "replace")
    return raw.removeprefix(UTF8_BOM).decode("utf-8", "replace")


class _Lines:
    """The file's lines as UTF-8 bytes, one at a time (a UTF-16 file, by its BOM, is transcoded; a UTF-8 BOM dropped).

    A line longer than ``limit`` is never held whole: :meth:`next` returns its first 2,000 bytes and its length, and
    skips the rest in chunks, so reading costs at most about ``limit`` bytes of memory. No generator frame keeps the
    previous line alive while the caller parses the next."""

    def __init__(self, fh: BinaryIO, limit: int) -> None:
        self.fh, self.limit = fh, limit
        start = fh.peek(3)[:3]  # type: ignore[attr-defined]  # a buffered stream: no seek (a compressed one has none)
        self.utf16: Iterator[bytes] | None = None
        if start[:2] in UTF16_BOMS:
            text = fh.read().decode("utf-16", "replace")
            self.utf16 = (line.encode("utf-8", "surrogatepass") for line in text.splitlines(keepends=True))
        elif start == UTF8_BOM:
            fh.read(3)

    def next(self) -> tuple[bytes, int] | None:
        """(line, its length in bytes) or None at the end; past the limit, the line is cut to its head."""
        if self.utf16 is not None:
            line = next(self.utf16, b"")
        else:
            line = self.fh.readline(self.limit + 1)
        if not line:
            return None
        if len(line) <= self.limit or line.endswith(b"\n"):
            return line, len(line)
        size, head = len(line), line[:2000]
        del line
        while (chunk := self.fh.readline(1 << 20)) and not chunk.endswith(b"\n"):
            size += len(chunk)
        return head, size + len(chunk)


def _content_end(raw: bytes) -> int:
    """Length of ``raw`` without its trailing whitespace, with no copy of it."""
    end = len(raw)
    while end and raw[end - 1] in b" \t\r\n":
        end -= 1
    return end


def over_limit(what: str, size: int, limit: int) -> str:
    """The quarantine reason for a record (a line, a document) over the record-size limit."""
    return (
        f"{what} of {size:,} bytes is over the {limit / 2**20:.4g} MB record limit; raise --max-record-mb if "
        "it is genuine (memory grows with it)"
    )


def iter_json_lines(
    ctx: ReadContext, identity: frozenset[str] = IDENTITY_KEYS, mend: bytes | None = None
) -> Iterator[tuple[int, Any] | BadRecord]:
    """Yield (line_no, object) for each JSONL line; bad lines become BadRecord.

    A line over ``ctx.max_line_bytes`` (the record limit) is quarantined without being read whole. An exact repeat
    of an earlier line that carries an identity (a key in ``identity``: a log written twice, a replayed event) is
    dropped and counted in ``ctx.stats["duplicate_lines"]``; lines without one (a plain message repeated on
    purpose) are kept. Parsing reads the bytes (no decoded copy of the line unless json must parse it).

    ``mend``, the bytes every record line of the format starts with, mends the damage its writer is known to leave
    (NUL padding, a torn record, a record split over lines: replay.readers.jsonl_mend); each mend is noted in
    ``ctx.stats["mended"]``, the mended record given the number of its first line."""
    seen: set[bytes] = set()
    with open_log(ctx.path) as fh:
        lines = _Lines(fh, ctx.max_line_bytes)
        back: list[tuple[bytes, int]] = []  # lines read ahead by a mend that failed, the next one last
        line_no = 0
        while (got := back.pop() if back else lines.next()) is not None:
            line_no += 1
            raw, size = got
            if size > ctx.max_line_bytes:
                yield BadRecord(
                    line_no, over_limit("line", size, ctx.max_line_bytes), raw[:2000].decode("utf-8", "replace")
                )
                continue
            if raw.isspace() or line_no in ctx.skip:
                continue
            ctx.stats["line"], ctx.stats["raw"] = line_no, raw[:2000]
            entry = _parse_line(line_no, raw, seen, ctx.stats, identity)
            if mend is not None and isinstance(entry, BadRecord):
                entry, used = _mended(ctx, line_no, raw, mend, entry, lines, back)
                line_no += used
            del raw, got  # the parsed value is all the reader needs: the line's bytes go now
            if entry is not None:
                yield entry
    ctx.stats["line"] = None  # past the last line: a failure from here on is not one line's


def _mended(
    ctx: ReadContext,
    line_no: int,
    raw: bytes,
    start: bytes,
    bad: BadRecord,
    lines: _Lines,
    back: list[tuple[bytes, int]],
) -> tuple[tuple[int, Any] | BadRecord | None, int]:
    """The entry a line that does not parse stands for once mended (None: padding, nothing to read), else ``bad``;
    and how many further lines the mend used (replay.readers.jsonl_mend)."""
    if is_padding(raw):
        note(ctx.stats, "padding", line_no, line_no)
        return None, 0
    tail = tail_record(raw, start)
    if tail is not None:
        note(ctx.stats, "padding" if is_padding(raw[: tail[1]]) else "torn", line_no, line_no)
        return (line_no, tail[0]), 0
    if not raw.lstrip(BLANK).startswith(start):
        return bad, 0
    parts, size = [raw], len(raw)
    while (got := back.pop() if back else lines.next()) is not None:
        if got[0].startswith(start) or got[1] > ctx.max_line_bytes or size + got[1] > ctx.max_line_bytes:
            back.append(got)
            break
        parts.append(got[0])
        size += got[1]
        if (obj := joined_record(parts)) is not None:
            note(ctx.stats, "split", line_no, line_no + len(parts) - 1)
            return (line_no, obj), len(parts) - 1
    back.extend(reversed([(p, len(p)) for p in parts[1:]]))  # not one record: each line is read as it is
    return bad, 0


def _parse_line(
    line_no: int, raw: bytes, seen: set[bytes], stats: dict[str, Any], identity: frozenset[str] = IDENTITY_KEYS
) -> tuple[int, Any] | BadRecord | None:
    """One line's (line_no, object), its BadRecord, or None for a dropped duplicate (see :func:`iter_json_lines`)."""
    try:
        obj = loads_line(raw)
        if isinstance(obj, dict) and not identity.isdisjoint(obj):
            key = hashlib.blake2b(memoryview(raw)[: _content_end(raw)], digest_size=16).digest()
            if key in seen:
                stats["duplicate_lines"] = stats.get("duplicate_lines", 0) + 1
                return None
            seen.add(key)
        return line_no, obj
    except UnicodeDecodeError as exc:
        return BadRecord(
            line_no, f"not UTF-8 ({exc.reason} at byte {exc.start}); re-encode the file as UTF-8", _head(raw)
        )
    except json.JSONDecodeError as exc:
        hint = "line is truncated (file cut short?)" if exc.pos >= len(exc.doc.rstrip()) - 1 else "malformed JSON"
        return BadRecord(line_no, f"{hint}: {exc.msg} at column {exc.colno}", _head(raw))
    except RecursionError:
        return BadRecord(line_no, DEEP, _head(raw))


def _head(raw: bytes) -> str:
    """The first 2,000 characters of a line, undecodable bytes replaced."""
    return raw[:8000].decode("utf-8", "replace")[:2000]


MAX_ISOLATED = 50
ISOLATED_ERRORS = (
    ValueError,
    TypeError,
    KeyError,
    AttributeError,
    IndexError,
    RecursionError,
    OverflowError,
    ArithmeticError,
    UnicodeError,
)


def read_isolated(reader: Reader, ctx: ReadContext) -> list[Record]:
    """All of ``reader.read(ctx)``; when the reader fails on one JSONL line, that line is quarantined (line,
    reason) and the file is read again without it, so one bad record never costs the file. Past MAX_ISOLATED
    such lines, or when the failure is not on a line, the exception propagates (the file fails as a whole)."""
    quarantined: list[BadRecord] = []
    skip: set[int] = set()
    while True:
        attempt = replace(ctx, stats={}, skip=ctx.skip | skip)
        try:
            records = list(reader.read(attempt))
        except ISOLATED_ERRORS as exc:
            line = attempt.stats.get("line")
            if line is None or line in skip or len(skip) >= MAX_ISOLATED:
                raise
            skip.add(line)
            raw = attempt.stats.get("raw", b"")[:2000].decode("utf-8", "replace")
            quarantined.append(
                BadRecord(
                    line,
                    f"the {reader.format} reader could not use this record "
                    f"({type(exc).__name__}: {str(exc)[:200]}); rest of the file read",
                    raw,
                )
            )
            continue
        ctx.stats.update({k: v for k, v in attempt.stats.items() if k not in ("line", "raw")})
        if dropped := ctx.stats.get("duplicate_lines"):  # counted where the runs are: runs.metadata
            runs = [rec for rec in records if isinstance(rec, Run)]
            for rec in runs:
                rec.metadata["duplicate_lines_dropped"] = dropped
            if runs:  # said once for the file
                runs[0].metadata.setdefault("warnings", []).append(
                    {
                        "line": 0,
                        "message": f"{dropped} lines repeating an earlier line byte for byte (same id or "
                        "timestamp) were read once: the log was written twice or an event replayed",
                    }
                )
        return [*records, *quarantined] if quarantined else records


def version_tuple(text: Any) -> tuple[int, ...] | None:
    """(major, minor, patch) of a logged version such as "2.1.19" (three dot-separated parts, all digits); None when
    it is not one."""
    parts = text.split(".")[:3] if isinstance(text, str) else []
    return tuple(int(p) for p in parts) if len(parts) == 3 and all(p.isdigit() for p in parts) else None


def is_json_document(path: Path) -> bool:
    """True for a file holding one JSON array (pretty-printed or on one line), False for JSONL: an array whose first
    line is a whole JSON value (or one too deep to parse) followed by more lines is JSONL with a damaged line."""
    with open_log(path) as fh:
        raw = fh.readline(MAX_LINE_BYTES)
        if raw[:2] in UTF16_BOMS:  # UTF-16 newlines are two bytes: decode the whole file
            first, _, rest = decode_head(raw + fh.read()).partition("\n")
        else:
            first, rest = decode_head(raw), fh.read(4096).decode("utf-8", "replace")
    if not first.lstrip().startswith("["):
        return False
    if not rest.strip():
        return True
    try:
        json.loads(first)
    except RecursionError:
        return False
    except ValueError:
        return True
    return False


def load_json_document(ctx: ReadContext) -> Any | BadRecord:
    """Parse a whole-file JSON document (UTF-8, UTF-8 with BOM or UTF-16), or return why it could not be parsed.

    The document is one record: past ``ctx.max_line_bytes`` (the record limit) it is refused unread. orjson parses
    the bytes where it reads them as json would (no decoded copy of the text); json parses the rest and names the
    place of an error."""
    packed = is_compressed(ctx.path)
    size = 0 if packed else ctx.path.stat().st_size
    if size > ctx.max_line_bytes:
        with ctx.path.open("rb") as fh:
            head = fh.read(2000)
        return BadRecord(1, over_limit("JSON document", size, ctx.max_line_bytes), decode_head(head))
    raw = read_log(ctx.path, ctx.max_line_bytes) if packed else ctx.path.read_bytes()
    if len(raw) > ctx.max_line_bytes:  # a compressed document: its size is known once read this far
        reason = over_limit("JSON document", len(raw), ctx.max_line_bytes).replace(" of ", " of over ", 1)
        return BadRecord(1, reason, decode_head(raw[:2000]))
    if raw[:2] not in UTF16_BOMS:
        try:
            return loads_large(memoryview(raw)[3:] if raw.startswith(UTF8_BOM) else raw)
        except (ValueError, RecursionError):  # not UTF-8, malformed, too deep: json below says where and why
            pass
    try:
        text = raw.decode("utf-16") if raw[:2] in UTF16_BOMS else raw.removeprefix(UTF8_BOM).decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        reason = f"not UTF-8 ({exc.reason}); re-encode the file as UTF-8"
        return BadRecord(line, reason, raw[:2000].decode("utf-8", "replace"))
    del raw
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        return BadRecord(
            exc.lineno,
            f"malformed or truncated JSON document: {exc.msg} at column {exc.colno}",
            text[max(0, exc.pos - 500) : exc.pos + 500],
        )
    except RecursionError:
        return BadRecord(1, DEEP, text[:2000])


def text_of(content: Any) -> str:
    """Flatten message content (string, list of parts, dict) into plain text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(t for t in (text_of(part) for part in content) if t)
    if isinstance(content, dict):
        for key in ("text", "content", "output", "input_text", "output_text"):
            if key in content:
                return text_of(content[key])
        return ""
    return str(content)
