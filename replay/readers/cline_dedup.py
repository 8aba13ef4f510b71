"""Cline's duplicate-file-read pass, re-derived from the log (src/core/context/context-management, facts only).

Whenever Cline manages the context before a request (the previous request's usage reached the model's max allowed
size), it first rewrites duplicate file contents in the kept part of the history: of the user messages from the
first one after the deleted range on, those whose first content block is exactly a tool-result header
``[read_file for 'p'] Result:`` (the file in the next block), or ``[replace_in_file|write_to_file for 'p'] Result:``
with a ``<final_file_content path=..>`` in the next block, are grouped by the header's path as written; all but the
newest of each group get their file content replaced by a fixed 153-character notice, which stays for the rest of
the task. A message rewritten once is never a candidate again. Only then does Cline decide whether to truncate too.
``ui_messages.json`` records the truncation (``conversationHistoryDeletedRange``) but not this rewrite, which is
why the reader derives it here from the messages it has read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NOTICE_CHARS = 153  # length of Cline's duplicateFileReadNotice text
HEADER_RE = re.compile(r"\[(\S+) for '([^']+)'\] Result:")
FINAL_RE = re.compile(r'<final_file_content path="[^"]*">([\s\S]*?)</final_file_content>')
READ, CHANGE = ("read_file",), ("replace_in_file", "write_to_file")


OPENAI_COMPATIBLE_WINDOW = 128_000  # Cline's openAiModelInfoSaneDefaults.contextWindow (src/shared/api.ts)


def cline_window(model: str | None, provider: str | None = None) -> int | None:
    """The context window Cline gives ``model``: for its OpenAI-compatible provider (``openai``), the model info the
    user configures, whose default is 128,000 whatever the model's name; else its model table (Claude models:
    200,000, 1,000,000 for ``:1m``). None for a model whose window the log does not let us know."""
    if provider == "openai":
        return OPENAI_COMPATIBLE_WINDOW
    name = (model or "").lower()
    if not name.startswith("claude-"):
        return None
    return 1_000_000 if name.endswith(":1m") else 200_000


def cline_max_allowed(window: int) -> int:
    """Cline's getContextWindowInfo: the usage at which it manages the context, by the model's window."""
    fixed = {64_000: 37_000, 128_000: 98_000, 200_000: 160_000}
    return fixed.get(window, int(max(window - 40_000, window * 0.8)))


@dataclass(frozen=True)
class FirstResult:
    """A user message whose first block is a file tool's result: the result item and what the pass needs."""

    seq: int
    tool: str
    path: str
    chars: int  # the item's characters
    note_chars: int  # its characters once the file content is replaced by the notice


def first_result(seq: int, text: str) -> FirstResult | None:
    """The candidate a tool-result item is when it opens its user message (None when Cline would skip it)."""
    head, _, body = text.partition("\n")
    m = HEADER_RE.fullmatch(head.strip())
    if m is None or m.group(1) not in READ + CHANGE:
        return None
    if m.group(1) in READ:
        return FirstResult(seq, m.group(1), m.group(2), len(text), len(head) + 1 + NOTICE_CHARS)
    final = FINAL_RE.search(body)
    if final is None:  # no file content in the result (a rejected change): nothing to rewrite
        return None
    return FirstResult(seq, m.group(1), m.group(2), len(text), len(text) - len(final.group(1)) + NOTICE_CHARS + 2)


def duplicate_pass(candidates: dict[int, FirstResult], start: int, end: int, done: set[int]) -> list[list[int]]:
    """One pass over API messages [start, end): ``[item seq, characters after the rewrite]`` of every duplicate
    but the newest per path; ``done`` (messages rewritten before) is skipped and updated."""
    by_path: dict[str, list[int]] = {}
    for i in range(start, end):
        c = candidates.get(i)
        if c is not None and i not in done:
            by_path.setdefault(c.path, []).append(i)
    out: list[list[int]] = []  # [seq, chars] pairs, kept as JSON arrays in the run's metadata
    for msgs in by_path.values():
        for i in msgs[:-1]:
            done.add(i)
            c = candidates[i]
            out.append([c.seq, min(c.note_chars, c.chars)])
    return sorted(out)
