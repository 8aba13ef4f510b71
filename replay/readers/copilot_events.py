"""One conversation of a Copilot CLI ``events.jsonl``: the main agent's, or one sub-agent's (replay.readers.copilot_cli
routes each event). What the model sees follows the CLI's own rebuild of its messages from the events (1.0.34
app.js; 1.0.102's native runtime observed through a scripted provider and its session-events schema).

Items: ``system.message`` -> system (again only when its text changes, and then it replaces the earlier one of its
role and name: ``runs.metadata.rollbacks``; 1.0.102 logs it after the user message it goes with, so user messages
wait for it), ``user.message`` -> user_text (``transformedContent``, the text sent, else ``content``; what its
``attachments`` hold, which the CLI reads from disk when it sends the message, is noted in ``runs.metadata.unlogged``
after the first request), ``assistant.message`` -> reasoning, assistant_text and its ``toolRequests``,
``tool.execution_complete`` -> the tool result (one per call; none for a tool the user ran, ``tool.user_requested`` /
``isUserRequested``: the CLI never sends those), ``system.notification`` -> a user-role attachment (the CLI sends it
as a user message), ``session.mode_notice_delivered`` and ``skill.context_delivered`` -> attachments with their
``content``; ``skill.context_delivered_ref`` (1.0.102: the skill's text delivered as a user message after its
``skill`` tool result) -> ``prefix`` + the earlier skill content whose sha256 is ``contentId`` + ``suffix``.

Requests: one per ``assistant.turn_start``; a message or usage record of another model call (``apiCallId``,
``requestId``) opens another. A ``session.usage_record`` (1.0.102) gives the request its counts, model and output
(replay.readers.copilot_usage) and the window its call ran against (``maxPromptTokens``: ``runs.metadata
.prompt_limit`` the run's most common, ``prompt_limits`` [[request line, limit], ...] where calls ran against more
than one, a model switch); without one the request sums its messages' ``outputTokens``. The model is the
call's own, else ``assistant.turn_start``'s, else the selection (``session.start``/``session.resume``
``selectedModel``, then ``session.model_change``); the run's is the one that served most requests.

Compaction (background: ``session.compaction_start`` is the checkpoint; ``session.compaction_complete`` replaces the
messages up to it with one user message listing the user's own messages (``content``, not the sub-agent prompts
with a ``source``) then ``summaryContent`` and ``activeWorkflowSummary``). The event is at the next request, or at
the open turn's request when that call started after the compaction completed (1.0.102 logs ``turn_start``, waits
past 0.95 of the window for the summary, then calls: the usage record's time less its ``duration``).
``session.context_cleared`` drops the conversation so far (a manual compaction without summary).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from typing import Any, TypeGuard, cast

from replay.model import BadRecord, Item, Record, Request, Run
from replay.readers.aliases import add_call
from replay.readers.base import text_of
from replay.readers.builder import PREFIX_KINDS, RunBuilder, instant, seq_ranges
from replay.readers.copilot_usage import CONVERSATION_CALLS, call_usage, compaction_usage, session_totals
from replay.readers.json_fields import json_args, sub_dict

# a side call's counts in runs.metadata.side_calls (billed: replay.metrics.server_iterations), from Request fields
SIDE_COUNTS = {
    "input": "input_tokens",
    "cache_read": "cache_read",
    "cache_write": "cache_write",
    "output": "output_tokens",
}
CALL_IDS = ("apiCallId", "requestId", "providerCallId", "serviceRequestId")  # names of one model call
TRIGGERS = {"manual": "manual", "auto": "auto"}  # the rest (threshold, context_limit_retry, ...) are automatic


def _int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


class Conversation:
    """State while reading one conversation: its open request, calls and results seen, model, checkpoint."""

    def __init__(self, run: Run) -> None:
        self.b = RunBuilder(run)
        self.model: str | None = None
        self.turn_request: int | None = None  # records index of the open turn's request
        self.turn_ids: set[str] = set()  # identifiers of the model call that request holds
        self.answered = False  # a message or usage record reached the open request
        self.with_usage: set[int] = set()  # records indexes of requests a usage record gave counts
        self.calls: set[str | None] = set()  # tool call ids seen (None: a call logged without one)
        self.results: set[str] = set()
        self.user_run: set[str] = set()  # tool calls the user ran: neither call nor result reaches the model
        self.context: dict[tuple[str, str | None], tuple[str, int]] = {}  # (role, name) -> (text, seq) sent now
        self.held: list[tuple[int, dict, str | None]] = []  # user messages waiting for their system message
        self.checkpoint: int | None = None  # first item seq after session.compaction_start's checkpoint
        self.start: dict = {}  # that compaction_start's data
        self.user_texts: list[str] = []
        self.skills: dict[str, str] = {}  # "sha256:<hex>" of an inline skill content -> the content
        self.waiting: tuple[dict, int | None, Any] | None = None  # (event, summary index, completed at)
        self.limits: dict[int, int] = {}  # maxPromptTokens -> requests
        self.call_limits: dict[int, int] = {}  # a request's log line -> the maxPromptTokens its call ran against
        self.shutdowns: list[tuple[int, Any]] = []  # (line, modelMetrics) of each session.shutdown

    # --- records ----------------------------------------------------------------------------------------------
    def finish(self) -> Iterator[Record]:
        self.release()
        served: dict[str, int] = {}
        for r in self.b.records:
            if isinstance(r, Request) and r.model:
                served[r.model] = served.get(r.model, 0) + 1
        if served:
            self.set_run(model=max(served, key=lambda m: served[m]))
        if self.limits:
            self.b.run.metadata["prompt_limit"] = max(self.limits, key=lambda k: (self.limits[k], k))
        changes: list[list[int]] = []  # [[request line, limit], ...] where the limit changes, in log order
        for line, limit in sorted(self.call_limits.items()):
            if not changes or changes[-1][1] != limit:
                changes.append([line, limit])
        if len(changes) > 1:  # calls against more than one limit (a model switch): read per request
            self.b.run.metadata["prompt_limits"] = changes
        yield from self.b

    def set_run(self, **changes: Any) -> None:
        self.b.run = self.b.records[0] = replace(self.b.run, **changes)

    def open_request(self, line: int, ts: str | None, model: str | None = None) -> int:
        """Open a request (the turn's, or a further call's); its index in the records."""
        self.b.request(line=line, ts=ts, model=model or self.model)
        self.turn_request = len(self.b.records) - 1
        self.turn_ids, self.answered = set(), False
        return self.turn_request

    def request_for(self, ids: set[str], line: int, ts: str | None) -> int:
        """The request a model call's message or usage belongs to: the open one, unless it holds another call."""
        index = self.turn_request
        if index is None or (ids and self.turn_ids and not ids & self.turn_ids):
            index = self.open_request(line, ts)
        self.turn_ids |= ids
        self.answered = True
        return index

    def release(self) -> None:
        """Add the user messages held back (after the system message that came, or as they are when none did)."""
        held, self.held = self.held, []
        for line, data, ts in held:
            self.b.new_turn()
            text = text_of(data.get("transformedContent") or data.get("content"))
            self.b.add("user_text", "user", text, line=line, ts=ts)
            attached = [a.get("type") for a in data.get("attachments") or [] if isinstance(a, dict)]
            if attached and self.b.step:  # the CLI adds what they hold (files read from disk) to the message it sends
                note = {"step": self.b.step, "line": line, "reason": "attachments", "types": attached}
                self.b.run.metadata.setdefault("unlogged", []).append(note)
            if not data.get("source"):  # a sub-agent's prompt (source "agent-...") is not the user's
                self.user_texts.append(text_of(data.get("content")))

    # --- events -----------------------------------------------------------------------------------------------
    def event(self, line: int, kind: str, data: dict, ts: str | None) -> None:
        if kind == "user.message":
            self.held.append((line, data, ts))
            return
        if kind == "system.message":
            self.system_message(line, data, ts)
            self.release()
            return
        self.release()
        handler = HANDLERS.get(kind)
        if handler is not None:
            handler(self, line, data, ts)

    def system_message(self, line: int, data: dict, ts: str | None) -> None:
        """A system message replaces the one of the same role and name sent so far, when its text differs (the CLI
        upserts its system context messages by role and name; 1.0.102 re-renders the system prompt with the next
        user message, e.g. listing the checkpoints a compaction saved): the new text is an item, the old one leaves
        every later prompt (``runs.metadata.rollbacks``). A developer message or a named one is another message."""
        text = text_of(data.get("content"))
        key = (str(data.get("role") or "system"), data.get("name") if isinstance(data.get("name"), str) else None)
        sent = self.context.get(key)
        if sent is not None and sent[0] == text:
            return
        item = self.b.add("system", "system", text, line=line, ts=ts)
        if sent is not None:
            replaced = {
                "step": self.b.step,
                "line": line,
                "drop": [[sent[1], sent[1] + 1]],
                "replaced": "system.message",
            }
            self.b.run.metadata.setdefault("rollbacks", []).append(replaced)
        self.context[key] = (text, item.seq)

    def turn_start(self, line: int, data: dict, ts: str | None) -> None:
        self.open_request(line, ts, data.get("model") if isinstance(data.get("model"), str) else None)

    def turn_end(self, line: int, data: dict, ts: str | None) -> None:
        self.turn_request = None

    def usage_record(self, line: int, data: dict, ts: str | None) -> None:
        usage = sub_dict(data, "usage")
        if usage.get("interactionType") not in CONVERSATION_CALLS:  # not a call of this conversation: billed beside it
            fields, problem = call_usage(usage)
            counts = {"problem": problem} if problem is not None else {k: fields[v] for k, v in SIDE_COUNTS.items()}
            side = self.b.run.metadata.setdefault("side_calls", [])
            side.append(
                {
                    "line": line,
                    "step": max(self.b.step, 0),
                    "type": usage.get("interactionType"),
                    "model": usage.get("model"),
                    **counts,
                }
            )
            return
        fields, problem = call_usage(usage)
        ids = {str(usage[k]) for k in CALL_IDS if usage.get(k)}
        index = self.request_for(ids, line, ts)
        req = cast(Request, self.b.records[index])
        if problem is not None:
            self.b.records.append(BadRecord(line, f"usage record: {problem}; request kept without usage", str(usage)))
        else:
            fields = self.b.checked_usage(fields, line)
            model = usage.get("model") if isinstance(usage.get("model"), str) and usage["model"] else req.model
            self.b.records[index] = req = replace(req, model=model, **fields)
            self.with_usage.add(index)
        if _int(usage.get("maxPromptTokens")):
            self.limits[usage["maxPromptTokens"]] = self.limits.get(usage["maxPromptTokens"], 0) + 1
            if req.line is not None:
                self.call_limits[req.line] = usage["maxPromptTokens"]
        self.place_waiting(req, ts, usage.get("duration"))

    def message(self, line: int, data: dict, ts: str | None) -> None:
        b = self.b
        ids = {str(data[k]) for k in CALL_IDS if data.get(k)}
        index = self.request_for(ids, line, ts)
        req = cast(Request, b.records[index])
        if isinstance(data.get("model"), str) and data["model"] and index not in self.with_usage:
            b.records[index] = req = replace(req, model=data["model"])
        if index not in self.with_usage:  # a usage record, when there is one, has the call's output
            added = b.checked_usage({"output_tokens": data.get("outputTokens")}, line)["output_tokens"]
            if added is not None:
                b.records[index] = req = replace(req, output_tokens=(req.output_tokens or 0) + added)
        self.waiting = None  # no usage record timed the call: a compaction waiting for it stays at the next
        if reasoning := text_of(data.get("reasoningText")):
            b.add("reasoning", "assistant", reasoning, line=line, ts=ts)
        if text := text_of(data.get("content")):
            b.add("assistant_text", "assistant", text, line=line, ts=ts)
        for tr in data.get("toolRequests") or []:
            if isinstance(tr, dict) and tr.get("toolCallId") not in self.calls:
                self.calls.add(tr.get("toolCallId"))
                args = json_args(tr.get("arguments")) or {}
                add_call(b, tr.get("name") or "", args, tr.get("toolCallId"), line=line, ts=ts)

    def user_requested(self, line: int, data: dict, ts: str | None) -> None:
        if isinstance(data.get("toolCallId"), str):
            self.user_run.add(data["toolCallId"])

    def tool_start(self, line: int, data: dict, ts: str | None) -> None:
        call_id = data.get("toolCallId")
        if call_id in self.calls or call_id in self.user_run:
            return
        if self.turn_request is None:
            self.open_request(line, ts)
        self.calls.add(call_id)
        add_call(self.b, data.get("toolName") or "", data.get("arguments") or {}, call_id, line=line, ts=ts)

    def tool_complete(self, line: int, data: dict, ts: str | None) -> None:
        call_id = data.get("toolCallId")
        if data.get("isUserRequested") or call_id in self.user_run or (call_id and call_id in self.results):
            return
        if isinstance(call_id, str):
            self.results.add(call_id)
        result, error = sub_dict(data, "result"), data.get("error")
        text = (
            text_of(result.get("content"))
            if result
            else text_of(error.get("message") if isinstance(error, dict) else error)
        )
        self.b.result(text, call_id, line=line, ts=ts, is_error=data.get("success") is False)

    def injected(self, line: int, data: dict, ts: str | None, source: str) -> None:
        """Content the CLI puts in the conversation as a user message of its own."""
        if text := text_of(data.get("content")):
            self.b.add("attachment", "user", text, tool_name=source, line=line, ts=ts)

    def skill(self, line: int, data: dict, ts: str | None) -> None:
        """A skill's content, kept for the references a later ``skill.context_delivered_ref`` makes to it."""
        if isinstance(data.get("content"), str):
            digest = hashlib.sha256(data["content"].encode("utf-8")).hexdigest()
            self.skills[f"sha256:{digest}"] = data["content"]

    def skill_context(self, line: int, data: dict, ts: str | None) -> None:
        self.skill(line, data, ts)
        self.injected(line, data, ts, "skill.context_delivered")

    def skill_context_ref(self, line: int, data: dict, ts: str | None) -> None:
        ref = data.get("contentId")
        body = self.skills.get(ref) if isinstance(ref, str) else None
        if body is None:
            self.b.warn(
                line,
                f"skill.context_delivered_ref names content {ref!r} no earlier skill event of this conversation "
                "holds: the prompt from here on lacks that skill text",
            )
        text = text_of(data.get("prefix")) + (body or "") + text_of(data.get("suffix"))
        self.b.add("attachment", "user", text, tool_name="skill.context_delivered", line=line, ts=ts)

    # --- session ----------------------------------------------------------------------------------------------
    def session_start(self, line: int, data: dict, ts: str | None) -> None:
        ctx = sub_dict(data, "context")
        found = {
            "session_id": data.get("sessionId"),
            "copilot_version": data.get("copilotVersion"),
            "producer": data.get("producer"),
            "cwd": ctx.get("cwd"),
            "branch": ctx.get("branch"),
        }
        self.b.run.metadata.update({k: v for k, v in found.items() if v is not None})
        self.set_run(started_at=data.get("startTime") or ts)
        self.select(data.get("selectedModel"))

    def select(self, model: Any) -> None:
        """The model the session started with."""
        if isinstance(model, str) and model:
            self.model = model
            self.set_run(model=model)

    def model_change(self, line: int, data: dict, ts: str | None) -> None:
        """A new selection (``session.model_change``, a resume's ``selectedModel``) for the requests after it."""
        self.model = data.get("newModel") or self.model
        if self.model and not self.b.run.model:
            self.set_run(model=self.model)

    def shutdown(self, line: int, data: dict, ts: str | None) -> None:
        self.prefix_tokens(data, "session.shutdown")
        keys = (
            "modelMetrics",
            "totalPremiumRequests",
            "totalApiDurationMs",
            "currentTokens",
            "systemTokens",
            "conversationTokens",
            "toolDefinitionsTokens",
            "shutdownType",
        )
        self.b.run.metadata["session_usage"] = {k: data.get(k) for k in keys if data.get(k) is not None}
        if "modelMetrics" in data:
            self.shutdowns.append((line, data["modelMetrics"]))

    def requests(self) -> int:
        return sum(isinstance(r, Request) for r in self.b.records)

    def settle_totals(self, sub_agents: int) -> None:
        """Make the shutdowns' session totals the run's usage (``runs.metadata.session_totals``: per model, summed
        over the shutdowns, each covering the calls since its process started) where the log records no
        per-request usage and the totals cover exactly the run's requests; else say why they cannot be its bill."""
        if not self.shutdowns or self.with_usage:  # per-request usage is the bill
            return
        line = self.shutdowns[-1][0]
        summed: dict[str | None, dict[str, Any]] = {}
        for at, metrics in self.shutdowns:
            totals, problem = session_totals(metrics)
            if problem is not None:
                self.b.warn(at, f"session.shutdown: {problem}; the run has no recorded usage to bill")
                return
            for t in totals:
                into = summed.setdefault(t["model"], dict.fromkeys(t, 0) | {"model": t["model"]})
                for k, v in t.items():
                    if k != "model":
                        into[k] += v
        counted, requests = sum(t["requests"] for t in summed.values()), self.requests()
        if sub_agents or counted != requests:
            why = f"{sub_agents} sub-agent run(s) share them" if sub_agents else f"the run has {requests} requests"
            self.b.warn(
                line,
                f"session.shutdown totals count {counted} model calls and {why}: they are not this run's bill, "
                "which stays without usage",
            )
            return
        self.b.run.metadata["session_totals"] = {
            "from": "session.shutdown.modelMetrics",
            "shutdowns": len(self.shutdowns),
            "requests": counted,
            "models": list(summed.values()),
        }

    def truncation(self, line: int, data: dict, ts: str | None) -> None:
        """The CLI's truncator cut messages from a request's prompt (past the window even after compaction): which
        ones its rule picks the log does not say, so the items stay and that prompt reads high; said, with the
        request it is before. A pass that removed nothing (the CLI of 2025-12 logs one before every request of a
        resumed session: 0 messages and 0 tokens removed) changes no prompt: kept, not warned of."""
        numbers = {k: v for k, v in data.items() if isinstance(v, int | float) and not isinstance(v, bool)}
        step = self.b.step if self.turn_request is None or self.answered else self.b.step - 1
        self.b.run.metadata.setdefault("truncations", []).append({"line": line, "step": step, **numbers})
        removed = numbers.get("messagesRemovedDuringTruncation")
        if removed == 0 and numbers.get("tokensRemovedDuringTruncation") == 0:
            return
        self.b.warn(
            line,
            f"session.truncation: the CLI cut {removed} message(s) from request {step}'s prompt; which ones is not "
            "logged, so they stay in it here and its replayed prompt reads high",
        )

    def prefix_tokens(self, data: dict, source: str) -> None:
        """The first breakdown the log gives of what the CLI sends besides the messages it logs."""
        meta = self.b.run.metadata
        tools, system = data.get("toolDefinitionsTokens"), data.get("systemTokens")
        if "harness_prefix" in meta or not _int(tools):
            return
        logged = any(isinstance(r, Item) and r.kind == "system" for r in self.b.records)
        extra = system if _int(system) and not logged else 0
        meta["harness_prefix"] = {
            "tokens": tools + (extra or 0),
            "tool_definitions": tools,
            "system": system,
            "system_logged": logged,
            "from": source,
        }

    # --- compaction -------------------------------------------------------------------------------------------
    def compaction_start(self, line: int, data: dict, ts: str | None) -> None:
        self.checkpoint, self.start = self.b.seq, data
        self.prefix_tokens(data, "session.compaction_start")
        if _int(data.get("tokenLimit")):
            self.b.run.metadata.setdefault("compaction_limits", []).append(data["tokenLimit"])

    def compaction_complete(self, line: int, data: dict, ts: str | None) -> None:
        """The messages up to the checkpoint replaced by the summary message."""
        checkpoint, start, self.checkpoint, self.start = self.checkpoint, self.start, None, {}
        if data.get("success") is False:
            return
        self.prefix_tokens(data, "session.compaction_complete")
        b = self.b
        items = [r for r in b.records if isinstance(r, Item)]
        first = b.body_start()
        cut = b.seq if checkpoint is None else checkpoint
        kept = next((i for i in items if i.seq == cut), None)
        if kept is not None and kept.kind == "tool_result":  # its call's message goes with it
            call = next((i for i in items if i.kind == "tool_call" and i.call_id == kept.call_id), None)
            if call is not None and call.seq < cut:
                cut = min(i.seq for i in items if i.line == call.line and i.seq >= first)
        summary_seq = None
        parts = [text_of(data.get("summaryContent")), text_of(data.get("activeWorkflowSummary"))]
        if parts[0]:
            text = "\n\n".join([*self.user_texts, *(p for p in parts if p)])  # the user's messages, then the summary
            summary_seq = b.add("summary", "user", text, line=line, ts=ts).seq
        logged = data.get("trigger") or start.get("trigger")
        trigger = TRIGGERS.get(logged, "auto") if logged else ("auto" if checkpoint is not None else None)
        event = b.context_event(
            "compaction",
            drop=seq_ranges(i.seq for i in items if first <= i.seq < cut and i.kind not in PREFIX_KINDS),
            summary_seq=summary_seq,
            trigger=trigger,
            pre_tokens=data.get("preCompactionTokens"),
            line=line,
            post_tokens=data.get("postCompactionTokens"),
            messages_removed=data.get("messagesRemoved"),
        )
        if logged and logged not in TRIGGERS:
            event["trigger_logged"] = logged
        if _int(data.get("tokenLimit")):
            event["token_limit"] = data["tokenLimit"]
        sizes = [data.get(k) for k in ("systemTokens", "conversationTokens", "toolDefinitionsTokens")]
        if all(_int(v) for v in sizes):
            event["after_tokens"] = sum(sizes)  # the context after it as the CLI counts it
        used = sub_dict(data, "compactionTokensUsed")
        if used:
            event["usage"] = compaction_usage(used)
            if isinstance(used.get("model"), str) and used["model"]:
                event["summariser_model"] = used["model"]
        if self.turn_request is not None and not self.answered:  # the open turn's call may have waited for it
            summary = len(b.records) - 1 if summary_seq is not None else None
            self.waiting = (event, summary, instant(ts))

    def place_waiting(self, req: Request, ts: str | None, duration: Any) -> None:
        """A compaction completed after the open request's turn started: that call sent the compacted context when
        it started after the completion (its usage record's time less its duration)."""
        waiting, self.waiting = self.waiting, None
        end = instant(ts)
        if waiting is None or end is None or waiting[2] is None or not _int(duration):
            return
        event, summary, completed = waiting
        if end - timedelta(milliseconds=duration) >= completed:
            event["step"] = req.step
            if summary is not None:
                self.b.records[summary] = replace(cast(Item, self.b.records[summary]), step=req.step)

    def context_cleared(self, line: int, data: dict, ts: str | None) -> None:
        """The host cleared the conversation: nothing before reaches the model again."""
        b = self.b
        first = b.body_start()
        self.checkpoint, self.start, self.user_texts = None, {}, []
        items = [r for r in b.records if isinstance(r, Item)]
        b.context_event(
            "compaction",
            drop=seq_ranges(i.seq for i in items if i.seq >= first and i.kind not in PREFIX_KINDS),
            trigger="manual",
            line=line,
            cleared=data.get("messagesCleared"),
        )


HANDLERS = {
    "session.start": Conversation.session_start,
    "session.resume": lambda s, line, d, ts: s.model_change(line, {"newModel": d.get("selectedModel")}, ts),
    "session.model_change": Conversation.model_change,
    "session.shutdown": Conversation.shutdown,
    "session.truncation": Conversation.truncation,
    "assistant.turn_start": Conversation.turn_start,
    "assistant.turn_end": Conversation.turn_end,
    "assistant.message": Conversation.message,
    "session.usage_record": Conversation.usage_record,
    "tool.user_requested": Conversation.user_requested,
    "tool.execution_start": Conversation.tool_start,
    "tool.execution_complete": Conversation.tool_complete,
    "system.notification": lambda s, line, d, ts: s.injected(line, d, ts, "system.notification"),
    "session.mode_notice_delivered": lambda s, line, d, ts: s.injected(line, d, ts, "session.mode_notice_delivered"),
    "skill.invoked": Conversation.skill,
    "skill.context_delivered": Conversation.skill_context,
    "skill.context_delivered_ref": Conversation.skill_context_ref,
    "session.compaction_start": Conversation.compaction_start,
    "session.compaction_complete": Conversation.compaction_complete,
    "session.context_cleared": Conversation.context_cleared,
}
