"""OpenAI Codex CLI rollout JSONL (~/.codex/sessions/**/rollout-*.jsonl).

Lines are ``{"timestamp", "type", "payload"}``: session_meta, turn_context, response_item (the model's
context: messages, reasoning, tool calls and outputs), event_msg (UI events incl. token_count) and
compacted. Codex logs token_count *after* the output it measured, and repeats it after the tool output;
a request is a token_count whose total_token_usage moved (its usage unknown when it counts no input tokens:
no call sends an empty prompt, so such a count was zeroed), and the output since the previous request is deferred
until it, so it lands after its request. Reasoning is logged encrypted (an empty or short summary); its real
size, the request's reasoning_output_tokens, goes to ``runs.metadata.reasoning_tokens``; the size codex-rs itself
estimates for it from the encrypted text (what its auto-compact trigger adds for earlier turns' reasoning) goes to
``runs.metadata.harness_estimates``.

codex-rs of September 2025 (0.39: ``run_task`` records a turn's response items, each tool call with its output,
only after ``run_turn`` returns, while the TokenCount event goes out as the response completes) logs the other way
round: the token_count first, then the output it measured. A rollout whose first model output follows a
token_count with usage (none between them and the input before) is read so (``runs.metadata.usage_before_output``):
the output after a request is that request's, seen from the next one on.

Compaction (codex-rs compact task): the summariser's model call logs a token_count and then the ``compacted`` line;
that call is not an agent request, so its usage goes into a context event (``runs.metadata.context_events``).
Remote compaction (compact_remote: the server's compact endpoint, an empty ``message`` and an encrypted summary)
logs no token_count for its call, so the token_count before it is the agent's last request; v2's usage is the
``token_usage_record`` line of the response the ``compacted`` line names (``compaction_response_id``).
``replacement_history`` is the whole history Codex sends from then on: the kept user messages, the re-injected
initial context (developer instructions, environment context) and the summary (a user message starting with the
summariser's prefix, equal to ``message``; remote compaction: an encrypted ``compaction`` item, sized as codex-rs sizes
it, like encrypted reasoning, in ``runs.metadata.encrypted_summary_tokens``). The reader emits
the summary item, then the other replacement items, at the step of the next request; the event drops everything
after the session's base instructions (sent as ``instructions`` with every request) up to the summary. Remote
compaction v2 ends its replacement history with an encrypted ``context_compaction`` item and keeps other agents'
``agent_message`` items.

Later codex-rs (protocol/src/models.rs, rollout/src/policy.rs) also logs, and the reader reads: ``agent_message``
items and ``inter_agent_communication`` lines (another agent's message, model input; an encrypted payload's seq goes
to ``runs.metadata.encrypted_inputs``), ``additional_tools`` items (tool definitions added mid-session,
``tool_defs``), tool outputs as content items (their ``input_image`` parts are images, not text), the turn's
``model_context_window`` on ``task_started``, and the token_count codex-rs fills to the window when a request is
refused as too long (not a request; its line goes to ``runs.metadata.window_exceeded``). codex-rs 0.171 also writes
history-only ``metadata`` beside a response item's payload: a tool output's own truncation budget
(``fallback_token_limit_override``, ``codex_truncation``) and the mark that makes a ``configuration_update`` item (a
reasoning-effort change sent to the model mid-session, kept as its JSON) part of the history
(``harness_authored_configuration``; without it codex-rs drops the item).

A rollout none of whose token_counts carries usage (``info`` null on every one: a provider that reports none) has
its requests where the model's output starts after input, usage unknown, and says so (``runs.metadata.usage_logged``
false, a warning); a null-info token_count in a rollout that does log usage is a rate-limit update, not a call.

A user turn starts where codex-rs's does (``codex_history``): at a user message that is not injected context, or at
another agent's message; injected context (environment updates, a turn-aborted note, a sub-agent's notification)
opens none, so a turn's encrypted reasoning stays in its prompts across a notification sent in the middle of it.

A forked rollout (a sub-agent spawned with its parent's context, a ``thread/fork``; its session_meta names
``forked_from_id``) first holds a copy of its parent's rollout (``Fork``): its messages and compactions are the
child's starting history, but its token_counts are the parent's calls, not requests of this run
(``runs.metadata.forked_requests`` counts them, ``fork_copy_line`` is the child's first own turn), and a compaction
in it has ``cause`` "forked" and no usage (the parent paid for it).

A ``thread_rolled_back`` event (the user undid the last ``num_turns`` turns) takes those turns' items out of every
later prompt by codex-rs's rule (``codex_history``); what it took goes to ``runs.metadata.rollbacks``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

from replay.model import BadRecord, Item, Record, Run
from replay.readers.base import ReadContext, iter_json_lines, text_of
from replay.readers.builder import RunBuilder, seq_ranges
from replay.readers.codex_bridge import bridged, initial_context_kind
from replay.readers.codex_history import TURN, History, message_mark, open_turn
from replay.readers.codex_truncation import override_budget, truncate_parts, truncate_text, turn_budget

LINE_TYPES = {
    "session_meta",
    "response_item",
    "event_msg",
    "turn_context",
    "compacted",
    # codex-rs 0.14x rollout lines (RolloutItemWire): an inter-agent message is model input; the others are
    # bookkeeping the model never sees (world-state baselines, risk scores, realtime facts, per-response usage
    # records kept beside the token_count events)
    "inter_agent_communication",
    "inter_agent_communication_metadata",
    "world_state",
    "security_risk_score",
    "realtime_item",
    "token_usage_record",
}
CALLS = {
    "function_call": "arguments",
    "custom_tool_call": "input",
    "local_shell_call": "action",
    "tool_search_call": "arguments",
    "web_search_call": "action",
}
OUTPUTS = {"function_call_output", "custom_tool_call_output", "local_shell_call_output", "tool_search_output"}
# the server's opaque stand-in for the history it summarised: ``compaction`` (alias ``compaction_summary``) from the
# remote compact endpoint, ``context_compaction`` from remote compaction v2 (codex-rs protocol/src/models.rs)
ENCRYPTED_SUMMARIES = {"compaction", "compaction_summary", "context_compaction"}


# the ResponseItem kinds that are the model's input or output (the rest: history bookkeeping)
ITEM_TYPES = {"message", "reasoning", *CALLS, *OUTPUTS}
STRUCTURAL = (
    "no token_count in this rollout carries usage (a provider that reports none): {n} request(s) are read where the"
    " model's output starts after input, their usage unknown"
)


UNUSABLE = (
    "token_count usage {value!r:.40} is not a TokenUsage object (the log's usage was removed, e.g. redacted): such"
    " token_counts are read as carrying no usage"
)


def is_output(item: dict) -> bool:
    """Whether a response item is the model's output (what a response returns), not input sent to it."""
    kind = item.get("type")
    if kind == "message":
        return item.get("role") == "assistant"
    return kind == "reasoning" or kind in CALLS


def codex_reasoning_estimate(encrypted: str) -> int:
    """The tokens codex-rs estimates for an encrypted reasoning item (context_manager/history.rs): three quarters
    of the encrypted text's bytes less 650, at 4 bytes a token rounded up."""
    size = max(len(encrypted.encode()) * 3 // 4 - 650, 0)
    return (size + 3) // 4


class Deferred:
    """Holds model output until the request that produced it is known."""

    def __init__(self, builder: RunBuilder) -> None:
        self.b = builder
        self.pending: list[Callable[[], Any]] = []
        self.reasoning_tokens: int | None = None  # reasoning_output_tokens of the request being flushed
        # the log gives a request's usage before its output (codex-rs 0.39): output is added as it comes
        self.count_first = False

    def encrypted_reasoning(self, seq: int) -> None:
        """Note the real size of a reasoning item the log holds only encrypted: the reasoning tokens of the request
        that produced it (the first such item of a response takes them all). The server counts them in later
        prompts of the same turn; calibration uses them (runs.metadata.reasoning_tokens: [[seq, tokens], ...])."""
        if self.reasoning_tokens is not None:
            self.b.run.metadata.setdefault("reasoning_tokens", []).append([seq, self.reasoning_tokens])
            self.reasoning_tokens = 0

    def output(self, fn: Callable[[], Any]) -> None:
        (fn() if self.count_first else self.pending.append(fn))

    def after_output(self, fn: Callable[[], Any]) -> None:
        """A tool result: it follows its call, so it waits behind pending output."""
        (self.pending.append if self.pending else lambda f: f())(fn)

    def input(self, fn: Callable[[], Any]) -> None:
        self.flush()
        fn()

    def request(self, reasoning_tokens: int | None = None, **usage: Any) -> None:
        self.b.request(**usage)
        self.reasoning_tokens = reasoning_tokens
        self.flush()
        if not self.count_first:  # else the request's output, logged after it, is still to come
            self.reasoning_tokens = None

    def flush(self) -> None:
        for fn in self.pending:
            fn()
        self.pending.clear()


def openai_usage(u: dict) -> dict[str, Any]:
    """Request fields from a codex-rs TokenUsage: ``input_tokens`` is the whole prompt, its cached part and (later
    codex-rs, ``input_tokens_details.cache_write_tokens``) its cache-written part both inside it (codex-api's own
    test: 100 input = 40 cached + 60 written, total 110 with 10 output), so the uncached unwritten rest is the
    prompt less both."""
    prompt, cached = u.get("input_tokens"), u.get("cached_input_tokens") or 0
    written = u.get("cache_write_input_tokens")
    rest = prompt - cached - (written if isinstance(written, int) else 0) if isinstance(prompt, int) else None
    return {
        "prompt_tokens": prompt,
        "cache_read": cached,
        "cache_write": written,
        "input_tokens": rest,
        "output_tokens": u.get("output_tokens"),
    }


def call_usage(last: dict) -> dict[str, Any]:
    """The request fields of a token_count's ``last_token_usage``; none when it counts no input tokens: every call
    sends a prompt, so that count was zeroed (a fixture's trimmed counter) and the call's usage is unknown."""
    counted = isinstance(last.get("input_tokens"), int) and last["input_tokens"] > 0
    return openai_usage(last) if counted else {}


def event_usage(call: dict) -> dict[str, Any]:
    """A summariser call's usage on its context event, from its request fields (``call_usage``); canonical:
    ``input`` uncached (docs/canonical-format.md), ``cache_write`` when the log counts writes, the prompt as logged."""
    usage = {
        "input": call.get("input_tokens"),
        "cache_read": call.get("cache_read"),
        "output": call.get("output_tokens"),
        "prompt": call.get("prompt_tokens"),
    }
    if isinstance(call.get("cache_write"), int):
        usage["cache_write"] = call["cache_write"]
    return usage


def compaction_record_usage(p: dict, records: dict[str, dict]) -> dict[str, Any] | None:
    """The usage of a compaction's own model call that no token_count carries: remote compaction v2 (codex-rs
    compact_remote_v2) persists its response's usage only as a ``token_usage_record`` line
    (``record_observed_response_completed``), and names that response on the ``compacted`` line
    (``compaction_response_id``; ``latest_token_usage_record`` may hold the same record). None when neither is
    logged."""
    rid = p.get("compaction_response_id")
    if not isinstance(rid, str):
        return None
    latest = p.get("latest_token_usage_record")
    record = records.get(rid) or (latest if isinstance(latest, dict) and latest.get("response_id") == rid else None)
    usage = record.get("usage") if record else None
    call = call_usage(usage) if isinstance(usage, dict) else {}
    return event_usage(call) if call else None


def remote_compaction(p: dict) -> bool:
    """Whether a ``compacted`` line is the server's (codex-rs compact_remote: the compact endpoint's output, an empty
    ``message`` and an encrypted summary item in the replacement history; v2 names its response). codex-rs logs no
    token_count for that call (v2: a ``token_usage_record``), so a token_count right before it is the agent's last
    request, not a summariser call as before a local compaction."""
    if isinstance(p.get("compaction_response_id"), str):
        return True
    if isinstance(p.get("message"), str) and p["message"]:
        return False
    entries = p.get("replacement_history")
    if not isinstance(entries, list):
        entries = [e.get("item") for e in p.get("replacement_history_entries") or [] if isinstance(e, dict)]
    return any(isinstance(e, dict) and e.get("type") in ENCRYPTED_SUMMARIES for e in entries)


def sniff_json_lines(head: str, test: Callable[[dict], bool]) -> bool:
    for line in head.splitlines()[:20]:
        try:
            if isinstance(obj := json.loads(line), dict) and test(obj):
                return True
        except (ValueError, TypeError, RecursionError):  # unparseable or odd-typed line: look at the next
            continue
    return False


def window_filled(info: dict) -> bool:
    """Whether a token_count is codex-rs's marker that a request failed with ContextWindowExceeded
    (``TokenUsageInfo::fill_to_context_window``, sent by ``set_total_tokens_full``): the totals set to the window
    with no input or output tokens, the last usage counting none either. No response was served, so it is not a
    request (read as one, it was a call of unknown usage)."""
    window, total, last = (info.get(k) for k in ("model_context_window", "total_token_usage", "last_token_usage"))
    if not (isinstance(window, int) and window > 0 and isinstance(total, dict) and isinstance(last, dict)):
        return False
    counted = ("input_tokens", "cached_input_tokens", "output_tokens")
    return total.get("total_tokens") == window and not any(total.get(k) or last.get(k) for k in counted)


def note_window(b: RunBuilder, window: Any, line: int | None = None) -> None:
    """Keep a logged ``model_context_window`` (token_count's, task_started's), the window codex-rs measures
    auto-compaction on, when it is a positive integer: the latest as the run's; with the log ``line``, each change
    as ``context_windows`` [[line, window], ...] (a turn on a model with another window moves the limit; read per
    request by ``replay.simulator.request_windows``)."""
    if not (isinstance(window, int) and not isinstance(window, bool) and window > 0):
        return
    meta = b.run.metadata
    if line is not None:
        seen = meta.setdefault("context_windows", [])
        if not seen or seen[-1][1] != window:
            seen.append([line, window])
    meta["model_context_window"] = window


def note_comp_hash(b: RunBuilder, p: dict, line: int) -> None:
    """Keep each change of a turn's ``comp_hash`` (the model's compaction compatibility hash, logged in
    turn_context from about 0.142; None for a later turn that logs none) as ``comp_hashes`` [[line, hash], ...]:
    codex-rs compacts before a turn whose model's hash differs from the previous turn's, both given, whatever the size
    (``maybe_run_previous_model_inline_compact``, ``CompactionReason::CompHashChanged``; read per request by
    ``replay.simulator.request_windows``)."""
    value = p.get("comp_hash")
    value = value if isinstance(value, str) and value else None
    seen = b.run.metadata.get("comp_hashes")
    if seen is None and value is not None:
        seen = b.run.metadata["comp_hashes"] = []
    if seen is not None and (not seen or seen[-1][1] != value):
        seen.append([line, value])


def uuid7_ms(value: Any) -> int | None:
    """The creation time (Unix milliseconds) a UUIDv7 carries in its first 48 bits; None for anything else. codex-rs
    names threads and turns by UUIDv7 (``Uuid::now_v7``), so one made later sorts later."""
    if not isinstance(value, str) or len(value) != 36 or value[14] != "7":
        return None
    try:
        return int(value[:8] + value[9:13], 16)
    except ValueError:
        return None


class Fork:
    """A forked rollout's copy of its parent (codex-rs ``spawn_forked_thread``, ``thread/fork``): the child's rollout
    starts with its own session_meta (``forked_from_id``), then the parent's rollout items it keeps
    (``keep_forked_rollout_item``: the parent's session_meta, its system, developer, user and final-answer messages,
    ``compacted`` lines and every event, token_counts included; turn contexts on a full-history fork), then the
    child's own turns. The copied token_counts are the parent's calls, billed in the parent's rollout: not requests
    of this run. The copy ends at the first turn (``task_started`` or ``turn_context``) whose UUIDv7 ``turn_id`` was
    made no earlier than the child thread's own id; with ids that are not UUIDv7 nothing is read as inherited."""

    def __init__(self) -> None:
        self.since: int | None = None  # the child thread's creation time (ms) while the parent's copy is being read
        self.calls = 0  # the parent's calls seen in the copy

    def start(self, p: dict) -> None:
        """The rollout's own session_meta: a fork starts in its parent's copy."""
        self.since = uuid7_ms(p.get("id")) if p.get("forked_from_id") else None

    def turn(self, turn_id: Any) -> bool:
        """Whether a turn with this id ends the copy (the first of the child's own turns)."""
        made = uuid7_ms(turn_id)
        if self.since is None or made is None or made < self.since:
            return False
        self.since = None
        return True

    @property
    def copying(self) -> bool:
        return self.since is not None


def agent_message_text(content: Any) -> tuple[str, int]:
    """An ``agent_message`` item's model-visible text (its ``input_text`` parts) and the number of its
    ``encrypted_content`` parts, whose size the log does not give."""
    parts = [c for c in content if isinstance(c, dict)] if isinstance(content, list) else []
    text = "\n".join(c["text"] for c in parts if c.get("type") == "input_text" and isinstance(c.get("text"), str))
    return text, sum(1 for c in parts if c.get("type") == "encrypted_content")


def inter_agent_text(p: dict) -> tuple[str, int]:
    """What an ``inter_agent_communication`` line puts in the model's context: codex-rs records the message
    into history as an ``agent_message`` item (``InterAgentCommunication::to_model_input_item``) and logs only this
    line. A plain message is its ``content``; an encrypted one is a header naming its kind, recipient and sender,
    then the encrypted payload (one unsized part)."""
    if isinstance(p.get("encrypted_content"), str):
        kind = "NEW_TASK" if p.get("trigger_turn") else "MESSAGE"
        header = f"Message Type: {kind}\nTask name: {p.get('recipient')}\nSender: {p.get('author')}\nPayload:\n"
        return header, 1
    return (p["content"] if isinstance(p.get("content"), str) else ""), 0


def add_agent_input(b: RunBuilder, text: str, encrypted: int, at: dict[str, Any]) -> None:
    """Add another agent's message to this agent's context; an encrypted payload is noted
    (``runs.metadata.encrypted_inputs``: seqs whose text lacks a payload of unknown size)."""
    item = b.add("user_text", "user", text, ts=at.get("ts"), line=at.get("line"))
    if encrypted:
        b.run.metadata.setdefault("encrypted_inputs", []).append(item.seq)


def output_sent(out: Any, budget: tuple[str, int] | None = None) -> tuple[str, int]:
    """A tool output's text as the model was sent it and its number of images. An output is a string or a list of
    content items (``input_text`` parts; ``input_image`` parts, e.g. view_image's, go as images, their base64 not
    text); tool_search_output's tool list, which has no text parts, goes as JSON. ``budget``: the turn's
    truncation budget (``codex_truncation.history_budget``) codex-rs cut a function or custom tool output to."""
    if isinstance(out, str):
        return (truncate_text(out, *budget) if budget else out), 0
    parts = [c for c in out if isinstance(c, dict)] if isinstance(out, list) else []
    images = sum(1 for c in parts if c.get("type") == "input_image")
    texts = [c["text"] for c in parts if c.get("type") == "input_text" and isinstance(c.get("text"), str)]
    if budget and texts:
        return "\n".join(truncate_parts(texts, *budget)), images
    text = text_of(out)
    return (text if text or images else json.dumps(out, ensure_ascii=False)), images


# what codex-rs persists in a later compaction's replacement history (window_number > 1) in place of an inline
# base64 image the model was still sent (rollout_payload.rs, PRUNED_INLINE_IMAGE_TEXT)
PRUNED_IMAGE_TEXT = "[inline base64 image payload pruned after repeated context compaction]"


def _is_image(part: dict) -> bool:
    return part.get("type") == "input_image" or (
        part.get("type") == "input_text" and part.get("text") == PRUNED_IMAGE_TEXT
    )


def _replacement_text(entry: dict) -> str:
    return text_of([c for c in entry.get("content") or [] if isinstance(c, dict) and not _is_image(c)])


def replacement_history(b: RunBuilder, p: dict, line: int, logged: dict[str, dict]) -> list[dict]:
    """A ``compacted`` line's replacement history: ``replacement_history`` (items inline), else
    ``replacement_history_entries`` (codex-rs CompactedHistoryEntry: ``inline`` with the ``item``, or ``reference`` /
    ``reference_v2`` naming by ``item_id`` a response item logged earlier, found in ``logged`` by its ``id``). A
    reference to no logged item is warned about: the prompt after it holds an item the reader cannot show."""
    if isinstance(p.get("replacement_history"), list):
        return [e for e in p["replacement_history"] if isinstance(e, dict)]
    history, missing = [], []
    for entry in p.get("replacement_history_entries") or []:
        if not isinstance(entry, dict):
            continue
        item = entry.get("item") if entry.get("type") == "inline" else logged.get(str(entry.get("item_id")))
        if isinstance(item, dict):
            history.append(item)
        else:
            missing.append(str(entry.get("item_id")))
    if missing:
        b.warn(
            line, f"replacement history names {len(missing)} item(s) not logged before it ({', '.join(missing[:3])})"
        )
    return history


def compaction(
    b: RunBuilder,
    p: dict,
    line: int,
    ts: str | None,
    keep: int,
    usage: dict | None,
    logged: dict[str, dict],
    live: History,
    initial: dict[str, dict] | None = None,
    forked: bool = False,
) -> None:
    """Add a ``compacted`` line's summary and replacement history after the current items, and its event; ``live``
    becomes the replacement history, in its own order (the summary where Codex put it, last when it is not in it).
    A line with neither form of replacement history (codex-rs before 0.63) gets the history codex-rs rebuilt
    (``codex_bridge``) from ``initial``, the latest initial-context messages logged. ``forked``: the line is in a
    fork's copy of its parent (``Fork``): the parent compacted, so the event's cause is "forked"."""
    if "replacement_history" not in p and "replacement_history_entries" not in p and initial is not None:
        p = bridged(b, p, line, live, initial)
    message = p["message"] if isinstance(p.get("message"), str) else ""
    history = replacement_history(b, p, line, logged)
    summary_at = next(
        (
            k
            for k in reversed(range(len(history)))
            if history[k].get("type") == "message" and message and _replacement_text(history[k]) == message
        ),
        None,
    )  # the last one: Codex appends it
    encrypted = summary_at is None and not message and any(e.get("type") in ENCRYPTED_SUMMARIES for e in history)
    if encrypted:
        summary_at = next(k for k, e in enumerate(history) if e.get("type") in ENCRYPTED_SUMMARIES)
    drop = [[keep, b.seq]] if keep < b.seq else []
    start, summary_seq = b.seq, None
    if message or encrypted:  # remote compaction: the server's summary is encrypted, its size unknown
        summary_seq = b.add("summary", "user", message, ts=ts, line=line).seq
        live.mark(summary_seq, summary_seq + 1, None if encrypted else TURN)  # a user message, unless encrypted
        if encrypted and summary_at is not None:
            estimate = codex_reasoning_estimate(str(history[summary_at].get("encrypted_content") or ""))
            b.run.metadata.setdefault("encrypted_summary_tokens", []).append([summary_seq, estimate])
    at = {"ts": ts, "line": line}
    first_resent = b.seq
    order: list[int] = []  # the reader's seqs in the replacement history's order
    for k, e in enumerate(history):
        lo = b.seq
        if k == summary_at:
            order.extend([] if summary_seq is None else [summary_seq])
            continue
        if e.get("type") == "agent_message":  # remote compaction v2 keeps other agents' messages
            add_agent_input(b, *agent_message_text(e.get("content")), at)
            live.mark(lo, b.seq, TURN)
            order.extend(range(lo, b.seq))
            continue
        if e.get("type") != "message":
            continue  # ghost snapshots and other bookkeeping entries are not sent to the model
        _replacement_entry(b, e, at)
        live.mark(lo, b.seq, message_mark(e.get("role") or "user", e.get("content")))
        order.extend(range(lo, b.seq))
    if summary_seq is not None and summary_at is None:
        order.append(summary_seq)
    live.replace(keep, start, order, b.seq)
    extra: dict[str, Any] = {"usage": usage} if usage else {}
    if forked:
        extra["cause"] = "forked"
    if b.seq > first_resent:  # the replacement history: sent again after the summary, not new content
        extra["resent"] = [[first_resent, b.seq]]
    if encrypted:
        extra["summary_encrypted"] = True
    b.context_event("compaction", drop=drop, summary_seq=summary_seq, line=line, **extra)


def _replacement_entry(b: RunBuilder, e: dict, at: dict[str, Any]) -> None:
    """Add one message of a replacement history."""
    role, text = e.get("role") or "user", _replacement_text(e)
    if role in ("developer", "system"):
        b.add("system", "system", text, **at)
    elif role == "assistant":
        b.add("assistant_text", "assistant", text, **at)
    else:
        if text:
            b.add("user_text", "user", text, **at)
        for c in e.get("content") or []:
            if isinstance(c, dict) and _is_image(c):
                b.add("image", "user", "[image]", **at)


SEARCH_NOTE = "web search results"


def searched(b: RunBuilder, step: int, line: int) -> None:
    """Note that request ``step``'s response ran a hosted web search (a ``web_search_call`` item): the server fed
    the results to the model inside that response, so its usage counts input its prompt did not carry and the log
    never holds (only the search's action is logged; later prompts do not carry the results either). The note
    (``runs.metadata.unlogged``, ``usage_only``) keeps the request out of the prompt fit and, at enough requests,
    flags the run."""
    notes = b.run.metadata.setdefault("unlogged", [])
    if step >= 0 and not any(n.get("step") == step and n.get("reason") == SEARCH_NOTE for n in notes):
        notes.append({"step": step, "line": line, "reason": SEARCH_NOTE, "varies": True, "usage_only": True})


def agent_turn(b: RunBuilder, live: History, text: str, encrypted: int, at: dict[str, Any]) -> None:
    """Another agent's message (``add_agent_input``): codex-rs counts it as a user-turn boundary
    (context_manager/history.rs ``is_user_turn_boundary``; an ``inter_agent_communication`` line likewise)."""
    open_turn(b, live)
    lo = b.seq
    add_agent_input(b, text, encrypted, at)
    live.mark(lo, b.seq, TURN)


def rollback(b: RunBuilder, live: History, turns: Any, line: int) -> None:
    """A ``thread_rolled_back`` event: the items of the last ``turns`` user turns (``codex_history``) leave the
    prompt from the next request on, whatever the context policy (``runs.metadata.rollbacks``: the request, the
    line, the turns asked and found, the dropped seqs as ranges). A rollback that reaches into the history a
    compaction rebuilt is warned about: from codex-rs PR #13615 (March 2026) on, undoing the turn a compaction
    ran in rebuilds the history from before it, which no item here stands for."""
    if not isinstance(turns, int) or isinstance(turns, bool) or turns < 0:
        b.warn(line, f"thread_rolled_back with num_turns {turns!r}, not a count of turns: the turns it undid stay")
        return
    dropped, found = live.rollback(b.seq, turns)
    b.run.metadata.setdefault("rollbacks", []).append(
        {"step": b.step, "line": line, "turns": turns, "found": found, "drop": seq_ranges(dropped)}
    )
    if any(q in live.rebuilt for q in dropped):
        b.warn(
            line,
            f"rollback of {turns} turn(s) reaches into the history the last compaction rebuilt: read as codex-rs"
            " before March 2026 applied it (cut from that history); later versions restore the history from before"
            " the compaction, which this log gives no items for, so later prompts may read low",
        )


class CodexRolloutReader:
    format = "codex-rollout"
    # 2: a summariser call's usage ``input`` is its uncached input (was the whole prompt); 3: later codex-rs lines
    # (inter-agent messages, additional tools, tool-output images, v2 remote compaction, refused requests);
    # 4: thread rollbacks (``runs.metadata.rollbacks``); 5: turns start at codex-rs's user-turn boundaries only;
    # 6: codex-rs 0.171 line metadata: a tool output's own truncation budget, configuration_update items; a remote
    # compaction's usage from its token_usage_record; a summariser call's cache writes; 7: a ``compacted`` line
    # without a replacement history gets the history codex-rs 0.36-0.50 rebuilt (``codex_bridge``); a rollout
    # whose token_counts carry no usage has its requests where the model's output starts; 8: codex-rs 0.39's
    # token_count before the output it measured (``usage_before_output``); 9: a fork's copy of its parent
    # (``Fork``): the parent's token_counts are not requests, its compactions are not this run's; an encrypted
    # summary's size, codex-rs's estimate (``encrypted_summary_tokens``); the token_count before a remote
    # compaction is a request (``remote_compaction``); a request whose response ran a web search is noted
    # (``searched``); 10: each turn's ``comp_hash`` change (a compaction before that turn); a tool output cut to the
    # model's catalog truncation policy where the turn logs none (Codex Desktop 0.142-0.144)
    version = 10

    def sniff(self, head: str, path: Path) -> bool:
        return sniff_json_lines(
            head, lambda o: o.get("type") in LINE_TYPES and isinstance(o.get("payload"), dict) and "timestamp" in o
        )

    def read(self, ctx: ReadContext) -> Iterator[Record]:
        """The run; a rollout none of whose token_counts carries usage (a provider that reports none: every one has
        ``info`` null) is read again with its requests where the model's output starts (``STRUCTURAL``)."""
        records = list(self._read(ctx, structural=False))
        run = next(r for r in records if isinstance(r, Run))
        if run.metadata.get("usage_logged") is False:
            records = list(self._read(ctx, structural=True))
        yield from records

    def _read(self, ctx: ReadContext, structural: bool) -> Iterator[Record]:
        b = RunBuilder(Run(run_id=ctx.run_id(), format=self.format, source_path=str(ctx.path), harness="codex"))
        d, last_total, model = Deferred(b), None, None
        counted = False  # a token_count with usage was logged
        unusable = False  # a token_count's usage was not a TokenUsage object (warned once)
        in_output = False  # structural: the last response item was the model's output
        output_seen = False  # a model output item was logged
        counted_since_input = False  # a request's token_count was logged after the latest input item
        held: dict[str, Any] | None = None  # the latest model call, until we know it was not the compaction's
        keep = 0  # items before this seq (the base instructions) are never replaced by a compaction
        live = History()  # what Codex's history holds, for a thread rollback
        fork = Fork()  # a forked rollout's copy of its parent: its token_counts are the parent's calls
        logged: dict[str, dict] = {}  # response items by their id, for a replacement history given by reference
        records: dict[str, dict] = {}  # token_usage_record lines by response id, for a compaction's own call
        initial: dict[str, dict] = {}  # the latest initial-context message of each kind (codex_bridge)
        budget: tuple[str, int] | None = None  # the turn's tool-output truncation (codex_truncation)
        for entry in iter_json_lines(ctx):
            if isinstance(entry, BadRecord):
                if held:  # an unreadable line after a call is a line between it and any `compacted`, as a readable
                    d.request(**held)  # one would be: the call stays an agent request (its row is not lost)
                    held = None
                yield entry
                continue
            line, obj = entry
            p = obj.get("payload") if isinstance(obj, dict) else None
            if not isinstance(p, dict):
                continue
            kind, ts = obj.get("type"), obj.get("timestamp")
            if fork.copying and (kind == "turn_context" or kind == "event_msg" and p.get("type") == "task_started"):
                if fork.turn(p.get("turn_id")):  # the child's first own turn: the copy ends here
                    b.run.metadata.update(forked_requests=fork.calls, fork_copy_line=line)
            if fork.copying:
                last_total = self._copied(b, d, p, kind, line, ts, keep, logged, live, initial, fork, last_total)
                continue
            if kind == "response_item" and not structural and p.get("type") in ITEM_TYPES:
                if is_output(p) and not output_seen and counted_since_input:  # usage logged before its output
                    d.count_first = b.run.metadata["usage_before_output"] = True
                output_seen = output_seen or is_output(p)
                counted_since_input = counted_since_input and is_output(p)
            if held and kind == "compacted" and not remote_compaction(p):  # the summariser's call: not a request
                usage = event_usage(held)
                held = None
                d.input(partial(compaction, b, p, line, ts, keep, usage, logged, live, initial))
                continue
            if held and not (kind == "event_msg" and p.get("type") == "token_count"):
                d.request(**held)  # only a call logged right before a `compacted` line is the summariser's
                held = None
            if kind == "session_meta":
                first = "session_id" not in b.run.metadata
                self._meta(b, d, p, line, ts)
                if first:
                    keep = b.seq
                    fork.start(p)
            elif kind == "turn_context" and p.get("model"):
                note_comp_hash(b, p, line)
                budget = turn_budget(p)
                model = p["model"]
                if not b.run.model:
                    b.run = b.records[0] = replace(b.run, model=model)
            elif kind == "compacted":  # no summariser call logged just before it (e.g. a manual or remote one)
                own = compaction_record_usage(p, records)
                d.input(partial(compaction, b, p, line, ts, keep, own, logged, live, initial))
            elif kind == "token_usage_record" and isinstance(p.get("response_id"), str):
                records[p["response_id"]] = p  # a response's own usage (remote compaction v2 logs no token_count)
            elif kind == "event_msg" and p.get("type") == "thread_rolled_back":
                d.input(partial(rollback, b, live, p.get("num_turns"), line))
            elif kind == "event_msg" and p.get("type") == "token_count" and isinstance(p.get("info"), dict):
                info = p["info"]
                if not isinstance(info.get("last_token_usage"), dict):  # usage removed (e.g. redacted): none
                    if not unusable:
                        b.warn(line, UNUSABLE.format(value=info.get("last_token_usage")))
                    unusable = True
                    continue
                counted = True
                note_window(b, info.get("model_context_window"), line)
                total = info.get("total_token_usage")
                if window_filled(info):  # a request the server refused: not a call the run paid for
                    if held:
                        d.request(**held)
                        held = None
                    b.run.metadata.setdefault("window_exceeded", []).append(line)
                    last_total = total
                    continue
                if total != last_total and isinstance(info.get("last_token_usage"), dict):
                    counted_since_input = True
                    if held:
                        d.request(**held)
                    last = info["last_token_usage"]
                    reasoning = last.get("reasoning_output_tokens")
                    held = {
                        "reasoning_tokens": reasoning if isinstance(reasoning, int) else None,
                        "ts": ts,
                        "line": line,
                        "model": model,
                        **call_usage(last),
                    }
                last_total = total
            elif kind == "event_msg" and p.get("type") == "task_started":
                note_window(b, p.get("model_context_window"), line)  # the turn's window (codex-rs TurnStartedEvent)
            elif kind == "inter_agent_communication":
                text, encrypted = inter_agent_text(p)
                d.input(partial(agent_turn, b, live, text, encrypted, {"ts": ts, "line": line}))
            elif kind == "response_item":
                if isinstance(p.get("id"), str):
                    logged[p["id"]] = p
                if tag := initial_context_kind(p):
                    initial[tag] = p
                meta = obj.get("metadata")
                if structural and is_output(p) and not in_output:  # the first output item after input
                    d.request(ts=ts, line=line, model=model)
                in_output = is_output(p) if structural and p.get("type") in ITEM_TYPES else in_output
                self._item(b, d, live, p, line, ts, override_budget(meta) or budget, meta)
                if structural:
                    d.flush()  # its request is known before its output here: nothing waits for it
        if held:
            d.request(**held)
        d.flush()
        outputs = any(isinstance(r, Item) and r.role == "assistant" for r in b.records)
        if not counted and outputs:
            b.run.metadata["usage_logged"] = False
            if structural:
                b.warn(1, STRUCTURAL.format(n=b.step))
        yield from b

    def _copied(
        self,
        b: RunBuilder,
        d: Deferred,
        p: dict,
        kind: Any,
        line: int,
        ts: str | None,
        keep: int,
        logged: dict[str, dict],
        live: History,
        initial: dict[str, dict],
        fork: Fork,
        last_total: Any,
    ) -> Any:
        """One line of a fork's copy of its parent (``Fork``): its messages, compactions and rollbacks make the
        child's starting history; its token_counts are the parent's calls (counted, not requests); its turn
        contexts are the parent's turns (the run's model is the child's). Returns the latest total usage."""
        if kind == "session_meta":
            self._meta(b, d, p, line, ts)
        elif kind == "turn_context":  # the parent's turns: the child's first turn compares its hash with theirs
            note_comp_hash(b, p, line)
        elif kind == "compacted":
            d.input(partial(compaction, b, p, line, ts, keep, None, logged, live, initial, forked=True))
        elif kind == "event_msg" and p.get("type") == "thread_rolled_back":
            d.input(partial(rollback, b, live, p.get("num_turns"), line))
        elif kind == "event_msg" and p.get("type") == "token_count" and isinstance(p.get("info"), dict):
            note_window(b, p["info"].get("model_context_window"), line)
            total = p["info"].get("total_token_usage")
            fork.calls += total != last_total and not window_filled(p["info"])
            return total
        elif kind == "response_item":
            if isinstance(p.get("id"), str):
                logged[p["id"]] = p
            if tag := initial_context_kind(p):
                initial[tag] = p
            self._item(b, d, live, p, line, ts, None, None)
        return last_total

    @staticmethod
    def _meta(b: RunBuilder, d: Deferred, p: dict, line: int, ts: str | None) -> None:
        meta = b.run.metadata
        if "session_id" in meta:  # a later session_meta (sub-agent or fork logged in the same file)
            meta.setdefault("more_sessions", []).append(p.get("id"))
            return
        meta.update(
            {
                k: p[k]
                for k in (
                    "id",
                    "cwd",
                    "cli_version",
                    "originator",
                    "model_provider",
                    "source",
                    "forked_from_id",
                    "history_mode",
                    "history_base",
                )
                if p.get(k) is not None
            }
        )
        base = p.get("history_base")
        if isinstance(base, dict):  # a paginated thread's prefix lives in another rollout (SessionMeta.history_base)
            b.warn(
                line,
                f"inherits rollout {base.get('thread_id')} up to ordinal {base.get('end_ordinal_exclusive')}, which"
                " this file does not hold: its first prompts carry context no item here stands for; ingest that"
                " rollout too",
            )
        meta["session_id"] = p.get("id")
        b.run = b.records[0] = replace(b.run, started_at=p.get("timestamp") or ts, metadata=meta)
        instructions = text_of(p.get("base_instructions"))
        if instructions:
            d.input(lambda: b.add("system", "system", instructions, ts=ts, line=line))

    @staticmethod
    def _item(
        b: RunBuilder,
        d: Deferred,
        live: History,
        p: dict,
        line: int,
        ts: str | None,
        budget: tuple[str, int] | None,
        metadata: Any = None,
    ) -> None:
        """One response item; ``budget``: the truncation codex-rs cut a function or custom tool output to (the line's
        own override, else the turn's policy); ``metadata``: the history-only metadata logged beside it."""
        t = p.get("type")
        at: dict[str, Any] = {"ts": ts, "line": line}
        if t == "message":
            role = p.get("role") or "user"
            text = text_of(p.get("content"))
            mark = message_mark(role, p.get("content"))
            if role == "assistant" and mark != TURN:
                d.output(lambda: b.add("assistant_text", "assistant", text, **at))
                return
            images = [c for c in p.get("content") or [] if isinstance(c, dict) and c.get("type") == "input_image"]

            def add_input() -> None:
                lo = b.seq
                if mark == TURN:  # codex-rs's user-turn boundary (codex_history.open_turn)
                    open_turn(b, live)
                if role in ("developer", "system"):
                    b.add("system", "system", text, **at)
                elif role == "assistant":  # another agent's message, in the assistant role (input, not output)
                    b.add("assistant_text", "assistant", text, **at)
                else:
                    if text:
                        b.add("user_text", "user", text, **at)
                    for _ in images:
                        b.add("image", "user", "[image]", **at)
                live.mark(lo, b.seq, mark)

            d.input(add_input)
        elif t == "reasoning":
            text = text_of(p.get("summary")) + ("\n" + text_of(p.get("content")) if p.get("content") else "")

            def add_reasoning() -> None:
                item = b.add("reasoning", "assistant", text.strip(), **at)
                if p.get("encrypted_content"):
                    d.encrypted_reasoning(item.seq)
                    estimate = codex_reasoning_estimate(str(p["encrypted_content"]))
                    b.run.metadata.setdefault("harness_estimates", []).append([item.seq, estimate])

            d.output(add_reasoning)
        elif t in CALLS:
            name = p.get("name") or t.removesuffix("_call")

            def add_call() -> None:
                item = b.call(name, p.get(CALLS[t]), p.get("call_id") or p.get("id"), **at)
                if t == "web_search_call":
                    searched(b, item.step - 1, line)

            d.output(add_call)
        elif t in OUTPUTS:
            cut = budget if t in ("function_call_output", "custom_tool_call_output") else None  # process_item's
            sent, n_images = output_sent(p.get("output") if "output" in p else p.get("tools"), cut)

            def add_result() -> None:
                b.result(sent, p.get("call_id"), **at)
                for _ in range(n_images):
                    b.add("image", "tool", "[image]", **at)

            d.after_output(add_result)
        elif t == "image_generation_call":
            d.output(lambda: b.add("image", "assistant", "[generated image]", **at))
        elif t == "agent_message":  # another agent's message in this agent's history (multi-agent v2)
            text, encrypted = agent_message_text(p.get("content"))
            d.input(partial(agent_turn, b, live, text, encrypted, at))
        elif t == "additional_tools":  # tool definitions the harness adds to the history mid-session
            tools = json.dumps(p.get("tools"), ensure_ascii=False)
            d.input(lambda: b.add("tool_defs", "system", tools, **at))
        elif t == "configuration_update":  # a mid-session setting the model is sent (reasoning effort)
            if isinstance(metadata, dict) and metadata.get("harness_authored_configuration") is True:
                update = json.dumps({k: v for k, v in p.items() if k != "type"}, ensure_ascii=False)
                d.input(lambda: b.add("system", "system", update, **at))
        elif t in ENCRYPTED_SUMMARIES:  # outside a `compacted` line: what it replaced is not in the log
            b.warn(line, f"{t} item outside a compacted line: its effect on later prompts is not read")


READER = CodexRolloutReader()
