"""inspect_ai's ``.eval`` log: a zip archive whose members are JSON documents.

The writer (inspect_ai ``log/_recorders/eval.py``) puts the log's header in ``header.json`` once the eval finishes
(``{version, status, eval, plan, results, stats, ...}``, no samples); a log still being written, or one whose run
died, has only ``_journal/start.json`` (``{version, eval, plan}``). Each sample is ``samples/<id>_epoch_<n>.json``;
a sample logged again is a second member of the same name, and the last one is the sample. Members are deflated,
or zstd-compressed from inspect_ai 0.3.208 on (zip method 93, which Python's zipfile reads only from 3.14).
``summaries.json`` and ``_journal/summaries/`` repeat what the samples hold and are not read. A chunked sample
(``samples/<id>_epoch_<n>/sample.json`` and its sequences, written only by the internal ``inspect log
convert-chunked``) is quarantined with a note saying so.
"""

from __future__ import annotations

import io
import re
import struct
import zipfile
from collections.abc import Iterator
from typing import Any, BinaryIO

from replay.model import BadRecord
from replay.readers.base import ReadContext, over_limit
from replay.readers.fastjson import loads_large

ZIP_MAGIC = b"PK\x03\x04"
HEADER = "header.json"
START = "_journal/start.json"
SAMPLE_RE = re.compile(r"^samples/(.+)_epoch_(\d+)\.json$")
CHUNKED_RE = re.compile(r"^samples/(.+_epoch_\d+)/sample\.json$")
ZSTD_METHOD = 93
LOCAL_HEADER = struct.Struct("<4s2x2x2x2x2x4x4x4xHH")  # signature, ..., file name length, extra field length


def is_archive_head(head: str) -> bool:
    """True when a file's first bytes (decoded leniently) are an inspect_ai ``.eval`` archive's: a zip whose first
    member is one of the names the writer starts with."""
    return head.startswith(ZIP_MAGIC.decode("latin-1")) and any(
        name in head[:4096] for name in (START, HEADER, "samples/", "_journal/")
    )


class Archive:
    """An open ``.eval`` archive: its header document and its samples, each read within the record limit."""

    def __init__(self, ctx: ReadContext, fh: BinaryIO) -> None:
        self.ctx, self.fh = ctx, fh
        self.zip = zipfile.ZipFile(fh)
        self.infos = {info.filename: info for info in self.zip.infolist()}  # a repeated name: the last one

    def header(self) -> dict[str, Any] | BadRecord:
        """``header.json``, else ``_journal/start.json`` (a log whose eval did not finish) with status "started"."""
        for name in (HEADER, START):
            if name in self.infos:
                doc = self.member(name)
                if isinstance(doc, dict) and name == START:
                    doc = {"status": "started", **doc}
                return doc if isinstance(doc, (dict, BadRecord)) else BadRecord(1, f"{name}: not a JSON object", "")
        return BadRecord(1, f"no {HEADER} or {START} in the archive: not an inspect_ai .eval log", "")

    def sample_names(self) -> list[str]:
        """The samples' member names, in the order inspect_ai reads them (epoch, then id; numeric ids by value)."""
        found = [(m, name) for name in self.infos if (m := SAMPLE_RE.match(name))]

        def key(item: tuple[re.Match[str], str]) -> tuple[int, str]:
            m = item[0]
            sid = m.group(1)
            return int(m.group(2)), sid.zfill(20) if sid.isdigit() else sid

        return [name for _, name in sorted(found, key=key)]

    def member(self, name: str) -> Any | BadRecord:
        """A member's JSON, or a BadRecord naming it and what is wrong (too large, damaged, not JSON)."""
        info = self.infos[name]
        limit = self.ctx.max_line_bytes
        if info.file_size > limit:
            return BadRecord(1, f"{name}: " + over_limit("archive member", info.file_size, limit), "")
        try:
            raw = self._zstd(info, limit) if info.compress_type == ZSTD_METHOD else self._deflated(info, limit)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
            return BadRecord(1, f"{name}: unreadable archive member ({exc}); check the file with `unzip -t`", "")
        if len(raw) > limit:
            return BadRecord(1, f"{name}: " + over_limit("archive member", len(raw), limit), "")
        try:
            return loads_large(raw)
        except (ValueError, RecursionError) as exc:
            return BadRecord(1, f"{name}: malformed JSON ({exc})", raw[:2000].decode("utf-8", "replace"))

    def _deflated(self, info: zipfile.ZipInfo, limit: int) -> bytes:
        with self.zip.open(info) as fh:
            return fh.read(limit + 1)

    def _zstd(self, info: zipfile.ZipInfo, limit: int) -> bytes:
        """A zstd member's bytes: its compressed data read past the local header, decompressed across frames (the
        writer starts a new frame every 200 MiB)."""
        import zstandard  # a dependency of replay; imported here as only zstd members need it

        self.fh.seek(info.header_offset)
        fixed = self.fh.read(LOCAL_HEADER.size)
        if len(fixed) < LOCAL_HEADER.size:
            raise zipfile.BadZipFile("local header cut short")
        signature, name_len, extra_len = LOCAL_HEADER.unpack(fixed)
        if signature != ZIP_MAGIC:
            raise zipfile.BadZipFile("bad local header signature")
        self.fh.seek(info.header_offset + LOCAL_HEADER.size + name_len + extra_len)
        packed = self.fh.read(info.compress_size)
        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(packed), read_across_frames=True)
        try:
            return reader.read(limit + 1)
        except zstandard.ZstdError as exc:
            raise ValueError(f"zstd: {exc}") from exc


def read_archive(ctx: ReadContext) -> Iterator[dict[str, Any] | BadRecord]:
    """The header document (first), then each sample's document, of the ``.eval`` archive at ``ctx.path``."""
    with ctx.path.open("rb") as fh:
        try:
            archive = Archive(ctx, fh)
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            yield BadRecord(1, f"not a readable zip archive ({exc}); check the file with `unzip -t`", "")
            return
        header = archive.header()
        yield header
        if isinstance(header, BadRecord):
            return
        names = archive.sample_names()
        for index, name in enumerate(names, start=1):
            doc = archive.member(name)
            yield BadRecord(index, doc.reason, doc.raw) if isinstance(doc, BadRecord) else doc
        for index, name in enumerate(sorted(n for n in archive.infos if CHUNKED_RE.match(n)), start=len(names) + 1):
            yield BadRecord(
                index,
                f"{name}: a chunked sample (inspect_ai's internal `inspect log convert-chunked` layout) is not read; "
                "ingest the .eval log it was converted from",
                "",
            )
