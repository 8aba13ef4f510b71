"""Where a Claude run's extended-thinking setting changes between requests, as its log shows it.

Anthropic's prompt cache keeps the system prompt and the tool definitions when a request's thinking parameters differ
from the previous request's (thinking switched on or off, another budget), and invalidates every cached prefix that
reaches into the messages (the extended-thinking guide, "prompt caching with thinking"). Claude Code 1.x switches
thinking per user message (a keyword such as "think" or "ultrathink" in it turns thinking on for that turn), so a
session alternates: ccs-livecd-gen reads only its 15,617-token system prefix at the three requests where a turn with
thinking follows one without, or the reverse.

The log does not record the parameter; it records its effect: a user turn ran with thinking when a response in it
carries a thinking block (Claude Code logs them, signed, even when their text is empty). A turn none of whose
responses thinks ran without. That reading is exact when the setting is the same for a whole turn, as Claude Code
sends it."""

from __future__ import annotations

import numpy as np

from replay.run_arrays import request_turns

# Claude models whose thinking is a fixed budget the client turns on or off (Claude 3.7 Sonnet to the 4.5 models).
# From Opus 4.6 and Sonnet 4.6 on, Claude Code asks for adaptive thinking: the setting stays the same and the model
# decides whether to think, so a response without a thinking block says nothing about it (ccb-android-avd-opus on
# claude-opus-4-8 reads on past such a turn).
BUDGETED = ("3-7-sonnet", "sonnet-4-2", "sonnet-4-5", "opus-4-2", "opus-4-1", "opus-4-5", "haiku-4-5")


def budgeted(model: str | None) -> bool:
    """Whether ``model`` is a Claude model whose log shows its thinking setting (``BUDGETED``); other
    Anthropic-compatible APIs (MiniMax's) state no such rule."""
    name = (model or "").lower()
    return "claude" in name and any(part in name for part in BUDGETED)


def thinking_switches(items: list[dict], reqs: list[dict], model: str | None) -> np.ndarray:
    """Per request, True where its user turn's thinking setting differs from the previous request's (both served by
    a model of ``BUDGETED``: ``reqs[k]["model"]``, else the run's ``model``); the first request never switches.

    A request's turn is the latest user turn among the items it holds; a turn thinks when any ``reasoning`` item
    belongs to it. Runs without reasoning items switch nowhere."""
    m = len(reqs)
    out = np.zeros(m, dtype=bool)
    if m < 2 or not any(it["kind"] == "reasoning" for it in items):
        return out
    thinking_turns = {it["turn"] or 0 for it in items if it["kind"] == "reasoning"}
    step = np.array([it["step"] for it in items], dtype=np.int64)
    turn = np.array([it["turn"] or 0 for it in items], dtype=np.int64)
    req_turn = request_turns(step, turn, np.array([r["step"] for r in reqs], dtype=np.int64))
    on = np.array([int(t) in thinking_turns for t in req_turn], dtype=bool)
    claude = np.array([budgeted(r.get("model") or model) for r in reqs], dtype=bool)
    out[1:] = (on[1:] != on[:-1]) & claude[1:] & claude[:-1]
    return out
