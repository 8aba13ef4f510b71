"""Find agent logs where each harness keeps them by default, or where an environment variable says.

Per harness, the first that applies:
1. ``REPLAY_<HARNESS>_DIR`` (e.g. ``REPLAY_CLAUDE_CODE_DIR``, ``REPLAY_CLINE_DIR``): the log folders themselves,
   comma-separated;
2. the harness's own variable, as the harness and ccusage read it: ``CLAUDE_CONFIG_DIR`` (comma-separated,
   logs in ``<dir>/projects``), ``CODEX_HOME`` (``<dir>/sessions``), ``GEMINI_DATA_DIR`` (the ``tmp`` folder);
3. the default folders under the home directory (``HOME``).
"""

from __future__ import annotations

import fnmatch
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from replay.errors import ReplayError
from replay.readers import folder_reader
from replay.readers.base import COMPRESSED_SUFFIXES

VSCODE_FLAVOURS = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")
CLINE_TASKS = "User/globalStorage/saoudrizwan.claude-dev/tasks"


@dataclass(frozen=True)
class Harness:
    """Where one harness writes its logs, and which files there are logs."""

    name: str
    defaults: tuple[str, ...]  # log folders relative to the home directory
    env: str | None = None  # the harness's own home variable (comma-separated list allowed)
    env_sub: str = ""  # the log folder under a folder that variable names
    patterns: tuple[str, ...] = ()  # paths that are logs (fnmatch on the whole path); empty: run folders only
    folders: bool = False  # run folders (a conversation, a task) are logs

    @property
    def override(self) -> str:
        return "REPLAY_" + self.name.upper().replace("-", "_") + "_DIR"


HARNESSES: tuple[Harness, ...] = (
    Harness(
        "claude-code", (".config/claude/projects", ".claude/projects"), "CLAUDE_CONFIG_DIR", "projects", ("*.jsonl",)
    ),
    Harness("codex", (".codex/sessions",), "CODEX_HOME", "sessions", ("*/rollout-*.jsonl",)),
    # main sessions chats/session-<time>-<id8>.json(l); subagents chats/<parent session id>/<id>.jsonl
    Harness("gemini-cli", (".gemini/tmp",), "GEMINI_DATA_DIR", "", ("*/chats/*.json", "*/chats/*.jsonl")),
    Harness("openhands", (".openhands/conversations",), folders=True),
    Harness(
        "copilot-cli",
        (".copilot/session-state", ".copilot/history-session-state"),
        patterns=("*.jsonl", "*/session*.json"),
    ),
    Harness(
        "cline",
        tuple(
            f"{base}/{flavour}/{CLINE_TASKS}"
            for base in (".config", "Library/Application Support")
            for flavour in VSCODE_FLAVOURS
        )
        + (".cline/data/tasks", ".cline/data/sessions"),  # 3.x CLI tasks; 4.x SDK sessions (VS Code and CLI)
        folders=True,
    ),
)


@dataclass
class Found:
    """What discovery found for one harness: the folders looked at and the log files/folders in them."""

    harness: str
    source: str  # "default", or the variable that set the folders
    roots: list[Path]
    logs: list[Path] = field(default_factory=list)
    unreadable: list[Path] = field(default_factory=list)  # folders that could not be listed (skipped)
    special: list[tuple[Path, str]] = field(default_factory=list)  # log names that are FIFOs, sockets, devices

    @property
    def existing(self) -> list[Path]:
        return [r for r in self.roots if r.is_dir()]


def harness_names() -> list[str]:
    return [h.name for h in HARNESSES]


def _split(value: str) -> list[Path]:
    return [Path(v.strip()).expanduser() for v in value.split(",") if v.strip()]


def roots_of(h: Harness, env: Mapping[str, str], home: Path) -> tuple[str, list[Path]]:
    """(where the folders came from, the folders) for one harness."""
    if env.get(h.override):
        return h.override, _split(env[h.override])
    if h.env and env.get(h.env):
        return h.env, [p / h.env_sub if h.env_sub else p for p in _split(env[h.env])]
    return "default", [home / d for d in h.defaults]


def _is_log(h: Harness, path: Path) -> bool:
    name = path.as_posix()
    for suffix in COMPRESSED_SUFFIXES:
        name = name.removesuffix(suffix)
    return any(fnmatch.fnmatchcase(name, p) for p in h.patterns)


def special_kind(path: Path) -> str | None:
    """What a path that is neither a regular file nor a folder is (a FIFO, a socket, a device), else None. Reading a
    FIFO waits for a writer forever and a device never ends: such paths are skipped, each with a line."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    for test, kind in (
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):
        if test(mode):
            return kind
    return None


def logs_in(
    h: Harness, root: Path, unreadable: list[Path] | None = None, special: list[tuple[Path, str]] | None = None
) -> list[Path]:
    """The log files (and run folders) under one root, in name order; a folder that cannot be listed is added to
    ``unreadable`` and passed over. A loop, not recursion (a folder 1,200 deep exceeded the recursion limit); a
    folder reached twice through links is read once (two self-links made the walk endless). A log name that is a
    FIFO, socket or device goes to ``special``, never read."""
    found: list[Path] = []
    stack: list[Path] = [root]
    visited: set[tuple[int, int]] = set()
    while stack:
        folder = stack.pop()
        try:
            st = folder.stat()  # a folder is known by its device and inode: resolve() lstats every component of
            real = (st.st_dev, st.st_ino)  # the path, which made a walk 1,200 deep take half a minute
            if real in visited:  # reached again through a link: a cycle, or already read
                continue
            visited.add(real)
            children = sorted(folder.iterdir())
        except (OSError, RuntimeError):
            if unreadable is not None:
                unreadable.append(folder)
            continue
        later = []
        for child in children:
            if child.name.startswith("."):
                continue
            try:
                if child.is_dir():  # a linked folder too, once (``visited``)
                    if h.folders and folder_reader(child):
                        found.append(child)
                    else:
                        later.append(child)
                elif child.is_file() and _is_log(h, child):
                    found.append(child)
                elif special is not None and _is_log(h, child) and (kind := special_kind(child)):
                    special.append((child, kind))  # a FIFO would block the read forever: named, never read
            except OSError:
                if unreadable is not None:
                    unreadable.append(child)
        stack.extend(reversed(later))
    return sorted(found)


def discover(
    names: Iterable[str] | None = None, env: Mapping[str, str] | None = None, home: Path | None = None
) -> list[Found]:
    """Every selected harness's logs in its location (``names`` None: all harnesses)."""
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home()) if home is None else home
    wanted = list(names) if names else harness_names()
    unknown = [n for n in wanted if n not in harness_names()]
    if unknown:
        raise ReplayError(f"--harness {', '.join(unknown)}: not a harness; choose from {', '.join(harness_names())}")
    out = []
    for h in HARNESSES:
        if h.name not in wanted:
            continue
        source, roots = roots_of(h, env, home)
        found = Found(h.name, source, roots)
        seen: set[Path] = set()
        for root in found.existing:
            for log in logs_in(h, root, found.unreadable, found.special):
                if log not in seen:
                    seen.add(log)
                    found.logs.append(log)
        out.append(found)
    return out
