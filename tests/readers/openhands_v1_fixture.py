"""A hand-made OpenHands V1 conversation whose condenser has a token limit, in the SDK's own folder layout
(``base_state.json`` + ``events/event-NNNNN-<id>.json``; software-agent-sdk of 2026, multi-summary views).

The agent (``openai/gpt-4o``, which LiteLLM counts with o200k_base) runs one terminal command per response, each
output about ``OUTPUT`` tokens. Its condenser is LLMSummarizingCondenser(max_size=240, keep_first=2,
max_tokens=``MAX_TOKENS``): 240 events are never reached. The writer plays the SDK: before each step it counts the
view as ``get_total_token_count`` does (LiteLLM's count for OpenAI models: each message's tokens plus 3, 3 to prime
the reply, and the tools), and past ``MAX_TOKENS`` condenses as ``_get_forgotten_events`` does for Reason.TOKENS: it
forgets the shortest run of events after the first keep_first whose tokens exceed the view's less max_tokens // 2,
moved forward off an action/observation pair, and puts the summary after the head. With ``minimum_progress``
(b9c0e1f6a, v1.11.5) a condensation forgetting fewer than that share of the view's events is not made
(``NoCondensationAvailableException``; a token-triggered one is a soft requirement up to v1.28, so the agent goes
on with the view as it is); None writes the settings of an SDK before v1.11.0 (no minimum progress, no hard reset
fields). On a CondensationRequest (the
agent's, after the model refused a request for its context window) it keeps len(view) // 2 - keep_first - 1 newest
events. The server's ``prompt_tokens`` for a request are the same count of the view it was sent.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

MODEL = "openai/gpt-4o"
MAX_TOKENS, KEEP_FIRST, MAX_SIZE = 32_000, 2, 240
OUTPUT = 5_000  # tokens of each command's output
CONVERSATION = "5f0c2d4e-8a71-4b3e-9c55-0d1e2f3a4b5c"
TOOLS = [
    {
        "name": "terminal",
        "description": "Run a shell command in the workspace and return its output.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    }
]


def _ts(n: int) -> str:
    return f"2026-07-01T10:{n // 6:02d}:{n % 6 * 10:02d}.000000"


def _text(text: str) -> list[dict]:
    return [{"type": "text", "text": text}]


def _output(i: int, size: int = OUTPUT) -> str:
    """A distinct command output of ``size`` o200k tokens less a short header."""
    return f"$ python bench.py --case {i}\n" + " alpha" * (size - 12)


class _Writer:
    """The SDK's events and usage as the conversation runs; ``count`` is the agent LLM's tokenizer."""

    def __init__(self, count: Callable[[str], int], max_tokens: int | None, progress: float | None) -> None:
        self.count, self.max_tokens, self.progress = count, max_tokens, progress
        self.events: list[dict] = []
        self.view: list[dict] = []  # the events the next request sends, in order (a summary as its own event)
        self.usages: list[dict] = []
        self.condenser_usages: list[dict] = []

    def tokens(self, ev: dict) -> int:
        """LiteLLM's tokens for the message an event becomes: its text, plus 3."""
        kind = ev["kind"]
        if kind == "SystemPromptEvent":
            return 3 + self.count(ev["system_prompt"]["text"])
        if kind == "MessageEvent":
            return 3 + self.count(ev["llm_message"]["content"][0]["text"])
        if kind == "ActionEvent":
            call = ev["tool_call"]
            return 3 + self.count(ev["thought"][0]["text"]) + self.count(call["name"]) + self.count(call["arguments"])
        if kind == "ObservationEvent":
            return 3 + self.count(ev["observation"]["content"][0]["text"])
        return 3 + self.count(ev["summary"])  # a condensation's summary event

    def view_tokens(self, events: list[dict]) -> int:
        """``get_total_token_count``: the messages, 3 to prime the reply, the tools when the system prompt is in."""
        tools = any(e["kind"] == "SystemPromptEvent" for e in events)
        return 3 + sum(self.tokens(e) for e in events) + (self.count(json.dumps(TOOLS)) if tools else 0)

    def add(self, ev: dict) -> dict:
        ev = {"id": ev.get("id") or f"e{len(self.events)}", "timestamp": _ts(len(self.events)), **ev}
        self.events.append(ev)
        if ev["kind"] not in ("Condensation", "CondensationRequest"):  # not sent to the model
            self.view.append(ev)
        return ev

    def request(self, rid: str) -> None:
        """The agent's LLM call for response ``rid``, the server counting what the view holds."""
        prompt = self.view_tokens(self.view)
        self.usages.append(
            {"model": MODEL, "prompt_tokens": prompt, "completion_tokens": 60, "cache_read_tokens": 0,
             "cache_write_tokens": 0, "reasoning_tokens": 0, "context_window": 128_000, "per_turn_token": prompt + 60,
             "response_id": rid}
        )  # fmt: skip

    def condense_if_due(self, requested: bool = False) -> None:
        """LLMSummarizingCondenser: past max_tokens forget the shortest run after the head whose tokens exceed the
        excess over max_tokens // 2; on a CondensationRequest keep len(view) // 2 - keep_first - 1 newest events;
        both: the fewer newest events."""
        total = self.view_tokens(self.view)
        by_tokens = self.max_tokens is not None and total > self.max_tokens
        if not (by_tokens or requested):
            return
        head, rest = self.view[:KEEP_FIRST], self.view[KEEP_FIRST:]
        tails = [len(self.view) // 2 - KEEP_FIRST - 1] if requested else []
        if by_tokens:
            reduce, base = total - (self.max_tokens or 0) // 2, self.view_tokens(head)
            prefix = next(
                (m for m in range(1, len(rest) + 1) if self.view_tokens(head + rest[:m]) - base > reduce), len(rest)
            )
            tails.append(len(rest) - prefix)
        end = len(self.view) - min(tails)
        while end < len(self.view) and self.view[end]["kind"] == "ObservationEvent":  # never split a call
            end += 1
        forgotten = self.view[KEEP_FIRST:end]
        if self.progress is not None and len(forgotten) < len(self.view) * self.progress and not requested:
            return  # below minimum progress: the soft requirement waits for a later step
        n = len(self.condenser_usages) + 1
        cid = f"cond{n}"
        summary = f"Summary {n}: ran the benchmark cases, outputs recorded; next: compare the timings."
        sent = sum(self.tokens(e) for e in forgotten) + 500
        self.condenser_usages.append(
            {"model": MODEL, "prompt_tokens": sent, "completion_tokens": 40, "cache_read_tokens": 0,
             "cache_write_tokens": 0, "reasoning_tokens": 0, "context_window": 128_000, "per_turn_token": sent + 40,
             "response_id": f"cond-{n}"}
        )  # fmt: skip
        self.add(
            {
                "kind": "Condensation",
                "id": cid,
                "source": "environment",
                "forgotten_event_ids": [e["id"] for e in forgotten],
                "summary": summary,
                "summary_offset": KEEP_FIRST,
                "llm_response_id": f"cond-{n}",
            }
        )
        self.view = head + [{"kind": "CondensationSummaryEvent", "id": f"{cid}-summary", "summary": summary}]
        self.view += [e for e in rest if e not in forgotten]


def conversation(
    count: Callable[[str], int],
    steps: int = 14,
    max_tokens: int | None = MAX_TOKENS,
    window_error_at: int = -1,
    outputs: dict[int, int] | None = None,
    minimum_progress: float | None = 0.1,
) -> tuple[list[dict], dict]:
    """(events, base_state) of a conversation of ``steps`` agent requests, each but the last running a command.
    ``outputs``: tokens of the output of the command of request k, where not ``OUTPUT``; ``minimum_progress``: the
    condenser's setting (None: an SDK before v1.11.0, which has none).
    ``window_error_at``: the request the model refuses for its context window (no usage is recorded for it): the
    agent writes a CondensationRequest, and the condenser condenses before the request is sent again."""
    w = _Writer(count, max_tokens, minimum_progress)
    w.add(
        {
            "kind": "SystemPromptEvent",
            "id": "sys",
            "source": "agent",
            "system_prompt": {"type": "text", "text": "You are OpenHands agent, a helpful assistant. " * 20},
            "tools": TOOLS,
        }
    )
    w.add(
        {
            "kind": "MessageEvent",
            "id": "task",
            "source": "user",
            "llm_message": {"role": "user", "content": _text("Benchmark every case and report the slowest.")},
        }
    )
    for k in range(steps):
        w.condense_if_due()
        if k == window_error_at:
            w.add({"kind": "CondensationRequest", "source": "environment"})
            w.condense_if_due(requested=True)
        rid = f"resp-{k}"
        w.request(rid)
        if k == steps - 1:
            w.add(
                {
                    "kind": "MessageEvent",
                    "source": "agent",
                    "llm_response_id": rid,
                    "llm_message": {"role": "assistant", "content": _text("Case 3 is the slowest.")},
                }
            )
            break
        command = f"python bench.py --case {k}"
        w.add(
            {
                "kind": "ActionEvent",
                "id": f"act{k}",
                "source": "agent",
                "thought": _text(f"Running case {k}."),
                "action": {"kind": "TerminalAction", "command": command},
                "tool_name": "terminal",
                "tool_call_id": f"call{k}",
                "tool_call": {"id": f"call{k}", "name": "terminal", "arguments": json.dumps({"command": command})},
                "llm_response_id": rid,
            }
        )
        w.add(
            {
                "kind": "ObservationEvent",
                "id": f"obs{k}",
                "source": "environment",
                "tool_name": "terminal",
                "tool_call_id": f"call{k}",
                "action_id": f"act{k}",
                "observation": {
                    "kind": "TerminalObservation",
                    "content": _text(_output(k, (outputs or {}).get(k, OUTPUT))),
                },
            }
        )

    def metrics(usages: list[dict]) -> dict:
        acc = {k: sum(u[k] for u in usages) for k in ("prompt_tokens", "completion_tokens")}
        return {"model_name": MODEL, "accumulated_token_usage": acc, "token_usages": usages}

    condenser = {
        "kind": "LLMSummarizingCondenser",
        "llm": {"model": MODEL, "usage_id": "condenser"},
        "max_size": MAX_SIZE,
        "max_tokens": max_tokens,
        "keep_first": KEEP_FIRST,
    }
    if minimum_progress is not None:  # v1.11.0 (b79d72faa) added the hard reset's settings, v1.11.5 this one
        condenser |= {
            "minimum_progress": minimum_progress,
            "hard_context_reset_max_retries": 5,
            "hard_context_reset_context_scaling": 0.8,
        }
    state = {
        "id": CONVERSATION,
        "agent": {"kind": "Agent", "llm": {"model": MODEL, "usage_id": "agent"}, "condenser": condenser},
        "execution_status": "finished",
        "stats": {"usage_to_metrics": {"agent": metrics(w.usages), "condenser": metrics(w.condenser_usages)}},
    }
    return w.events, state


def write(folder: Path, count: Callable[[str], int], **options) -> list[dict]:
    """The conversation (``conversation``'s options) as the SDK saves it under ``folder``; its events."""
    events, state = conversation(count, **options)
    (folder / "events").mkdir(parents=True)
    (folder / "base_state.json").write_text(json.dumps(state, indent=2))
    for n, e in enumerate(events):
        (folder / "events" / f"event-{n:05d}-{e['id']}.json").write_text(json.dumps(e, indent=2))
    return events
