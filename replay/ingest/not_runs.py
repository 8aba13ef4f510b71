"""Logs that hold no run, recognised so that ingest can say what they lack (and, for a harness's side log, which file
holds the run) instead of "unknown format".

- Aider's ``--analytics-log FILE`` (``aider/analytics.py`` ``Analytics.event``): one JSON object a line,
  ``{"event", "properties", "user_id", "time"}``. Its ``message_send`` events give each reply's token counts and
  cost (``base_coder.py`` ``show_usage_report``) but no message of the conversation, so no prompt can be rebuilt.
  It is the wrong file: an error wherever it is found (:func:`why_no_run`).
- An empty file, or one of blank lines only (:func:`empty`), and a log its reader recognises that has no
  conversation in it yet (:func:`no_conversation`; e.g. a Claude Code session holding only file-history snapshots or
  system notices). Found in a folder they are skipped and counted in one line; named on the command line, an error
  saying so (:class:`NoRun`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from replay.errors import ReplayError
from replay.readers.base import open_log

ANALYTICS_KEYS = {"event", "properties", "user_id", "time"}
CHUNK = 1 << 16
SKIPPED = "skipped when found in a folder"


@dataclass(frozen=True)
class NoRun:
    """A log holding no run: ``kind`` names it in the one line that counts those skipped in a folder, ``reason``
    is the error for one named on the command line."""

    kind: str
    reason: str


def why_no_run(head: str) -> tuple[int, str] | None:
    """(line, reason) when the file's head is a harness log known to hold no run, else None."""
    for n, line in enumerate(head.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            first = json.loads(line)
        except ValueError:
            return None
        if isinstance(first, dict) and set(first) == ANALYTICS_KEYS and isinstance(first["properties"], dict):
            return n, (
                "an aider analytics log (--analytics-log): its message_send events hold each reply's token counts "
                "but none of the conversation, so there is no run to replay; ingest the session's "
                ".aider.chat.history.md instead (its Tokens lines carry the same counts)"
            )
        return None
    return None


def empty(path: Path) -> NoRun | None:
    """A NoRun when the file (decompressed, if compressed) holds nothing but whitespace, else None; None too when it
    cannot be read (its read reports why)."""
    try:
        if path.stat().st_size == 0:
            return NoRun(
                "empty", f"an empty file (0 bytes): it holds no run, so there is nothing to ingest ({SKIPPED})"
            )
        with open_log(path) as fh:
            while chunk := fh.read(CHUNK):
                if chunk.strip():
                    return None
    except (OSError, EOFError, ValueError, ReplayError):
        return None
    return NoRun("empty", f"a file of blank lines only: it holds no run, so there is nothing to ingest ({SKIPPED})")


def no_conversation(fmt: str) -> NoRun:
    """A log the ``fmt`` reader recognised and read into no run: no message, model call or tool call in it yet."""
    return NoRun(
        f"{fmt} log with no conversation yet",
        f"a {fmt} log with no conversation in it yet (no message, model call or tool call; e.g. a session that "
        f"was opened and left, holding only snapshots or notices): it holds no run, so there is nothing to ingest "
        f"({SKIPPED})",
    )
