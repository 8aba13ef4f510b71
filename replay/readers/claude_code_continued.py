"""Claude Code: a conversation whose earlier part another session file of the same project folder logs.

Claude Code appends to one file for the life of the process (cli.js 2.0.8: the transcript store's ``sessionFile``,
set to ``<session id>.jsonl`` at the first write and kept), while a resume switches the session id its lines carry.
So a session resumed from inside another one goes on in that other file: its lines carry the resumed session's id,
and the first one's ``parentUuid`` is the resumed conversation's last message, which only the resumed session's file
holds. A message is left out of a file that already holds its ``uuid`` (only that file is checked), so when a later
process resumes the session in its own file, the chain written there again starts at a ``compact_boundary`` made in
the other file, whose ``logicalParentUuid`` is a message only the other file holds. Claude Code's loader reads every
transcript of the project folder into one map by ``uuid`` and follows ``parentUuid`` across them: the server was sent
that history.

The reader does the same where the chain of a file's newest message leaves the file (walked back by ``parentUuid``,
past a compaction by its ``logicalParentUuid``): the lines of the other files on that chain, back to a message this
file holds or to the chain's start (a root, a compaction), are read as context before the line whose parent they
end with. Their items are sent; their responses are requests of the file that logs them, counted there once, not
here. ``runs.metadata.continued_from`` names each file so read and how many of its lines. Sibling files are only
opened when a chain leaves the file, and only those whose bytes name the missing ``uuid``. What is read of them is
history written before this file's line that names it (a transcript is only appended to), so a sibling that changes
later does not change this file's run.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from replay.model import BadRecord
from replay.readers.base import ReadContext, iter_json_lines, read_log


@dataclass(frozen=True)
class Borrowed:
    """A line of another file read as context: that file's name, its line number, the parsed line."""

    source: str
    line: int
    obj: dict


@dataclass(frozen=True)
class Exit:
    """Where the chain of a file's newest message leaves the file: the line whose (logical) parent the file does
    not hold, that parent's ``uuid``, and whether the line is a compact_boundary (its logical parent)."""

    line: int
    missing: str
    boundary: bool
    session: str | None  # the line's sessionId: a resumed session's own file is named after it


def _is_boundary(obj: dict) -> bool:
    return obj.get("type") == "system" and obj.get("subtype") == "compact_boundary"


class LinkScan:
    """Fed a file's lines in order, finds where the chain of its newest main-chain message (not a sidechain's)
    leaves the file: walked back by ``parentUuid``, and past a compact_boundary by its ``logicalParentUuid``."""

    def __init__(self) -> None:
        # uuid -> (line, the uuid before it, a boundary, its sessionId)
        self.links: dict[str, tuple[int, Any, bool, Any]] = {}
        self.leaf: str | None = None

    def see(self, line: int, obj: dict) -> None:
        uuid, boundary = obj.get("uuid"), _is_boundary(obj)
        message = boundary or obj.get("type") in ("user", "assistant", "attachment")
        if not isinstance(uuid, str) or obj.get("isSidechain") or not message:
            return
        before = obj.get("parentUuid") or (obj.get("logicalParentUuid") if boundary else None)
        self.links.setdefault(uuid, (line, before, boundary, obj.get("sessionId")))
        self.leaf = uuid

    def exit(self, held: set[str]) -> Exit | None:
        """Where the newest message's chain leaves the file (``held``: the uuids of its lines); None when it starts
        in it."""
        at, seen = self.leaf, set()
        while at is not None and at in self.links and at not in seen:
            seen.add(at)
            line, before, boundary, session = self.links[at]
            if not isinstance(before, str):
                return None
            if before not in held:
                return Exit(line, before, boundary, session if isinstance(session, str) else None)
            at = before
        return None


class Siblings:
    """The other transcripts of a file's project folder, parsed on demand: only files whose bytes name a wanted
    ``uuid`` are read, searched from ``first`` (a file name) on, then from the one written nearest in time."""

    def __init__(self, path: Path, first: str | None = None) -> None:
        self.path, self.first = path, first
        self.by_uuid: dict[str, Borrowed] = {}
        self.read: set[Path] = set()
        self._candidates: list[Path] | None = None

    def candidates(self) -> list[Path]:
        if self._candidates is None:
            own = self.path.stat().st_mtime
            found = [p for p in self.path.parent.glob("*.jsonl") if p != self.path and p.is_file()]
            self._candidates = sorted(found, key=lambda p: (p.name != self.first, abs(p.stat().st_mtime - own), p.name))
        return self._candidates

    def find(self, uuid: str) -> Borrowed | None:
        """The line of another transcript in the folder with this ``uuid``, if any."""
        if uuid in self.by_uuid:
            return self.by_uuid[uuid]
        needle = uuid.encode()
        for other in self.candidates():
            if other in self.read:
                continue
            try:
                if needle not in read_log(other):
                    continue
            except OSError:
                continue
            self.read.add(other)
            self._index(other)
            if uuid in self.by_uuid:
                return self.by_uuid[uuid]
        return None

    def _index(self, other: Path) -> None:
        ctx = ReadContext(other, "")
        for entry in iter_json_lines(ctx):
            if isinstance(entry, tuple) and isinstance(entry[1], dict) and isinstance(entry[1].get("uuid"), str):
                self.by_uuid.setdefault(entry[1]["uuid"], Borrowed(other.name, entry[0], entry[1]))

    def chain(self, last: str, stop: set[str]) -> list[Borrowed]:
        """The lines of other files from the start of the chain ending at ``last`` (a root, a compaction, or the
        message after one in ``stop``) to ``last``, oldest first."""
        out: list[Borrowed] = []
        at: Any = last
        seen: set[str] = set()
        while isinstance(at, str) and at not in stop and at not in seen:
            seen.add(at)
            found = self.find(at)
            if found is None:
                break
            out.append(found)
            if _is_boundary(found.obj):
                break  # the history before a compaction is not sent
            at = found.obj.get("parentUuid")
        return out[::-1]


@dataclass
class Continued:
    """What a file takes from the other transcripts of its folder: the lines to read before its line ``at``, the
    transcripts read (``siblings``), and whether ``at`` is a compact_boundary (a compaction the other file made)."""

    at: Exit
    lines: list[Borrowed]
    siblings: Siblings

    def copied(self, obj: dict) -> str | None:
        """The file that first logged this response line, when another transcript read here logs it earlier (a
        resume writes the chain again from its compaction on): its request is that file's."""
        if obj.get("type") != "assistant" or not isinstance(obj.get("uuid"), str):
            return None
        other = self.siblings.by_uuid.get(obj["uuid"])
        if other is None:
            return None
        theirs, ours = other.obj.get("timestamp"), obj.get("timestamp")
        return other.source if isinstance(theirs, str) and isinstance(ours, str) and theirs < ours else None

    def resumed(self) -> dict[int, str]:
        """The compact_boundary line whose history another transcript logs, with that transcript's name: it made
        the compaction, a resume logged the boundary here again."""
        return {self.at.line: self.lines[-1].source} if self.at.boundary else {}


def continued(path: Path, scan: LinkScan, held: set[str]) -> Continued | None:
    """What ``path`` takes from the other transcripts of its folder (``held``: the uuids of its lines); None when its
    chain never leaves it or no other transcript holds where it goes."""
    at = scan.exit(held)
    if at is None:
        return None
    siblings = Siblings(path, f"{at.session}.jsonl" if at.session else None)
    lines = siblings.chain(at.missing, held)
    return Continued(at, lines, siblings) if lines else None


def interleave(
    entries: Iterator[tuple[int, Any] | BadRecord], found: Continued
) -> Iterator[tuple[int, Any, str | None]]:
    """A file's parsed lines (bad ones left out) with the borrowed lines before the line they lead to: (line number,
    object, the name of the file whose line it is when it is read as context, else None)."""
    for entry in entries:
        if isinstance(entry, BadRecord):
            continue
        line, obj = entry
        if line == found.at.line:
            for b in found.lines:
                yield b.line, b.obj, b.source
        yield line, obj, found.copied(obj) if isinstance(obj, dict) else None
