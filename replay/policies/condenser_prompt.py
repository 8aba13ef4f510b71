"""What an OpenHands summarising condenser sends its summariser: one user message of the condenser's instruction,
the previous summary and each forgotten event as text (never the whole history, never the tools). Facts read in
the harnesses' own sources:

- V0 server (openhands/memory/condenser/impl/llm_summarizing_condenser.py, 2025-08/10): the instruction (461
  o200k tokens) and the previous summary in its tags (20), then per forgotten event its ``str()`` (the action's
  arguments included) cut to ``max_event_length`` characters (10,000 by default) in ``<EVENT id=N>`` tags (about 9
  tokens, with the event's own heading about 19). ``from_config`` turns prompt caching off for the condenser's LLM:
  the prompt is uncached input.
- V1 SDK (openhands/sdk/context/condenser, LLMSummarizingCondenser with prompts/summarizing_prompt.j2, September
  2025): the template's instruction and closing line (482 tokens), the previous summary, per forgotten event its
  ``str()`` in ``<EVENT>`` tags: a heading (class, source, tool or action name; about 16 tokens with the tags' 7,
  23) and a preview of its text cut to ``N_CHAR_PREVIEW`` (500) characters: an action shows its thought and the
  action's class name, not the call's arguments; an observation its result. The condenser's LLM keeps the agent's
  prompt caching on, so the message is written to the cache (ohv1-bench-swe-sonnet4's 4 calls: 4 uncached tokens
  each, the rest written).

Counted here in the run's own tokens (as the server counts them): an event's text at its items' tokens per
character.
"""

from __future__ import annotations

import numpy as np

from replay.jit import compiled
from replay.run_arrays import KIND_CODE, TOOL_CALL

# condensers, by the code ``RunArrays.condenser`` and the openhands policies' ``prompt`` knob use
NO_CONDENSER, V0, V1_SDK = 0, 1, 2
CONDENSERS = {"openhands": V0, "openhands-v1": V1_SDK}  # by the run's log format
INSTRUCTION = np.array([0, 481, 482], np.int64)  # instruction, closing line, previous summary's tags
EVENT_WRAP = np.array([0, 19, 23], np.int64)  # tags and heading of one event
EVENT_CHARS = np.array([0, 10_000, 500], np.int64)  # characters of an event's text shown (V0: the default)
CALL_ARGS = np.array([0, 1, 0], np.int64)  # a tool call's arguments are shown
WRITTEN = np.array([0, 0, 1], np.int64)  # the prompt is written to the cache
SUMMARY = KIND_CODE["summary"]
THOUGHT = (KIND_CODE["assistant_text"], KIND_CODE["reasoning"])


@compiled
def event_ids(kind, step, first_body):
    """OpenHands event index of each item (non-decreasing): the prefix is event 0 when there is one; a thought
    joins the first tool call of its response; a response without a call is one message event."""
    n = len(kind)
    ids = np.zeros(n, np.int64)
    cur = 0 if first_body > 0 else -1
    p = first_body
    while p < n:
        q = p + 1
        if kind[p] in THOUGHT:
            while q < n and kind[q] in THOUGHT and step[q] == step[p]:
                q += 1
            if q < n and kind[q] == TOOL_CALL and step[q] == step[p]:
                q += 1  # the thought rides on its call: one action event
        cur += 1
        ids[p:q] = cur
        p = q
    return ids


@compiled(inline="always")
def add_item(r, ev, q, condenser, event_chars, acc):
    """``acc`` (tokens so far, the last event id, characters of its text shown) with item ``q`` forgotten: its
    event's tags and heading when it opens one, its text up to ``event_chars`` characters of the event's text (a
    tool call's arguments only where the condenser shows them). A summary is the previous summary: whole, no
    event of its own. An item's text is its tokens less its framing as a message of its own (``Run.framing``), at
    that many tokens per character. Items are added in ascending order; start from ``(0, -1, 0)``."""
    kind, chars = r.kind, r.chars
    text = max(r.tokens[q] - r.framing[q], 0)
    total, last, used = acc
    if kind[q] == SUMMARY:
        return total + text, last, used
    if ev[q] != last:
        total += EVENT_WRAP[condenser]
        last, used = ev[q], 0
    if (kind[q] == TOOL_CALL) & (CALL_ARGS[condenser] == 0):
        return total, last, used
    take = min(chars[q], max(event_chars - used, 0))
    return total + np.int64(np.ceil(take * text / max(chars[q], 1))), last, used + take
