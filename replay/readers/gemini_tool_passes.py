"""Gemini CLI: a gemini message whose tool calls were recorded in more than one pass (a possible merged request).

The CLI records a batch of finished tool calls in one pass (GeminiChat.recordCompletedToolCalls then
ChatRecordingService.recordToolCalls): every call of the batch is stamped in one synchronous loop, so their
``timestamp``s are equal or one millisecond tick apart. recordToolCalls adds the batch to the last message when
that is a gemini message and no thoughts are queued. Before 0.32 a response made of tool calls alone wrote no
message of its own, so the calls of a second such response without thoughts (and any client-initiated tool batch)
join the first one's message: one message, two requests, the second one's usage lost (the message keeps the
first response's ``tokens``, ``id`` and ``timestamp``; the second's usage stays queued until the next response's
own replaces it). 0.32 on, every response with a tool call records its message first (geminiChat
processStreamResponse), so consecutive requests no longer merge; JSONL recordings (0.39 on) are never merged.

Nothing else in the message tells such a merge from one response: ACP sessions (0.28 on) record each call of one
response in a pass of its own, so calls stamped apart may still be one request. A reader can therefore only flag
the message, not split it or say which calls were a second request.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from replay.readers.builder import instant

ONE_TICK = timedelta(milliseconds=1)  # one pass can straddle one tick of the millisecond clock


def recording_passes(calls: list[dict[str, Any]]) -> int:
    """How many recording passes a gemini message's ``toolCalls`` show at least: 1 + the number of neighbouring
    calls (in the order recorded) stamped more than one millisecond apart. Calls without a readable timestamp are
    skipped; 0 when no call has one."""
    stamps = [t for t in (instant(c.get("timestamp")) for c in calls) if t is not None]
    if not stamps:
        return 0
    return 1 + sum(abs(b - a) > ONE_TICK for a, b in zip(stamps, stamps[1:], strict=False))


def passes_warning(flagged: list[tuple[int, int]]) -> str:
    """The run's warning for ``[(index, passes), ...]``: messages (by their index in the JSON document's
    ``messages``, the reader's line there) recorded in more than one pass."""
    index, passes = flagged[0]
    return (
        f"{len(flagged)} gemini message(s) hold tool calls recorded at different times (the first is "
        f"messages[{index}]: {passes} batches): before 0.32 Gemini CLI appends the calls of a following "
        "response made of tool calls alone, without thoughts, to the same message, so such a message may stand "
        "for more than one request; a request merged in is not in the log and its usage is lost (the message "
        "keeps the first response's tokens). ACP sessions stamp each call apart, so it may also be one request: "
        "each is read as one request"
    )
