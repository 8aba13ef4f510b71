"""Codex's history as a thread rollback sees it: which of the reader's items it holds, in its order, and which of
them start a user turn.

A ``thread_rolled_back`` event (codex-rs protocol ``EventMsg::ThreadRolledBack { num_turns }``) drops the last
``num_turns`` user turns from the history the model is sent (context_manager/history.rs
``drop_last_n_user_turns``): the cut is at the ``num_turns``-th last turn boundary, at the first boundary when it
asks for more turns than there are (what came before the first turn stays), and nothing moves when there is no
boundary. The cut then moves back over contextual messages just above it (``trim_pre_turn_context_updates``),
never past the first boundary. Everything from the cut on leaves the history: the user message, the reasoning,
calls, outputs and answers after it.

A boundary (``is_user_turn_boundary``) is a user message that is not contextual, or another agent's message (an
``agent_message`` item, or an assistant message whose one text part is an ``InterAgentCommunication`` as JSON); a
contextual user message is one with an ``input_text`` part that is an injected fragment (the start and end markers
of ``CONTEXTUAL_USER``); a contextual developer message has a part starting with one of ``CONTEXTUAL_DEVELOPER``.

The same boundary numbers the readers' turns (``Item.turn``, ``open_turn``): codex-rs injects contextual messages
(an environment update, the note that the user interrupted a turn, a sub-agent's notification in the middle of a
turn) without starting a user turn, and its estimate of what the server counts (``get_non_last_reasoning_items_tokens``)
leaves out only the encrypted reasoning above the last boundary, so a turn's reasoning stays in its prompts across
them. Contextual messages sent just above a boundary, with no request between, belong to the turn it opens (a
rollback takes them with it); any other joins the turn it is sent in.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from replay.model import Item
from replay.readers.builder import RunBuilder

TURN, CONTEXT = "turn", "context"

# the injected user-role fragments codex-rs recognises (core/src/context/*.rs START_MARKER / END_MARKER; the
# legacy <user_instructions> of core/src/instructions/user_instructions.rs); a part is one when it starts and ends
# with them, case aside, surrounding whitespace ignored
CONTEXTUAL_USER = (
    ("# agents.md instructions for ", "</instructions>"),
    ("<user_instructions>", "</user_instructions>"),
    ("<environment_context>", "</environment_context>"),
    ("<skill>", "</skill>"),
    ("<user_shell_command>", "</user_shell_command>"),
    ("<subagent_notification>", "</subagent_notification>"),
    ("<extension_context>", "</extension_context>"),
    ("<hook_prompt", "</hook_prompt>"),
)
# recognised by its opening tag alone (older codex-rs wrote it without a closing one)
CONTEXTUAL_USER_OPENING = ("<turn_aborted>",)
# developer-role prefixes a rollback trims (core/src/event_mapping.rs CONTEXTUAL_DEVELOPER_PREFIXES)
CONTEXTUAL_DEVELOPER = (
    "<permissions instructions>",
    "<model_switch>",
    "<collaboration_mode>",
    "<realtime_conversation>",
    "<skills_instructions>",
    "<personality_spec>",
    "<token_budget>",
    "<rollout_budget>",
)


def _texts(content: Any) -> list[str]:
    """The ``input_text`` parts of a message's content (a bare string is one part)."""
    if isinstance(content, str):
        return [content]
    parts = content if isinstance(content, list) else []
    return [c["text"] for c in parts if isinstance(c, dict) and isinstance(c.get("text"), str)]


def _contextual_user_text(text: str) -> bool:
    t = text.strip().lower()
    return t.startswith(CONTEXTUAL_USER_OPENING) or any(t.startswith(a) and t.endswith(b) for a, b in CONTEXTUAL_USER)


def inter_agent_message(content: Any) -> bool:
    """Whether an assistant message is another agent's (protocol ``InterAgentCommunication::from_message_content``):
    exactly one text part holding the message as a JSON object with its required fields."""
    parts = _texts(content) if isinstance(content, list) and len(content) == 1 else []
    try:
        obj = json.loads(parts[0]) if parts else None
    except (ValueError, RecursionError):  # not JSON: the assistant's own text
        return False
    if not isinstance(obj, dict):
        return False
    named = all(isinstance(obj.get(k), str) for k in ("author", "recipient", "content"))
    return named and isinstance(obj.get("trigger_turn"), bool)


def message_mark(role: str, content: Any) -> str | None:
    """``TURN`` for a message that starts a user turn, ``CONTEXT`` for one a rollback trims above its cut, None for
    any other message."""
    if role == "assistant":
        return TURN if inter_agent_message(content) else None
    if role == "user":
        return CONTEXT if any(_contextual_user_text(t) for t in _texts(content)) else TURN
    if role == "developer":
        contextual = any(t.lstrip().lower().startswith(CONTEXTUAL_DEVELOPER) for t in _texts(content))
        return CONTEXT if contextual else None
    return None


class History:
    """The seqs of the items Codex's history holds, in its order, with their marks (``TURN``: the first item of a
    turn-starting message; ``CONTEXT``: every item of a contextual message). Items the reader adds join the end
    (``sync``); a compaction replaces the history (``replace``); a rollback cuts it (``rollback``)."""

    def __init__(self) -> None:
        self.seqs: list[int] = []
        self.marks: dict[int, str] = {}
        self.synced = 0  # items below this seq have been taken in
        self.rebuilt: set[int] = set()  # the items the latest compaction put in the history

    def mark(self, lo: int, hi: int, what: str | None) -> None:
        """Mark the items ``lo`` .. ``hi`` - 1 one message produced."""
        if what == TURN and hi > lo:
            self.marks[lo] = TURN
        elif what == CONTEXT:
            self.marks.update(dict.fromkeys(range(lo, hi), CONTEXT))

    def sync(self, end: int) -> None:
        """Take in the items the reader added up to seq ``end`` (exclusive), in seq order."""
        self.seqs.extend(range(self.synced, end))
        self.synced = max(self.synced, end)

    def replace(self, keep: int, start: int, order: Iterable[int], end: int) -> None:
        """A compaction: the history becomes its items below seq ``keep`` (the base instructions) followed by the
        replacement items ``order`` (the reader's seqs in the replacement history's order); the items from
        ``start`` to ``end`` are the ones it added."""
        self.sync(start)
        rebuilt = list(order)
        self.seqs = [q for q in self.seqs if q < keep] + rebuilt
        self.rebuilt = set(rebuilt)
        self.synced = max(self.synced, end)

    def rollback(self, end: int, turns: int) -> tuple[list[int], int]:
        """Drop the last ``turns`` user turns (see the module docstring) from the history holding the items up to
        seq ``end``; (the dropped seqs in history order, the number of turns they held)."""
        self.sync(end)
        starts = [i for i, q in enumerate(self.seqs) if self.marks.get(q) == TURN]
        if turns <= 0 or not starts:
            return [], 0
        n = min(turns, len(starts))
        cut = starts[-n]
        while cut > starts[0] and self.marks.get(self.seqs[cut - 1]) == CONTEXT:
            cut -= 1
        dropped = self.seqs[cut:]
        del self.seqs[cut:]
        return dropped, n


def open_turn(b: RunBuilder, live: History) -> None:
    """Start a user turn at a boundary about to be added: the contextual messages just above it, with no request
    between, join it, as a rollback would take them with it (never above the first turn, whose context stays
    before every turn, nor a compaction's replacement history, in which the summary is last)."""
    b.new_turn()
    if b.turn == 1:
        return
    k = len(b.records) - 1
    while k > 0 and isinstance(rec := b.records[k], Item) and live.marks.get(rec.seq) == CONTEXT:
        if rec.seq in live.rebuilt:
            break
        b.records[k] = replace(rec, turn=b.turn)
        k -= 1
