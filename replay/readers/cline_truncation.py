"""Cline's context truncation range (``ContextManager.getNextTruncationRange``), for a task whose UI messages,
where Cline stamps each range it applies, are not kept.

Before each request, when the previous request's tokens in, out and cached (Cline's own sum) reached the model's
max allowed size, Cline removes an even number of API messages after the first user/assistant pair: half of those
after the range already deleted, three quarters when that sum was over twice the max allowed size; the range ends
on an assistant message. The history it measures is the one the request is sent with (its last message the
request's user message)."""

from __future__ import annotations


def next_truncation_range(roles: list[str], current: list[int] | None, quarter: bool) -> list[int]:
    """The inclusive API-message range Cline deletes from a history of these ``roles``, ``current`` already
    deleted; ``quarter``: keep a quarter of the rest rather than half."""
    start = current[1] + 1 if current else 2
    rest = len(roles) - start
    removed = (rest * 3 // 4 // 2) * 2 if quarter else (rest // 4) * 2
    end = start + removed - 1
    if 0 <= end < len(roles) and roles[end] != "assistant":
        end -= 1
    return [2, end]
