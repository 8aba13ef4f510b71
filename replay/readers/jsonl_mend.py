"""Mending the damage a JSONL writer is known to leave in a log that is otherwise sound.

Opt-in: a reader whose writer leaves such damage passes the bytes every record line of its format starts with to
replay.readers.base.iter_json_lines (``mend``). Each mend is noted in ``ctx.stats["mended"]`` (see :func:`note`)
for the reader to warn of; a line no mend explains stays a quarantined BadRecord.

- ``padding``: NUL bytes where a write was cut by a crash or power loss (the file was extended, the data never
  flushed). A line of nothing else is skipped; a record after the NULs on the same line is read.
- ``torn``: a line that starts with an incomplete record and goes on with a complete one (the writer was cut off
  in the middle of a record and wrote it again whole, with no line break between). The complete record is read,
  the torn one dropped.
- ``split``: one record written over several physical lines because a string in it holds raw line breaks. The
  line and those after it up to the next that starts a record are read as one record, raw control characters in
  its strings allowed.
"""

from __future__ import annotations

import json
from typing import Any

from replay.readers.fastjson import loads_line

NUL = b"\x00"
BLANK = b"\x00 \t\r\n"


def is_padding(raw: bytes) -> bool:
    """True when the line holds NUL bytes and nothing else but whitespace."""
    return NUL in raw and not raw.strip(BLANK)


def tail_record(raw: bytes, start: bytes) -> tuple[dict, int] | None:
    """The first complete record (a JSON object) in ``raw`` beginning at an occurrence of ``start`` after the
    line's first byte, and its offset; None when there is none."""
    at = raw.find(start, 1)
    while at != -1:
        try:
            obj = loads_line(raw[at:])
        except (ValueError, RecursionError):  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            obj = None
        if isinstance(obj, dict):
            return obj, at
        at = raw.find(start, at + 1)
    return None


def joined_record(parts: list[bytes]) -> dict | None:
    """The record the physical lines ``parts`` make together (raw control characters allowed in strings), None
    when they make none."""
    try:
        obj = json.loads(b"".join(parts).decode("utf-8"), strict=False)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def note(stats: dict[str, Any], kind: str, first: int, last: int) -> None:
    """Record a mend of lines ``first``..``last`` in ``stats["mended"]``."""
    stats.setdefault("mended", []).append({"kind": kind, "line": first, "last_line": last})


def describe(mend: dict[str, Any]) -> str:
    """A mend noted by :func:`note`, in words for the user (the file and first line are printed beside it)."""
    if mend["kind"] == "padding":
        return "NUL bytes where a write was cut short (a crash or power loss), passed over"
    if mend["kind"] == "torn":
        return "a record cut off and written again whole on the same line: the complete copy read"
    return (
        f"one record written over lines {mend['line']}-{mend['last_line']} (raw line breaks in a string): read as one"
    )
