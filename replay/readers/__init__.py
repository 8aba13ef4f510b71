"""Format readers. Each module defines one reader; detection is by content, in this order."""

from __future__ import annotations

import importlib
from pathlib import Path

from replay.readers.base import HEAD_BYTES, Reader

# Order matters: specific formats before generic ones.
READER_MODULES = [
    "claude_code",
    "codex_rollout",
    "codex_tui",
    "swe_agent",
    "mini_swe_agent",
    "openhands",
    "inspect_ai",
    "aider",
    "openai_messages",
    "canonical",
]


def readers() -> list[Reader]:
    return [importlib.import_module(f"replay.readers.{name}").READER for name in READER_MODULES]


def detect(path: Path) -> Reader | None:
    """The reader whose sniff accepts the file's head, or None."""
    with path.open("rb") as fh:
        head = fh.read(HEAD_BYTES).decode("utf-8", "replace")
    for reader in readers():
        if reader.sniff(head, path):
            return reader
    return None


def formats() -> list[str]:
    return [r.format for r in readers()]
