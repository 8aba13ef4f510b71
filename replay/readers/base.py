"""What every reader shares: the reader protocol, a read context and safe JSONL iteration."""

from __future__ import annotations

import bz2
import gzip
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Protocol, runtime_checkable

from replay.errors import ReplayError
from replay.model import BadRecord, Record

MAX_LINE_BYTES = 16 * 1024 * 1024
HEAD_BYTES = 64 * 1024


@dataclass(frozen=True)
class ReadContext:
    """Per-file facts a reader needs: where it reads and how to name its runs."""

    path: Path
    file_hash: str
    max_line_bytes: int = MAX_LINE_BYTES

    def run_id(self, suffix: str | int | None = None) -> str:
        base = f"{self.path.stem}-{self.file_hash[:8]}"
        return base if suffix is None else f"{base}/{suffix}"


class Reader(Protocol):
    """A format reader: recognises its format by content and yields canonical records."""

    format: str

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


# Compressed logs are read through a decompressed temporary copy (so every reader sees a plain file).
COMPRESSED_SUFFIXES = (".gz", ".bz2", ".zst")


def is_compressed(path: Path) -> bool:
    return path.suffix.lower() in COMPRESSED_SUFFIXES


def open_decompressed(path: Path) -> BinaryIO:
    """A binary stream of the decompressed content of a .gz/.bz2/.zst file."""
    suffix = path.suffix.lower()
    if suffix == ".gz":
        return gzip.open(path, "rb")
    if suffix == ".bz2":
        return bz2.open(path, "rb")
    if suffix == ".zst":
        try:
            import zstandard
        except ImportError as exc:
            raise ReplayError(f"{path}: zstd-compressed; install the 'zstandard' package (pip install zstandard) "
                              "or decompress it with `zstd -d` first") from exc
        return zstandard.ZstdDecompressor().stream_reader(path.open("rb"), closefd=True)
    raise ValueError(f"{path}: not a compressed file")


def iter_json_lines(ctx: ReadContext) -> Iterator[tuple[int, Any] | BadRecord]:
    """Yield (line_no, object) for each JSONL line; bad lines become BadRecord."""
    with ctx.path.open("rb") as fh:
        for line_no, raw in enumerate(fh, start=1):
            if len(raw) > ctx.max_line_bytes:
                reason = (f"line of {len(raw):,} bytes exceeds the {ctx.max_line_bytes:,}-byte limit; "
                          "raise it with --max-line-bytes if the line is genuine")
                yield BadRecord(line_no, reason, raw[:2000].decode("utf-8", "replace"))
                continue
            if not raw.strip():
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield BadRecord(line_no, f"not UTF-8 ({exc.reason} at byte {exc.start}); re-encode the file as UTF-8",
                                raw.decode("utf-8", "replace"))
                continue
            try:
                yield line_no, json.loads(text)
            except json.JSONDecodeError as exc:
                hint = "line is truncated (file cut short?)" if exc.pos >= len(text.rstrip()) - 1 else "malformed JSON"
                yield BadRecord(line_no, f"{hint}: {exc.msg} at column {exc.colno}", text)


def load_json_document(ctx: ReadContext) -> Any | BadRecord:
    """Parse a whole-file JSON document, or return why it could not be parsed."""
    raw = ctx.path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        reason = f"not UTF-8 ({exc.reason}); re-encode the file as UTF-8"
        return BadRecord(line, reason, raw[:2000].decode("utf-8", "replace"))
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        return BadRecord(exc.lineno, f"malformed or truncated JSON document: {exc.msg} at column {exc.colno}",
                         text[max(0, exc.pos - 500): exc.pos + 500])


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
