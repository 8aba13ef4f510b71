"""What a Claude Code transcript tells of a file's whole content after a file tool's call.

After a compaction Claude Code reads the newest files of its read-file state again from disk, whole (its restore calls
the Read tool with the path alone: cli.js 1.0.81, 1.0.89, 2.1.20; 2.1.13x transcripts log the files it re-attached with
every line), so what it sends is the file as it stands, not the part a read showed. The transcript's ``toolUseResult``
says more than the tool result the model saw:

- a Read: ``file.totalLines`` (the file's lines) and, when it starts at line 1 and shows them all, the content;
- an Edit: ``originalFile``, the whole file before the replacement (the edit applied gives the file after it);
- a MultiEdit: ``originalFileContents``, the same before its edits;
- a Write: its ``content`` argument is the file.

``whole_file`` turns one call and its outcome into (characters, lines) of the file after it: characters -1 when
only the lines are known (a read of a line range), None when the log says nothing. The reader records them per
result as ``runs.metadata.file_chars`` (the known ones) / ``file_lines`` ([[result seq, n], ...]), which
``replay.policies.auto_compact`` sizes the re-read files by (``RunArrays.file_chars``, ``file_lines``).
"""

from __future__ import annotations

from typing import Any


def _lines(text: str) -> int:
    """Lines of ``text`` as the Read tool splits them (on newlines; a last empty line counts)."""
    return text.count("\n") + 1


def _replaced(text: str, edit: Any) -> str | None:
    """``text`` after one Edit-shaped replacement; None when it does not apply."""
    if not isinstance(edit, dict):
        return None
    old, new = edit.get("old_string"), edit.get("new_string")
    if not isinstance(old, str) or not isinstance(new, str) or (old and old not in text):
        return None
    if not old:  # an edit of an empty old string writes the new content
        return new
    return text.replace(old, new) if edit.get("replace_all") else text.replace(old, new, 1)


def whole_file(name: str, args: Any, outcome: Any) -> tuple[int, int] | None:
    """(characters, lines) of the file a successful ``name`` call with ``args`` left, as its ``toolUseResult``
    (``outcome``) and arguments give it; characters -1 when only its lines are known; None when unknown."""
    if not isinstance(args, dict):
        return None
    if name == "Write":
        content = args.get("content")
        return (len(content), _lines(content)) if isinstance(content, str) else None
    if not isinstance(outcome, dict):
        return None
    if name == "Read":
        file = outcome.get("file")
        if outcome.get("type") != "text" or not isinstance(file, dict):
            return None
        total, content = file.get("totalLines"), file.get("content")
        if type(total) is not int or total <= 0:
            return None
        start, shown = file.get("startLine"), file.get("numLines")
        if isinstance(content, str) and start in (None, 1) and shown == total:
            return len(content), total
        return -1, total
    edits: list[Any]
    if name == "Edit":
        text, edits = outcome.get("originalFile"), [args]
    elif name == "MultiEdit":
        text, edits = outcome.get("originalFileContents"), list(args.get("edits") or [])
    else:
        return None
    if not isinstance(text, str):
        return None
    for edit in edits:
        after = _replaced(text, edit)
        if after is None:
            return None
        text = after
    return len(text), _lines(text)
