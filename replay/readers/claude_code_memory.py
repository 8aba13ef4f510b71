"""The memory files Claude Code reads again after a compaction, as the session's own writes left them.

Claude Code sends the memory files (CLAUDE.md and kin) at the head of the conversation, read once per session and kept
(its user context is memoised). From 2.1.77 the cleanup after a compaction of the main thread clears that memo and
the memory-file cache (cli.js 2.1.77 to 2.1.80, 2.1.97 and the 2.1.132 binary: ``post_compact_cleanup``; 2.1.76
and before clear it on neither path of an automatic compaction), so the first request after the summary reads them
from disk again. A memory file the session created is then sent for the first time: the transcript holds no item
for it (Eduardodmb/ClaudeWork 762cc180, 2.1.136, wrote ``~/.claude/CLAUDE.md``, 17,591 characters, and the prompt
after its compaction is some 5,800 tokens over what the log holds).

The files read at start (cli.js 2.1.79 memory loader): the user's ``~/.claude/CLAUDE.md`` and ``~/.claude/rules``,
each folder's ``CLAUDE.md``, ``.claude/CLAUDE.md``, ``CLAUDE.local.md`` and ``.claude/rules`` from the root to the
working directory, and the project's auto memory ``~/.claude/projects/<project>/memory/MEMORY.md``. The content is
what the log's own Write, Edit and MultiEdit calls made of a file a Write created (its result's ``type`` "create");
a file that existed before the session (read, or first changed by an edit or an update) is not followed: the
prefix already holds its old content, and the change is not modelled.
"""

from __future__ import annotations

import re
from typing import Any

REREAD_FROM = (2, 1, 77)  # the first version whose automatic compaction re-reads the memory files
MEMORY_REREAD = "memory_reread"  # the tool name of the item that stands for such a file
# the frame around a re-read file, in this project's words (what it costs is its size)
FRAME = "Contents of {path}:\n\n{content}"
_WINDOWS = re.compile(r"^[A-Za-z]:/")


def rereads_memory(version: tuple[int, ...] | None, main_thread: bool) -> bool:
    """Whether a compaction of this Claude Code version re-reads the memory files (the main thread's only)."""
    return main_thread and version is not None and version >= REREAD_FROM


def _norm(path: str) -> str:
    """``path`` with forward slashes, lower-cased on a Windows drive (its file names ignore case)."""
    p = path.replace("\\", "/").rstrip("/")
    return p.lower() if _WINDOWS.match(p) else p


def _home(cwd: str) -> str:
    """The user's home directory as a normalised ``cwd`` tells it (/home/NAME, /Users/NAME, /root, x:/users/NAME),
    else ""."""
    parts = cwd.split("/")
    users = cwd.startswith(("/home/", "/Users/")) or bool(_WINDOWS.match(cwd)) and parts[1] == "users"
    if users and len(parts) >= 3:
        return "/".join(parts[:3])
    return "/root" if cwd == "/root" or cwd.startswith("/root/") else ""


def _project(cwd: str) -> str:
    """The folder name Claude Code keeps a project's sessions under: the path with every other character a dash."""
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in cwd)


def memory_file(path: str, cwd: str) -> bool:
    """Whether Claude Code started in ``cwd`` reads ``path`` as a memory file at the head of the conversation."""
    p, c = _norm(path), _norm(cwd)
    home = _home(c)
    if home and p in (
        _norm(f"{home}/.claude/CLAUDE.md"),
        _norm(f"{home}/.claude/projects/{_project(cwd)}/memory/MEMORY.md"),
    ):
        return True
    if not p.lower().endswith(".md") or "/" not in p:
        return False
    folder, name = p.rsplit("/", 1)
    if "/.claude/rules/" in p:  # a rules file (any depth) of a folder's .claude
        folder = p[: p.index("/.claude/rules/")]
    elif _norm(f"{folder}/{name}") not in (_norm(f"{folder}/CLAUDE.md"), _norm(f"{folder}/CLAUDE.local.md")):
        return False
    elif folder.endswith("/.claude"):
        folder = folder[: -len("/.claude")]
    return folder == home or c == folder or c.startswith(folder + "/") or folder == ""


class MemoryFiles:
    """The memory files a session created, with the content its calls gave them (``reread``)."""

    def __init__(self) -> None:
        self.pending: dict[str, tuple[str, str, dict]] = {}  # call id -> (tool name, path as called, input)
        self.seen: set[str] = set()  # normalised paths a call touched
        self.content: dict[str, tuple[str, str | None]] = {}  # created file -> (its path, its content; None unknown)

    def call(self, call_id: Any, name: str, args: Any, cwd: str) -> None:
        """A tool call: remembered when it is a native file tool's call on a memory file."""
        if not isinstance(call_id, str) or not isinstance(args, dict) or not isinstance(args.get("file_path"), str):
            return
        if name in ("Read", "Write", "Edit", "MultiEdit") and memory_file(args["file_path"], cwd):
            self.pending[call_id] = (name, args["file_path"], args)

    def result(self, call_id: Any, outcome: Any, is_error: bool) -> None:
        """A tool result: the file's content as the call left it."""
        if not isinstance(call_id, str) or call_id not in self.pending:
            return
        name, path, args = self.pending.pop(call_id)
        if is_error:
            return
        key = _norm(path)
        if key not in self.seen:
            self.seen.add(key)
            created = name == "Write" and isinstance(outcome, dict) and outcome.get("type") == "create"
            if created and isinstance(args.get("content"), str):
                self.content[key] = (path, args["content"])
            return
        if key not in self.content or self.content[key][1] is None:
            return
        text = self.content[key][1]
        if name == "Write":
            text = args.get("content") if isinstance(args.get("content"), str) else None
        elif name == "Edit":
            text = _edit(text, args)
        elif name == "MultiEdit":
            for edit in args.get("edits") or []:
                text = _edit(text, edit) if text is not None and isinstance(edit, dict) else None
        self.content[key] = (path, text)

    def reread(self) -> list[str]:
        """The texts of the created memory files whose content is known, as the harness sends them again."""
        return [FRAME.format(path=path, content=text) for path, text in self.content.values() if text]


def _edit(text: str | None, edit: dict) -> str | None:
    """``text`` after an Edit's replacement; None when it cannot be applied (the content is then unknown)."""
    old, new = edit.get("old_string"), edit.get("new_string")
    if text is None or not isinstance(old, str) or not isinstance(new, str) or old not in text:
        return None
    return text.replace(old, new) if edit.get("replace_all") else text.replace(old, new, 1)
