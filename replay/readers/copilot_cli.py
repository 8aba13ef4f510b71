"""GitHub Copilot CLI sessions: ``events.jsonl`` (1.0.x, ~/.copilot/session-state/<id>/events.jsonl) and the
legacy session JSON (``{sessionId, startTime, chatMessages[], timeline[]}``, ~/.copilot/history-session-state).

events.jsonl lines are ``{type, data, id, timestamp, parentId}``. ``system.message`` -> system (again only when
its text changes), ``user.message`` -> user_text (``transformedContent``, the text sent, else ``content``),
``assistant.message`` -> reasoning (``reasoningText``), assistant_text and one tool call per ``toolRequests[]``
entry; ``tool.execution_start`` of a call no message requested adds that call; ``tool.execution_complete`` ->
the tool result (``result.content``, what the model gets; ``detailedContent`` is for the UI).

Request rule: one request per ``assistant.turn_start`` (each turn is one model call: the file's
``session.shutdown`` ``modelMetrics.*.requests.count`` equals the number of turns); an ``assistant.message``
whose ``requestId`` differs from the one its turn already has is a further call and opens another request, and
a message outside any turn opens one. The log has no per-request input counts, only ``outputTokens`` per
message (summed on the request); the session totals of ``session.shutdown`` go to
``runs.metadata.session_usage`` (``assistant.usage`` and ``session.usage_info`` are never written to the file).
The model is ``session.start``'s ``selectedModel``, else the latest ``session.model_change``.

Compaction (1.0.34's CompactionProcessor, from the shipped app.js and its session-events schema): it starts in the
background (``session.compaction_start``, the checkpoint: the messages so far) and, when
``session.compaction_complete`` arrives, the messages up to the checkpoint are replaced by one user message
holding the original user messages and ``summaryContent``; messages added since stay (moved back to the assistant
message whose tool results would otherwise open the kept part). A recorded context event (kind "compaction",
docs/canonical-format.md) at the next request: ``drop`` = the body up to the checkpoint, the summary item that
message, ``usage`` the summariser call's ``compactionTokensUsed`` {input, output, cachedInput}, ``after_tokens`` the
system, conversation and tool-definition tokens the event gives for after it.

The harness prefix the log does not hold: ``toolDefinitionsTokens`` (and ``systemTokens`` when no system message
is logged), from the first event that carries them (``session.compaction_start``/``_complete``,
``session.shutdown``), in ``runs.metadata.harness_prefix``: the prompt model's prefix where no usage is fitted.

Legacy JSON: OpenAI-chat ``chatMessages`` (one request before each assistant message, tool results by
``tool_call_id``); ``timeline`` is UI history and is not read. No usage is recorded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from replay.model import BadRecord, Item, Record, Request, Run
from replay.readers.aliases import add_call
from replay.readers.base import ReadContext, iter_json_lines, load_json_document, open_log, text_of
from replay.readers.builder import RunBuilder
from replay.readers.json_fields import sub_dict

EVENT_RE = re.compile(
    r'"type"\s*:\s*"(?:session\.start|session\.model_change|assistant\.turn_start|'
    r'assistant\.message|user\.message|tool\.execution_start)"'
)


def _compaction_usage(used: dict) -> dict[str, Any]:
    """A ``compactionTokensUsed`` as canonical event usage: the CLI (1.0.34, app.js) writes the summariser
    response's ``prompt_tokens`` as ``input`` and its ``prompt_tokens_details.cached_tokens`` as ``cachedInput``,
    so the uncached input is their difference (None when the two are not counts of that shape)."""
    prompt, cached = used.get("input"), used.get("cachedInput") or 0
    if (
        not (isinstance(prompt, int) and isinstance(cached, int))
        or isinstance(prompt, bool)
        or not 0 <= cached <= prompt
    ):
        return {"input": None, "cache_read": None, "output": used.get("output"), "prompt": prompt}
    return {"input": prompt - cached, "cache_read": cached, "output": used.get("output"), "prompt": prompt}


class CopilotCliReader:
    format = "copilot-cli"
    version = 2  # 2: a compaction's usage ``input`` is its uncached input (was the whole prompt)

    def sniff(self, head: str, path: Path) -> bool:
        start = head.lstrip()[:1]
        if start == "{" and '"chatMessages"' in head and '"sessionId"' in head:
            return True
        jsonl = start == "{" or "\n{" in head  # a damaged first line must not hide the rest
        return jsonl and '"data"' in head and bool(EVENT_RE.search(head))

    def read(self, ctx: ReadContext) -> Iterator[Record]:
        with open_log(ctx.path) as fh:
            first = fh.readline().strip()
        legacy = b'"chatMessages"' in first or first == b"{"  # one object, on one line or pretty-printed
        yield from (self._legacy(ctx) if legacy else self._events(ctx))

    # --- events.jsonl ----------------------------------------------------------------------------------------
    def _events(self, ctx: ReadContext) -> Iterator[Record]:
        session = _EventSession(ctx, self.format)
        for entry in iter_json_lines(ctx):
            if isinstance(entry, BadRecord):
                yield entry
                continue
            line, obj = entry
            if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
                yield BadRecord(line, "Copilot CLI event without a 'type'", str(obj)[:2000])
                continue
            session.event(line, obj)
        yield from session.b

    # --- legacy session JSON ---------------------------------------------------------------------------------
    def _legacy(self, ctx: ReadContext) -> Iterator[Record]:
        doc = load_json_document(ctx)
        if isinstance(doc, BadRecord):
            yield doc
            return
        if not isinstance(doc, dict) or not isinstance(doc.get("chatMessages"), list):
            yield BadRecord(1, "Copilot CLI session JSON without a 'chatMessages' list", str(doc)[:2000])
            return
        run = Run(
            run_id=ctx.run_id(),
            format=self.format,
            source_path=str(ctx.path),
            harness="copilot-cli",
            started_at=doc.get("startTime"),
            metadata={"session_id": doc.get("sessionId"), "legacy": True},
        )
        b = RunBuilder(run)
        for n, msg in enumerate(doc["chatMessages"]):
            if not isinstance(msg, dict) or msg.get("role") not in ("system", "user", "assistant", "tool"):
                yield BadRecord(n, f"chatMessages[{n}] is not a chat message with a role", str(msg)[:2000])
                continue
            role, text = msg["role"], text_of(msg.get("content"))
            if role == "system":
                b.add("system", "system", text, line=n)
            elif role == "user":
                b.new_turn()
                b.add("user_text", "user", text, line=n)
            elif role == "tool":
                b.result(text, msg.get("tool_call_id"), msg.get("name"), line=n)
            else:
                b.request(line=n, model=msg.get("model"))
                if text:
                    b.add("assistant_text", "assistant", text, line=n)
                for call in msg.get("tool_calls") or []:
                    fn = call.get("function") if isinstance(call, dict) else None
                    if isinstance(fn, dict):
                        add_call(b, fn.get("name") or "", _json_args(fn.get("arguments")), call.get("id"), line=n)
        yield from b


def _json_args(args: Any) -> Any:
    if isinstance(args, str):
        try:
            return json.loads(args)
        except ValueError:
            return args
    return args


class _EventSession:
    """State while reading events.jsonl: the current turn's request, calls already added, current model."""

    def __init__(self, ctx: ReadContext, fmt: str) -> None:
        self.b = RunBuilder(Run(run_id=ctx.run_id(), format=fmt, source_path=str(ctx.path), harness="copilot-cli"))
        self.model: str | None = None
        self.turn_request: int | None = None  # records index of the open turn's request
        self.turn_request_id: str | None = None
        self.calls: set[str | None] = set()  # tool call ids seen (None: a call logged without one)
        self.system: str | None = None
        self.checkpoint: int | None = None  # first item seq after session.compaction_start's checkpoint
        self.user_texts: list[str] = []

    def prefix_tokens(self, data: dict, source: str) -> None:
        """The first breakdown the log gives of what the CLI sends besides the messages it logs."""
        meta = self.b.run.metadata
        tools, system = data.get("toolDefinitionsTokens"), data.get("systemTokens")
        if "harness_prefix" in meta or not isinstance(tools, int) or isinstance(tools, bool):
            return
        logged = any(isinstance(r, Item) and r.kind == "system" for r in self.b.records)
        extra = system if isinstance(system, int) and not isinstance(system, bool) and not logged else 0
        meta["harness_prefix"] = {
            "tokens": tools + extra,
            "tool_definitions": tools,
            "system": system,
            "system_logged": logged,
            "from": source,
        }

    def _set_run(self, **changes: Any) -> None:
        self.b.run = self.b.records[0] = replace(self.b.run, **changes)

    def _request(self, line: int, ts: str | None) -> int:
        """Open the turn's request; its index in the records."""
        self.b.request(line=line, ts=ts, model=self.model)
        self.turn_request = len(self.b.records) - 1
        self.turn_request_id = None
        return self.turn_request

    def event(self, line: int, ev: dict) -> None:
        kind, data, ts, b = (
            ev["type"],
            sub_dict(ev, "data"),
            ev.get("timestamp"),
            self.b,
        )
        meta = b.run.metadata
        if kind == "session.start":
            ctx = sub_dict(data, "context")
            meta.update(
                {
                    k: v
                    for k, v in {
                        "session_id": data.get("sessionId"),
                        "copilot_version": data.get("copilotVersion"),
                        "producer": data.get("producer"),
                        "cwd": ctx.get("cwd"),
                        "branch": ctx.get("branch"),
                    }.items()
                    if v is not None
                }
            )
            self._set_run(started_at=data.get("startTime") or ts)
            if isinstance(data.get("selectedModel"), str) and data["selectedModel"]:
                self.model = data["selectedModel"]
                self._set_run(model=self.model)
        elif kind == "session.model_change":
            self.model = data.get("newModel") or self.model
            if self.model and not b.run.model:
                self._set_run(model=self.model)
        elif kind == "system.message":
            text = text_of(data.get("content"))
            if text != self.system:
                b.add("system", "system", text, line=line, ts=ts)
                self.system = text
        elif kind == "user.message":
            b.new_turn()
            text = text_of(data.get("transformedContent") or data.get("content"))
            b.add("user_text", "user", text, line=line, ts=ts)
            self.user_texts.append(text)
        elif kind == "assistant.turn_start":
            self._request(line, ts)
        elif kind == "assistant.turn_end":
            self.turn_request = None
        elif kind == "assistant.message":
            self.message(line, data, ts)
        elif kind == "tool.execution_start":
            call_id = data.get("toolCallId")
            if call_id not in self.calls:
                if self.turn_request is None:
                    self._request(line, ts)
                self.calls.add(call_id)
                add_call(b, data.get("toolName") or "", data.get("arguments") or {}, call_id, line=line, ts=ts)
        elif kind == "tool.execution_complete":
            result = sub_dict(data, "result")
            error = data.get("error")
            text = (
                text_of(result.get("content"))
                if result
                else text_of(error.get("message") if isinstance(error, dict) else error)
            )
            b.result(text, data.get("toolCallId"), line=line, ts=ts, is_error=data.get("success") is False)
        elif kind == "session.compaction_start":
            self.checkpoint = b.seq
            self.prefix_tokens(data, kind)
        elif kind == "session.shutdown":
            self.prefix_tokens(data, kind)
            meta["session_usage"] = {
                k: data.get(k)
                for k in (
                    "modelMetrics",
                    "totalPremiumRequests",
                    "totalApiDurationMs",
                    "currentTokens",
                    "systemTokens",
                    "conversationTokens",
                    "toolDefinitionsTokens",
                    "shutdownType",
                )
                if data.get(k) is not None
            }
        elif kind == "session.compaction_complete":
            self.compaction(line, data, ts)
        elif kind == "session.truncation":
            meta.setdefault("truncations", []).append(
                {"line": line, **{k: v for k, v in data.items() if isinstance(v, int | float)}}
            )

    def compaction(self, line: int, data: dict, ts: str | None) -> None:
        """``session.compaction_complete``: the messages up to the checkpoint replaced by the summary message."""
        checkpoint, self.checkpoint = self.checkpoint, None
        if data.get("success") is False:
            return
        self.prefix_tokens(data, "session.compaction_complete")
        b = self.b
        items = [r for r in b.records if isinstance(r, Item)]
        first = next((i.seq for i in items if i.kind not in ("system", "tool_defs")), b.seq)
        cut = b.seq if checkpoint is None else checkpoint
        kept = next((i for i in items if i.seq == cut), None)
        if kept is not None and kept.kind == "tool_result":  # its call's message goes with it
            call = next((i for i in items if i.kind == "tool_call" and i.call_id == kept.call_id), None)
            if call is not None and call.seq < cut:
                cut = min(i.seq for i in items if i.line == call.line and i.seq >= first)
        summary_seq = None
        if summary := text_of(data.get("summaryContent")):
            text = "\n\n".join([*self.user_texts, summary])  # the message lists the user's messages, then the summary
            summary_seq = b.add("summary", "user", text, line=line, ts=ts).seq
        used = sub_dict(data, "compactionTokensUsed")
        event: dict[str, Any] = {
            "kind": "compaction",
            "step": b.step,
            "drop": [[first, cut]] if first < cut else [],
            "summary_seq": summary_seq,
            "trigger": "auto" if checkpoint is not None else None,
            "pre_tokens": data.get("preCompactionTokens"),
            "post_tokens": data.get("postCompactionTokens"),
            "line": line,
            "messages_removed": data.get("messagesRemoved"),
        }
        parts = [data.get(k) for k in ("systemTokens", "conversationTokens", "toolDefinitionsTokens")]
        if all(isinstance(v, int) and not isinstance(v, bool) for v in parts):
            event["after_tokens"] = sum(parts)  # the context after it as the CLI counts it: no request logs one
        if used:
            event["usage"] = _compaction_usage(used)
        b.run.metadata.setdefault("context_events", []).append(event)

    def message(self, line: int, data: dict, ts: str | None) -> None:
        b, rid = self.b, data.get("requestId")
        index = self.turn_request
        if index is None or (rid and self.turn_request_id and rid != self.turn_request_id):
            index = self._request(line, ts)
        if rid:
            self.turn_request_id = rid
        req = cast(Request, b.records[index])  # turn_request indexes the turn's Request
        added = b.checked_usage({"output_tokens": data.get("outputTokens")}, line)["output_tokens"]  # bad: quarantined
        if added is not None:
            b.records[index] = replace(req, output_tokens=(req.output_tokens or 0) + added)
        if reasoning := text_of(data.get("reasoningText")):
            b.add("reasoning", "assistant", reasoning, line=line, ts=ts)
        if text := text_of(data.get("content")):
            b.add("assistant_text", "assistant", text, line=line, ts=ts)
        for tr in data.get("toolRequests") or []:
            if isinstance(tr, dict) and tr.get("toolCallId") not in self.calls:
                self.calls.add(tr.get("toolCallId"))
                args = _json_args(tr.get("arguments")) or {}
                add_call(b, tr.get("name") or "", args, tr.get("toolCallId"), line=line, ts=ts)


READER = CopilotCliReader()
