"""Which resource (file, command, URL) a tool call touches, and how."""

from __future__ import annotations

import json
import posixpath
import re
import shlex
from typing import Any

READ_TOOLS = {"read", "read_file", "view", "open", "cat", "readfile", "notebookread", "view_file"}
WRITE_TOOLS = {
    "write",
    "edit",
    "multiedit",
    "write_file",
    "create",
    "notebookedit",
    "apply_patch",
    "edit_file",
    "str_replace",
    "insert",
    "replace_in_file",
    "create_file",
}
SEARCH_TOOLS = {
    "grep",
    "glob",
    "search",
    "find_file",
    "search_file",
    "search_dir",
    "find",
    "list_files",
    "ls",
    "codebase_search",
    "file_search",
}
SHELL_TOOLS = {
    "bash",
    "shell",
    "exec_command",
    "execute_bash",
    "run_command",
    "terminal",
    "local_shell",
    "shell_command",
    "container.exec",
    "cmd",
    "run",
}
WEB_TOOLS = {"webfetch", "web_fetch", "fetch", "browser", "websearch", "web_search", "browse"}
EDITOR_TOOLS = {"str_replace_editor", "str_replace_based_edit_tool", "edit_file_tool"}
PATH_KEYS = ("file_path", "path", "filename", "file", "notebook_path", "target_file")
SHELL_READERS = {"cat", "head", "tail", "less", "more", "nl", "bat", "wc"}
SHELL_SEARCHERS = {"grep", "rg", "ag", "find", "ls", "fd", "tree", "git grep"}
URL_RE = re.compile(r"https?://[^\s'\"<>]+")
PATCH_FILE_RE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.M)


# shlex reads a string one character at a time in Python (a tenth of a Claude Code file's parse time): without a quote
# or a backslash, its words are exactly the runs of characters between its whitespace (space, tab, CR, LF; not
# str.split's wider set)
_QUOTING = re.compile(r"[\"'\\]")
_WORD = re.compile(r"[^ \t\r\n]+")


def split_words(text: str) -> list[str]:
    """``shlex.split(text)``, raising ValueError as it does, and as shlex itself only when something is quoted or
    escaped."""
    if _QUOTING.search(text) is None:
        return _WORD.findall(text)
    return shlex.split(text)


def normalise_path(path: str) -> str:
    path = path.strip().strip("'\"")
    return posixpath.normpath(path) if path else path


_XML_CALL = re.compile(r"<function=([^>\s]+)>")
_XML_PARAM = re.compile(r"<parameter=([^>\s]+)>(.*?)</parameter>", re.DOTALL)


def _xml_params(text: str) -> dict[str, Any] | None:
    """The parameters of an action written as ``<function=NAME><parameter=KEY>VALUE</parameter>...`` (SWE-agent's
    XML function format); a value that is a JSON list (``[380, 400]``) as that list. None: not that format."""
    if _XML_CALL.search(text) is None:
        return None
    out: dict[str, Any] = {}
    for key, raw in _XML_PARAM.findall(text):
        value = raw.strip()
        if value.startswith("["):
            try:
                value = json.loads(value)
            except ValueError:
                pass
        out[key] = value
    return out or None


def _as_dict(args: Any) -> dict[str, Any]:
    if isinstance(args, dict):
        return args
    if isinstance(args, str):
        try:
            value = json.loads(args)
        except ValueError:
            return _xml_params(args) or {"command": args}
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


INLINE_ACCESS = {
    "open": "read",
    "goto": "read",
    "scroll_up": "read",
    "scroll_down": "read",
    "create": "write",
    "edit": "write",
    "insert": "write",
    "find_file": "search",
    "search_dir": "search",
    "search_file": "search",
    "submit": "other",
}
EDITOR_TOOLS = {"str_replace_editor", "str_replace_based_edit_tool"}


def _inline_command(name: str, command: Any) -> tuple[str | None, str] | None:
    """SWE-agent style calls whose whole command line is the args, e.g. ``open "a.py" 100``."""
    if not isinstance(command, str) or (name not in INLINE_ACCESS and name not in EDITOR_TOOLS):
        return None
    try:
        words = split_words(command.strip().split("\n", 1)[0])
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
            inner = split_words(m.group(1))
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
        words = split_words(first)
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


# -- what part of a resource a read shows -----------------------------------------------------------------------
END = 2**62  # open end of a line range
SWE_WINDOW = 100  # lines SWE-agent's windowed ``open`` shows
Span = tuple[int, int, str | None]  # (lo, hi, key): lines lo..hi (1-based, inclusive; lo < 0 counts from the end)
WHOLE: Span = (1, END, None)
SED_RANGE_RE = re.compile(r"^(\d+)(?:,(\d+|\$))?p$")
RANGE_FILTERS = {"sed", "head", "tail"}


def read_span(tool_name: str | None, args: Any) -> Span:
    """The part of its resource a read call shows: a line range, or a key naming the exact command.

    Ranges come from the read tools' arguments (Claude Code Read offset/limit, str_replace_editor view_range,
    OpenHands read start/end, SWE-agent ``open FILE LINE``) and simple shell readers (cat, nl, head, tail,
    ``sed -n 'A,Bp'``, optionally piped into one of sed -n/head/tail). ``tail -n N`` gives (-N, -1). Anything
    else (a filter such as grep, wc, an unparseable command) gets ``key``: the normalised command, so only the
    same command counts as the same content. No arguments at all: the whole resource."""
    name = (tool_name or "").lower()
    a = _as_dict(args)
    command = a.get("command") if isinstance(a.get("command"), str) else None
    if name in INLINE_ACCESS or name in EDITOR_TOOLS and command and command.split(None, 1)[0].lower() == name:
        inline = _inline_span(name, command or "")
        if inline is not None:
            return inline
    if "view_range" in a or name in EDITOR_TOOLS:
        return _view_range(a.get("view_range"))
    if "offset" in a or "limit" in a:  # Claude Code Read: offset is the first line (1-based), limit a line count
        lo = max(_int(a.get("offset"), 1), 1)
        limit = _int(a.get("limit"), 0)
        return (lo, lo + limit - 1 if limit > 0 else END, None)
    if "start" in a or "end" in a:  # OpenHands read: a slice of lines, start 0-based, end -1 for the rest
        start, end = max(_int(a.get("start"), 0), 0), _int(a.get("end"), -1)
        return (start + 1, end if end > 0 else END, None)
    script = a.get("command") or a.get("cmd") or a.get("script")
    if isinstance(script, list):
        wrapped = len(script) == 3 and str(script[1]) in ("-c", "-lc") and str(script[0]).endswith("sh")
        script = str(script[2]) if wrapped else shlex.join(map(str, script))
    if isinstance(script, str) and script.strip():
        resource, _ = classify_shell(script)
        return shell_span(script, resource)
    return WHOLE


def _int(value: Any, default: int) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _view_range(value: Any) -> Span:
    if isinstance(value, list | tuple) and len(value) == 2:
        lo, hi = _int(value[0], 1), _int(value[1], -1)
        return (max(lo, 1), hi if hi > 0 else END, None)
    return WHOLE


def _inline_span(name: str, command: str) -> Span | None:
    """SWE-agent ``open FILE [LINE]`` (a window around LINE) and ``str_replace_editor view FILE --view_range A B``."""
    try:
        words = split_words(command.strip().split("\n", 1)[0])
    except ValueError:
        return None
    if name == "open":
        line = _int(words[2], 0) if len(words) > 2 else 0
        if line <= 0:
            return (1, SWE_WINDOW, None)
        lo = max(line - SWE_WINDOW // 2, 1)
        return (lo, lo + SWE_WINDOW - 1, None)
    if name in EDITOR_TOOLS:
        if "--view_range" in words:
            i = words.index("--view_range")
            return _view_range(words[i + 1 : i + 3])
        return WHOLE
    return None


def _words(segment: str) -> list[str]:
    try:
        words = split_words(segment)
    except ValueError:
        words = segment.split()
    return [w for w in words if not re.match(r"^\d*>", w)]  # redirections such as 2>/dev/null


def _reader_span(words: list[str]) -> tuple[str, Span] | None:
    """(file, span) for ``cat/nl/head/tail/sed -n`` over one file, else None."""
    prog = posixpath.basename(words[0])
    operands = [w for w in words[1:] if not w.startswith("-")]
    if prog == "sed":
        if "-n" not in words[1:] or len(operands) != 2 or not SED_RANGE_RE.match(operands[0]):
            return None
        span = _filter_span(words)
        return (normalise_path(operands[1]), span) if span else None
    if prog in ("cat", "nl") and len(operands) == 1:
        return normalise_path(operands[0]), WHOLE
    if prog in ("head", "tail"):
        files = [o for o in operands if not o.lstrip("+").isdigit()]
        span = _filter_span(words)
        return (normalise_path(files[0]), span) if len(files) == 1 and span else None
    return None


def _filter_span(words: list[str]) -> Span | None:
    """Lines a range filter keeps: ``sed -n 'A,Bp'``, ``head [-n] N``, ``tail [-n] N`` (default 10)."""
    prog = posixpath.basename(words[0])
    if prog == "sed":
        ops = [w for w in words[1:] if not w.startswith("-")]
        m = SED_RANGE_RE.match(ops[0]) if ops and "-n" in words else None
        if not m:
            return None
        lo = int(m.group(1))
        hi = END if m.group(2) == "$" else int(m.group(2) or lo)
        return (lo, hi, None)
    n, i = 10, 1
    while i < len(words):
        w = words[i]
        if w in ("-n", "--lines") and i + 1 < len(words):
            n, i = _int(words[i + 1].lstrip("+"), -1) * (-1 if words[i + 1].startswith("+") else 1), i + 2
            continue
        if w.startswith("--lines="):
            n = _int(w.split("=", 1)[1], -1)
        elif re.match(r"^-\d+$", w):
            n = int(w[1:])
        i += 1
    if n == -1:
        return None
    if prog == "head":
        return (1, n, None) if n > 0 else None
    if n < 0:  # tail -n +K: from line K on
        return (-n, END, None)
    return (-n, -1, None) if n > 0 else None


def _compose(base: Span, filt: Span) -> Span | None:
    """Lines of the file a filter over ``base``'s output keeps."""
    lo, hi, _ = base
    flo, fhi, _ = filt
    if flo < 0:  # tail: lines from the end, known only when the base reaches the end
        return filt if (lo, hi) == (1, END) else None
    if lo < 0:
        return None
    new_lo = lo + flo - 1
    new_hi = hi if fhi == END else min(hi, lo + fhi - 1)
    return (new_lo, new_hi, None) if new_lo <= new_hi else None


def shell_span(command: str, resource: str | None) -> Span:
    """Span of ``resource`` a shell command prints: the hull of its parseable reader steps over that file,
    else the normalised command as the key."""
    command = _strip_wrapper(command)
    key = " ".join(command.split())
    spans: list[Span] = []
    for step in re.split(r"\s*(?:&&|;|\n)\s*", command):
        pipe = [p for p in re.split(r"\s*\|\s*", step) if p.strip()]
        if not pipe:
            continue
        words = _words(pipe[0])
        if not words or posixpath.basename(words[0]) == "echo" and len(pipe) == 1:
            continue
        read = _reader_span(words)
        if read is None or read[0] != resource:
            if resource is not None and any(resource == normalise_path(w) for w in words[1:]):
                return (1, END, key)  # touches the resource in a way we cannot read as lines
            continue
        span = read[1]
        if len(pipe) > 2:
            return (1, END, key)
        if len(pipe) == 2:
            fw = _words(pipe[1])
            filt = _filter_span(fw) if fw and posixpath.basename(fw[0]) in RANGE_FILTERS else None
            composed = _compose(span, filt) if filt else None
            if composed is None:
                return (1, END, key)
            span = composed
        spans.append(span)
    if not spans:
        return (1, END, key)
    if any(s[0] < 0 for s in spans):
        return spans[0] if len(spans) == 1 else (1, END, key)
    return (min(s[0] for s in spans), max(s[1] for s in spans), None)


def overlaps(a: Span, b: Span) -> bool:
    """Whether two reads of one resource show some of the same content."""
    if a[2] is not None or b[2] is not None:
        return a[2] == b[2]
    if (a[0], a[1]) == (1, END) or (b[0], b[1]) == (1, END):
        return True
    if (a[0] < 0) != (b[0] < 0):
        return False  # head of the file vs its tail: unknown without the file's length
    return a[0] < 0 or (a[0] <= b[1] and b[0] <= a[1])
