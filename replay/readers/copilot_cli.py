"""GitHub Copilot CLI sessions: ``events.jsonl`` (1.0.x, ~/.copilot/session-state/<id>/events.jsonl) and the
legacy session JSON (``{sessionId, startTime, chatMessages[], timeline[]}``, ~/.copilot/history-session-state).

events.jsonl lines are ``{type, data, id, timestamp, parentId, agentId?}``. Checked against 1.0.34's shipped app.js
and session-events schema and against 1.0.102 (its schema, and the files its native runtime wrote against a scripted
provider). Sub-agents' events are in the same file: from 1.0.x with ``agentId`` (1.0.34 also marks them by
``data.parentToolCallId``, as its own rebuild of the main messages skips them). Each sub-agent is a run of its own
(``parent_run_id`` the main one's, ``metadata.agent_id``, the ``subagent.started`` facts); the main conversation and
each sub-agent's are read by replay.readers.copilot_events, usage by replay.readers.copilot_usage.

Per-request usage: 1.0.102 writes each call's counts as ``session.usage_record`` (``assistant.usage`` and
``session.usage_info`` stay live-only, never written); 1.0.34 logs only ``outputTokens`` per message and the
session totals of ``session.shutdown`` (``runs.metadata.session_usage``), which are then the run's bill
(``runs.metadata.session_totals``, replay.metrics.session_totals) where they count exactly its requests.
``runs.metadata.prompt_limit`` is the ``maxPromptTokens`` most of the run's calls ran against (the window the CLI's
compaction threshold is a share of).

The harness prefix the log does not hold: ``toolDefinitionsTokens`` (and ``systemTokens`` when no system message
is logged), from the first event that carries them (``session.compaction_start``/``_complete``,
``session.shutdown``), in ``runs.metadata.harness_prefix``: the prompt model's prefix where no usage is fitted.

Damage the CLI's writer is known to leave in events.jsonl is mended, with a warning (replay.readers.jsonl_mend):
NUL bytes after a crash or power loss (github/copilot-cli issues 2217, 2927: 1.0.10, 1.0.35), an event cut off and
written again whole on the same line (4098: 1.0.71), a tool result written with raw line breaks over several lines
(2649: 1.0.24). Lines no mend explains stay quarantined.

Legacy JSON: OpenAI-chat ``chatMessages`` (one request before each assistant message, tool results by
``tool_call_id``); ``timeline`` is UI history and is not read. No usage is recorded.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from replay.model import BadRecord, Record, Run
from replay.readers.aliases import add_call
from replay.readers.base import ReadContext, iter_json_lines, load_json_document, open_log, text_of
from replay.readers.builder import RunBuilder
from replay.readers.copilot_events import Conversation
from replay.readers.json_fields import json_args, sub_dict
from replay.readers.jsonl_mend import describe

EVENT_RE = re.compile(
    r'"type"\s*:\s*"(?:session\.start|session\.model_change|assistant\.turn_start|'
    r'assistant\.message|user\.message|tool\.execution_start)"'
)


EVENT_START = b'{"type":'  # how the CLI writes every event line (JSON.stringify, ``type`` first)


class CopilotCliReader:
    format = "copilot-cli"
    # 2: a compaction's usage ``input`` is its uncached input (was the whole prompt); 3: 1.0.102: usage records,
    # sub-agents as child runs, skill context and notifications as items, user messages after their system message;
    # 4: the damage the CLI's writer leaves mended (NUL padding, torn and split events: replay.readers.jsonl_mend);
    # a truncation pass that removed nothing no longer warned of; 5: session totals as the bill of a run without
    # per-request usage
    version = 5

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
        log = _EventLog(ctx, self.format)
        for entry in iter_json_lines(ctx, mend=EVENT_START):
            if isinstance(entry, BadRecord):
                yield entry
                continue
            line, obj = entry
            if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
                yield BadRecord(line, "Copilot CLI event without a 'type'", str(obj)[:2000])
                continue
            log.event(line, obj)
        for mended in ctx.stats.pop("mended", []):
            log.main.b.warn(mended["line"], describe(mended))
        yield from log.finish()

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
                        add_call(b, fn.get("name") or "", json_args(fn.get("arguments")), call.get("id"), line=n)
        yield from b


class _EventLog:
    """The main conversation and the sub-agents' of one events.jsonl."""

    def __init__(self, ctx: ReadContext, fmt: str) -> None:
        self.ctx, self.format = ctx, fmt
        run = Run(run_id=ctx.run_id(), format=fmt, source_path=str(ctx.path), harness="copilot-cli")
        self.main = Conversation(run)
        self.agents: dict[str, Conversation] = {}
        self.by_call: dict[str, str] = {}  # parent tool call id -> the sub-agent it started (subagent.started)

    def agent_of(self, ev: dict, data: dict) -> str | None:
        """The sub-agent an event belongs to (None: the main conversation or the session)."""
        if isinstance(ev.get("agentId"), str) and ev["agentId"]:
            return ev["agentId"]
        parent = data.get("parentToolCallId")
        if isinstance(parent, str) and parent:
            return self.by_call.get(parent, parent)
        if ev["type"].startswith("subagent.") and isinstance(data.get("toolCallId"), str):
            return self.by_call.get(data["toolCallId"], data["toolCallId"])  # 1.0.34: no agentId
        return None

    def conversation(self, key: str, ev: dict) -> Conversation:
        if key not in self.agents:
            main = self.main.b.run
            run = Run(
                run_id=self.ctx.run_id(f"subagent-{len(self.agents) + 1}"),
                format=self.format,
                source_path=str(self.ctx.path),
                harness="copilot-cli",
                started_at=ev.get("timestamp"),
                parent_run_id=main.run_id,
                model=self.main.model,
                metadata={
                    "sidechain": True,
                    "agent_id": key,
                    **{k: main.metadata[k] for k in ("session_id", "copilot_version") if k in main.metadata},
                },
            )
            self.agents[key] = Conversation(run)
            self.agents[key].model = self.main.model
        return self.agents[key]

    def event(self, line: int, ev: dict) -> None:
        kind, data, ts = ev["type"], sub_dict(ev, "data"), ev.get("timestamp")
        key = self.agent_of(ev, data)
        if key is None:
            self.main.event(line, kind, data, ts)
            return
        agent = self.conversation(key, ev)
        if kind == "subagent.started":
            if isinstance(data.get("toolCallId"), str):
                self.by_call[data["toolCallId"]] = key
            facts = {k: data.get(k) for k in ("toolCallId", "agentName", "agentType", "model") if data.get(k)}
            agent.b.run.metadata.update({"subagent": facts})
            if isinstance(data.get("model"), str) and data["model"]:
                agent.model = data["model"]
        agent.event(line, kind, data, ts)

    def finish(self) -> Iterator[Record]:
        self.main.settle_totals(len(self.agents))
        yield from self.main.finish()
        for agent in self.agents.values():
            yield from agent.finish()


READER = CopilotCliReader()
