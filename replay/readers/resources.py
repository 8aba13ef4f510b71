"""Which resource (file, command, URL) a tool call touches, and how."""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from typing import Any

READ_TOOLS = {"read", "read_file", "view", "open", "cat", "readfile", "notebookread", "view_file"}
WRITE_TOOLS = {"write", "edit", "multiedit", "write_file", "create", "notebookedit", "apply_patch",
               "edit_file", "str_replace", "insert", "replace_in_file", "create_file"}
SEARCH_TOOLS = {"grep", "glob", "search", "find_file", "search_file", "search_dir", "find",
                "list_files", "ls", "codebase_search", "file_search"}
SHELL_TOOLS = {"bash", "shell", "exec_command", "execute_bash", "run_command", "terminal",
               "local_shell", "shell_command", "container.exec", "cmd", "run"}
WEB_TOOLS = {"webfetch", "web_fetch", "fetch", "browser", "websearch", "web_search", "browse"}
EDITOR_TOOLS = {"str_replace_editor", "str_replace_based_edit_tool", "edit_file_tool"}
PATH_KEYS = ("file_path", "path", "filename", "file", "notebook_path", "target_file")
SHELL_READERS = {"cat", "head", "tail", "less", "more", "nl", "bat", "wc"}
SHELL_SEARCHERS = {"grep", "rg", "ag", "find", "ls", "fd", "tree", "git grep"}
URL_RE = re.compile(r"https?://[^\s'\"<>]+")
PATCH_FILE_RE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.M)


def normalise_path(path: str) -> str:
    path = path.strip().strip("'\"")
    return posixpath.normpath(path) if path else path


def _as_dict(args: Any) -> dict[str, Any]:
    if isinstance(args, dict):
        return args
    if isinstance(args, str):
        try:
            value = json.loads(args)
        except ValueError:
            return {"command": args}
        return value if isinstance(value, dict) else {"command": args}
    return {}


def classify_call(tool_name: str | None, args: Any) -> tuple[str | None, str | None]:
    """Return (resource, access) for a tool call; (None, 'other') when unknown."""
    name = (tool_name or "").lower()
    a = _as_dict(args)
    inline = _inline_command(name, a.get("command"))
    if inline:
        return inline
    path = next((a[k] for k in PATH_KEYS if isinstance(a.get(k), str) and a[k]), None)
    sub = str(a.get("command", "")).lower() if name in EDITOR_TOOLS else ""
    if sub:
        access = "read" if sub == "view" else "write"
        return (normalise_path(path) if path else None), access
    if name in READ_TOOLS and path:
        return normalise_path(path), "read"
    if name in WRITE_TOOLS:
        if path:
            return normalise_path(path), "write"
        patch = a.get("input") or a.get("patch") or a.get("command") or ""
        match = PATCH_FILE_RE.search(str(patch))
        return (normalise_path(match.group(1)) if match else None), "write"
    if name in SEARCH_TOOLS:
        target = a.get("pattern") or a.get("query") or path or a.get("command")
        return (str(target) if target else None), "search"
    if name in WEB_TOOLS:
        url = a.get("url") or a.get("query")
        return (str(url) if url else None), "other"
    web = a.get("url") or a.get("urls") or a.get("query") or a.get("q")
    if name.startswith(("mcp__", "web_browser")) and web:  # MCP web tools (mcp__fetch__fetch), inspect web_browser_go
        return str(web[0] if isinstance(web, list) else web), "other"
    command = a.get("command") or a.get("cmd") or a.get("script")
    if isinstance(command, list):  # argv; ["bash", "-lc", script] (Codex) is the script itself
        wrapped = len(command) == 3 and str(command[1]) in ("-c", "-lc") and str(command[0]).endswith("sh")
        command = str(command[2]) if wrapped else " ".join(map(str, command))
    if name in SHELL_TOOLS or (not name and command) or (command and name not in WRITE_TOOLS):
        if isinstance(command, str) and command.strip():
            return classify_shell(command)
    if path:
        return normalise_path(path), "other"
    return None, "other"


INLINE_ACCESS = {"open": "read", "goto": "read", "scroll_up": "read", "scroll_down": "read", "create": "write",
                 "edit": "write", "insert": "write", "find_file": "search", "search_dir": "search",
                 "search_file": "search", "submit": "other"}
EDITOR_TOOLS = {"str_replace_editor", "str_replace_based_edit_tool"}


def _inline_command(name: str, command: Any) -> tuple[str | None, str] | None:
    """SWE-agent style calls whose whole command line is the args, e.g. ``open "a.py" 100``."""
    if not isinstance(command, str) or (name not in INLINE_ACCESS and name not in EDITOR_TOOLS):
        return None
    try:
        words = shlex.split(command.strip().split("\n", 1)[0])
    except ValueError:
        words = command.split()
    if not words or words[0].lower() != name:
        return None
    if name in EDITOR_TOOLS:
        path = normalise_path(words[2]) if len(words) > 2 else None
        return path, "read" if len(words) > 1 and words[1] == "view" else "write"
    access = INLINE_ACCESS[name]
    if name in {"open", "create"} and len(words) > 1:
        return normalise_path(words[1]), access
    if access == "search" and len(words) > 1:
        return " ".join(words[1:]), access
    return None, access


def _strip_wrapper(command: str) -> str:
    """Unwrap `bash -lc '...'` and leading `cd dir &&` so the real command shows."""
    command = command.strip()
    m = re.match(r"^(?:/bin/)?(?:ba|z)?sh\s+-l?c\s+(.+)$", command, re.S)
    if m:
        try:
            inner = shlex.split(m.group(1))
            command = inner[0] if inner else command
        except ValueError:
            command = m.group(1).strip("'\"")
    while True:
        m = re.match(r"^cd\s+\S+\s*(?:&&|;)\s*(.+)$", command, re.S)
        if not m:
            return command
        command = m.group(1)


def classify_shell(command: str) -> tuple[str | None, str | None]:
    """Classify a shell command: file reads (cat, sed -n, head...), searches, writes, exec."""
    command = _strip_wrapper(command)
    first = re.split(r"\s*(?:\|\||&&|\||;|\n)\s*", command, maxsplit=1)[0]
    try:
        words = shlex.split(first)
    except ValueError:
        words = first.split()
    if not words:
        return None, "exec"
    prog = posixpath.basename(words[0])
    operands = [w for w in words[1:] if not w.startswith("-")]
    redirect = re.search(r"(?<![0-9&])>{1,2}\s*([^\s|;&]+)", first)
    if redirect and not redirect.group(1).startswith("/dev/"):
        return normalise_path(redirect.group(1)), "write"
    if prog == "sed" and "-i" in words[1:]:
        return (normalise_path(operands[-1]) if len(operands) > 1 else None), "write"
    if prog == "sed" and "-n" in words[1:] and len(operands) >= 2:
        return normalise_path(operands[-1]), "read"
    if prog in SHELL_READERS and operands:
        numeric = [o for o in operands if not o.lstrip("+").isdigit()]
        return (normalise_path(numeric[-1]) if numeric else None), "read"
    if prog in {"grep", "rg", "ag"}:
        return (" ".join(operands) or None), "search"
    if prog in {"find", "ls", "fd", "tree"}:
        return (normalise_path(operands[0]) if operands else "."), "search"
    if prog in {"tee", "touch", "mkdir", "rm", "mv", "cp"} and operands:
        return normalise_path(operands[-1]), "write"
    if prog in {"curl", "wget"}:
        url = URL_RE.search(first)
        return (url.group(0) if url else None), "other"
    return first.strip()[:300], "exec"
