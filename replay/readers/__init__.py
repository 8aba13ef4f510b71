"""Format readers. Each module defines one reader; detection is by content, in this order.

Third-party readers register under the entry-point group ``replay.readers`` (see docs/readers.md); they are
tried after the built-in ones, in name order.
"""

from __future__ import annotations

import importlib
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path

from replay.errors import ReplayError
from replay.readers.base import (
    HEAD_BYTES,
    MAX_LINE_BYTES,
    FolderReader,
    Reader,
    decode_head,
    logical_path,
    open_log,
)

# Order matters: specific formats before generic ones. OpenHands V1 events carry "kind" discriminators and
# must be claimed before the V0 reader, whose sniff also accepts a V1 eval output.jsonl.
READER_MODULES = [
    "claude_code",
    "codex_rollout",
    "codex_legacy",
    "codex_tui",
    "swe_agent",
    "mini_swe_agent",
    "openhands_v1",
    "openhands",
    "gemini_cli",
    "gemini_checkpoint",
    "copilot_cli",
    "cline_sdk",
    "cline",
    "inspect_ai",
    "aider",
    "openai_messages",
    "canonical",
]
ENTRY_POINT_GROUP = "replay.readers"


@cache
def plugin_readers() -> tuple[Reader, ...]:
    """Readers installed by other packages under the ``replay.readers`` entry-point group."""
    found = []
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            obj = ep.load()
        except Exception as exc:
            raise ReplayError(
                f"reader plugin {ep.name!r} ({ep.value}) failed to load: {type(exc).__name__}: {exc}; "
                "fix or uninstall the package that provides it"
            ) from exc
        reader = obj() if isinstance(obj, type) else obj
        if not (hasattr(reader, "format") and hasattr(reader, "sniff") and hasattr(reader, "read")):
            raise ReplayError(
                f"reader plugin {ep.name!r} ({ep.value}) is not a reader: it needs `format`, "
                "`sniff(head, path)` and `read(ctx)`"
            )
        found.append(reader)
    return tuple(found)


def readers() -> list[Reader]:
    built_in = [importlib.import_module(f"replay.readers.{name}").READER for name in READER_MODULES]
    return built_in + list(plugin_readers())


def folder_reader(path: Path) -> tuple[Reader, list[Path]] | None:
    """The reader for which directory ``path`` is one run (with its member files), or None."""
    if not path.is_dir():
        return None
    for reader in readers():
        if isinstance(reader, FolderReader) and (members := reader.members(path)):
            return reader, members
    return None


def detect(path: Path) -> Reader | None:
    """The reader whose sniff accepts the file's head (or that claims the run folder), or None."""
    if path.is_dir():
        found = folder_reader(path)
        return found[0] if found else None
    named = logical_path(path)  # a compressed log is sniffed as the file inside (x.jsonl.gz as x.jsonl)
    with open_log(path) as fh:
        raw = fh.read(HEAD_BYTES)
        head = decode_head(raw)
        for reader in readers():
            if _sniffs(reader, head, named):
                return reader
        if len(raw) < HEAD_BYTES or raw.endswith(b"\n"):
            return None
        # a line running past the head (damaged, hostile) must not hide the rest: sniff the lines around it
        complete = raw[: raw.rfind(b"\n") + 1]
        cut = len(raw) - len(complete)  # the long line's bytes read so far: the rest of it is skipped unread
        if cut < MAX_LINE_BYTES:
            fh.readline(MAX_LINE_BYTES - cut)
        rest = decode_head(complete + fh.read(HEAD_BYTES))
    for reader in readers():
        if _sniffs(reader, rest, named):
            return reader
    return None


def _sniffs(reader: Reader, head: str, path: Path) -> bool:
    """``reader.sniff``, where a head it cannot parse (hostile nesting, odd types) is simply not its format."""
    try:
        return bool(reader.sniff(head, path))
    except (ValueError, TypeError, KeyError, AttributeError, IndexError, RecursionError):
        return False


def reader_key(reader: Reader) -> str:
    """What read a file, as the store keeps it (``files.reader_version``): ``format/version`` (version 1 unless the
    reader says otherwise)."""
    return f"{reader.format}/{getattr(reader, 'version', 1)}"


def formats() -> list[str]:
    return [r.format for r in readers()]
