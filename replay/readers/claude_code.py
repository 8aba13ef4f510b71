"""Claude Code session JSONL (~/.claude/projects/*/*.jsonl, subagent and workflow journal files).

One request per unique assistant ``requestId`` (else ``message.id``): the lines of one API response
share it and repeat its usage, which is counted once. Inline sidechain (Task subagent) lines go to
child runs; a file that is itself a subagent transcript is one run marked ``sidechain``.

Compaction: a ``compact_boundary`` system line (2.x; ``compactMetadata`` {trigger, preTokens}) or, in 1.0.x, the
``isCompactSummary`` user line alone, becomes a context event (``run.metadata.context_events``): everything logged
before it is dropped from the next request on, and the summary is an item of kind ``summary`` (never user text).
What Claude Code re-attaches after it (``file`` attachments, ``compact_file_reference`` notes for files too large
to re-read) follows the summary as ``attachment`` items. 1.0.x re-attaches files without logging them. A
``microcompact_boundary`` line (``microcompactMetadata``: trigger, preTokens, tokensSaved, compactedToolIds) is a
``clear_tool_uses`` event dropping the results of the listed tool calls.

``<synthetic>`` assistant entries (model "<synthetic>", zero usage) are written by Claude Code itself, never by
the model: they are not requests. API-error ones (``isApiErrorMessage``) are filtered out before every request,
so they are not items either; other synthetic text (e.g. an interrupted turn's notice) is sent, so it is an item.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from replay.model import BadRecord, Item, Record, Run
from replay.readers.base import ReadContext, iter_json_lines, text_of
from replay.readers.builder import RunBuilder, seq_ranges

CONVERSATION = {"user", "assistant"}
TITLE_TYPES = {"summary": "summary", "ai-title": "aiTitle", "custom-title": "customTitle"}
JOURNAL_TYPES = {"started", "result"}
# attachments Claude Code injects into the prompt (as system reminders); the rest are UI state
CONTEXT_ATTACHMENTS = {"hook_additional_context", "nested_memory", "file", "edited_text_file", "skill_listing",
                       "invoked_skills", "queued_command", "todo_reminder", "task_reminder", "compact_file_reference"}
SYNTHETIC = "<synthetic>"
TRIGGERS = ("auto", "manual")
# the note Claude Code sends (as a system reminder) for a file read before a compaction and too large to re-attach
FILE_REFERENCE_NOTE = ("Note: {name} was read before the last conversation was summarized, but the contents are too "
                       "large to include. Use Read tool if you need to access it.")


def _looks_like_cc(obj: Any) -> bool:
    if not isinstance(obj, dict):
        return False
    kind = obj.get("type")
    if kind in CONVERSATION:
        return isinstance(obj.get("message"), dict) and ("sessionId" in obj or "agentId" in obj or "uuid" in obj)
    if kind == "summary":
        return "leafUuid" in obj
    return kind in JOURNAL_TYPES and "agentId" in obj and "key" in obj


def _attachment_text(att: dict) -> str:
    if att.get("type") == "compact_file_reference":
        return FILE_REFERENCE_NOTE.format(name=att.get("filename") or att.get("displayPath") or "")
    content = att.get("content")
    if isinstance(content, dict) and isinstance(content.get("file"), dict):
        return text_of(content["file"].get("content"))
    return text_of(content) or str(att.get("snippet") or att.get("prompt") or att.get("text") or "")


class ClaudeCodeReader:
    format = "claude-code"

    def sniff(self, head: str, path: Path) -> bool:
        for line in head.splitlines()[:40]:
            try:
                if _looks_like_cc(json.loads(line)):
                    return True
            except (ValueError, TypeError, RecursionError):  # unparseable or odd-typed line: look at the next
                continue
        return False

    def read(self, ctx: ReadContext) -> Iterator[Record]:
        session = _Session(ctx, self.format)
        for entry in iter_json_lines(ctx):
            if isinstance(entry, BadRecord):
                yield entry
            elif isinstance(entry[1], dict):
                session.line(*entry)
        for builder in [session.main, *session.children.values()]:
            session.flush_attachments(builder)
            yield from builder


def _cache_writes(b: RunBuilder, step: int, usage: dict) -> None:
    """Note request ``step``'s cache writes by TTL in ``runs.metadata.cache_writes`` (step -> [5 min, 1 h]
    tokens), when the usage splits them (``cache_creation.ephemeral_5m/1h_input_tokens``)."""
    split = usage.get("cache_creation")
    if isinstance(split, dict) and ("ephemeral_1h_input_tokens" in split or "ephemeral_5m_input_tokens" in split):
        b.run.metadata.setdefault("cache_writes", {})[str(step)] = [
            int(split.get("ephemeral_5m_input_tokens") or 0), int(split.get("ephemeral_1h_input_tokens") or 0)]


def _write_1h(usage: dict) -> int | None:
    """The 1 hour part of a response's cache writes (``cache_creation.ephemeral_1h_input_tokens``), None when the
    usage does not split writes by duration. Writes the split leaves out (some Anthropic-compatible endpoints
    report ``cache_creation_input_tokens`` with a split of zeros) are 5 minute writes, the API's default TTL."""
    split = usage.get("cache_creation")
    if not isinstance(split, dict) or "ephemeral_1h_input_tokens" not in split:
        return None
    return split["ephemeral_1h_input_tokens"]


def _attach(b: RunBuilder, obj: dict, line: int, ts: str | None) -> None:
    att = obj.get("attachment") if isinstance(obj.get("attachment"), dict) else {}
    if att.get("type") in CONTEXT_ATTACHMENTS and (text := _attachment_text(att)):
        b.add("attachment", "user", text, tool_name=att["type"], ts=ts, line=line)


def _microcompact(b: RunBuilder, obj: dict, line: int) -> None:
    """A microcompact_boundary line (2.x): the results of ``compactedToolIds`` are cleared from the next request on."""
    meta = obj.get("microcompactMetadata") if isinstance(obj.get("microcompactMetadata"), dict) else {}
    ids = {i for i in meta.get("compactedToolIds") or [] if isinstance(i, str)}
    seqs = [r.seq for r in b.records if isinstance(r, Item) and r.kind == "tool_result" and r.call_id in ids]
    raw, pre, saved = meta.get("trigger"), meta.get("preTokens"), meta.get("tokensSaved")
    extra: dict[str, Any] = {"trigger_logged": raw} if raw is not None and raw not in TRIGGERS else {}
    if isinstance(saved, int):
        extra["tokens_saved"] = saved
    b.context_event("clear_tool_uses", drop=seq_ranges(seqs), trigger=raw if raw in TRIGGERS else None,
                    pre_tokens=pre if isinstance(pre, int) else None, line=line, **extra)


def _before(b: RunBuilder, seq: int) -> list[list[int]]:
    """The drop range of a compaction at ``seq``: the conversation logged before it."""
    lo = b.body_start()
    return [[lo, seq]] if lo < seq else []


def _set_run(b: RunBuilder, **changes: Any) -> None:
    b.run = b.records[0] = replace(b.run, **changes)  # type: ignore[assignment]


class _Session:
    """The state of reading one file: the main run, sidechain child runs, requests seen."""

    def __init__(self, ctx: ReadContext, fmt: str) -> None:
        self.ctx, self.format = ctx, fmt
        self.agent_file = "agent-" in ctx.path.name or "-sub-" in ctx.path.name
        meta: dict[str, Any] = {"sidechain": True} if self.agent_file else {}
        self.main = RunBuilder(Run(run_id=ctx.run_id(), format=fmt, source_path=str(ctx.path),
                                   harness="claude-code", metadata=meta))
        self.children: dict[str, RunBuilder] = {}
        self.groups: dict[str, str] = {}
        self.seen_requests: set[str] = set()
        self.open_request: dict[str | None, tuple[RunBuilder, int]] = {}  # request id -> where its Request is
        self.uuids: set[str] = set()
        # attachments logged between a compact_boundary and its summary: they are re-sent after the summary
        self.held: dict[int, list[tuple[dict, int, str | None]]] = {}

    @staticmethod
    def unlogged(b: RunBuilder, line: int, reason: str, **detail: Any) -> None:
        """Note content the server saw from step ``b.step`` on that the log does not hold (calibration fits it)."""
        if b.step:  # before the first request it is part of the fitted system overhead anyway
            b.run.metadata.setdefault("unlogged", []).append({"step": b.step, "line": line, "reason": reason, **detail})

    def _builder(self, obj: dict) -> RunBuilder:
        """The main run, or the child run of the inline sidechain this line belongs to."""
        if self.agent_file or not obj.get("isSidechain"):
            return self.main
        group = self.groups.get(obj.get("parentUuid")) or obj.get("uuid") or "sidechain"
        self.groups[obj.get("uuid")] = group
        if group not in self.children:
            n = len(self.children) + 1
            run = Run(run_id=self.ctx.run_id(f"sidechain-{n}"), format=self.format, source_path=str(self.ctx.path),
                      harness="claude-code", started_at=obj.get("timestamp"), parent_run_id=self.main.run.run_id,
                      model=self.main.run.model, metadata={"sidechain": True, "root_uuid": group})
            self.children[group] = RunBuilder(run)
        return self.children[group]

    def line(self, line: int, obj: dict) -> None:
        kind, main = obj.get("type"), self.main
        parent = obj.get("parentUuid")
        if obj.get("uuid"):
            self.uuids.add(obj["uuid"])
        # `summary` lines with a leafUuid are session titles (never sent to the model), wherever they sit
        if kind in TITLE_TYPES and (kind != "summary" or "leafUuid" in obj):
            titles = main.run.metadata.setdefault("titles", [])
            if (title := obj.get(TITLE_TYPES[kind])) and title not in titles:
                titles.append(title)
            return
        if kind == "summary":  # no leafUuid: a summary that stands in for earlier context
            main.add("summary", "user", str(obj.get("summary") or ""), line=line)
            return
        if kind in JOURNAL_TYPES and "agentId" in obj:
            main.run.metadata.setdefault("journal_agents", []).append(obj["agentId"])
            return
        if kind == "system" and obj.get("subtype") == "compact_boundary":
            self._boundary(self._builder(obj), obj, line)
            return
        if kind == "system" and obj.get("subtype") == "microcompact_boundary":
            _microcompact(self._builder(obj), obj, line)
            return
        if kind not in CONVERSATION and kind != "attachment":
            return
        b = self._builder(obj)
        if parent and parent not in self.uuids:  # a message the log lacks (e.g. a dropped notification)
            self.unlogged(b, line, "missing-parent")
        run = b.run
        if not run.started_at and obj.get("timestamp"):
            _set_run(b, started_at=obj["timestamp"])
        for key, field in (("sessionId", "session_id"), ("agentId", "agent_id"), ("cwd", "cwd"),
                           ("version", "cc_version")):
            if obj.get(key):
                run.metadata.setdefault(field, obj[key])
        ts = obj.get("timestamp")
        if kind == "attachment":
            if id(b) in self.held:
                self.held[id(b)].append((obj, line, ts))
            else:
                _attach(b, obj, line, ts)
            return
        if not obj.get("isCompactSummary"):
            self.flush_attachments(b)
        if kind == "assistant":
            self._assistant(b, obj.get("message") or {}, obj, line, ts)
        else:
            self._user(b, obj.get("message") or {}, obj, line, ts)

    def flush_attachments(self, b: RunBuilder) -> None:
        """Add the attachments held since a compact_boundary (after its summary, if one was logged)."""
        for obj, line, ts in self.held.pop(id(b), []):
            _attach(b, obj, line, ts)

    def _boundary(self, b: RunBuilder, obj: dict, line: int) -> None:
        """A compact_boundary line: everything logged so far leaves the prompt from the next request on."""
        self.flush_attachments(b)
        self.held[id(b)] = []
        meta = obj.get("compactMetadata") if isinstance(obj.get("compactMetadata"), dict) else {}
        raw = meta.get("trigger", obj.get("trigger"))
        pre = meta.get("preTokens")
        extra = {"trigger_logged": raw} if raw is not None and raw not in TRIGGERS else {}
        b.context_event("compaction", drop=_before(b, b.seq), trigger=raw if raw in TRIGGERS else None,
                        pre_tokens=pre if isinstance(pre, int) else None, line=line, **extra)

    def _assistant(self, b: RunBuilder, msg: dict, obj: dict, line: int, ts: str | None) -> None:
        if not isinstance(msg, dict):
            return
        rid = obj.get("requestId") or msg.get("id")
        model = msg.get("model")
        if model == SYNTHETIC:  # written by Claude Code, not the model: no request
            if not obj.get("isApiErrorMessage"):  # API-error notices are filtered out before each request
                self._content(b, msg, line, ts)
            return
        if model and not b.run.model:
            _set_run(b, model=model)
        u = msg.get("usage") if isinstance(msg.get("usage"), dict) else {}
        parts = [u.get(k) for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")]
        usage = {"input_tokens": parts[0], "cache_read": parts[1], "cache_write": parts[2],
                 "cache_write_1h": _write_1h(u), "output_tokens": u.get("output_tokens"),
                 "prompt_tokens": sum(p or 0 for p in parts) if any(p is not None for p in parts)
                 and all(p is None or type(p) in (int, float) for p in parts) else None}
        # a line with no id at all (an interrupted, partial reply) continues the current request
        if (rid and rid not in self.seen_requests) or (not rid and b.step == 0):
            if rid:
                self.seen_requests.add(rid)
            req = b.request(ts=ts, model=model, line=line, **usage)
            self.open_request[rid] = (b, len(b.records) - 1)
            _cache_writes(b, req.step, u)
        elif rid and rid in self.open_request and u:
            # a later line of the same response: its usage is the final one. Claude repeats the same figures on
            # every line; MiniMax's Anthropic-compatible endpoint logs the streaming start (uncached count, output
            # 0) first and the settled usage (cache read included) last, and only the last matches the prompt.
            owner, index = self.open_request[rid]
            usage = owner.checked_usage(usage, line)
            owner.records[index] = replace(owner.records[index], **usage)  # type: ignore[arg-type]
            _cache_writes(owner, owner.records[index].step, u)  # type: ignore[union-attr]
        self._content(b, msg, line, ts)

    @staticmethod
    def _content(b: RunBuilder, msg: dict, line: int, ts: str | None) -> None:
        content = msg.get("content")
        for block in content if isinstance(content, list) else [{"type": "text", "text": text_of(content)}]:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text" and block.get("text"):
                b.add("assistant_text", "assistant", block["text"], ts=ts, line=line)
            elif btype in ("thinking", "redacted_thinking"):
                text = block.get("thinking") or block.get("data") or ""
                b.add("reasoning", "assistant", text, ts=ts, line=line)
            elif btype in ("tool_use", "server_tool_use"):
                b.call(block.get("name") or "", block.get("input"), block.get("id"), ts=ts, line=line)
            elif btype and btype.endswith("tool_result"):
                b.result(text_of(block.get("content")), block.get("tool_use_id"), ts=ts, line=line, role="assistant")

    def _user(self, b: RunBuilder, msg: dict, obj: dict, line: int, ts: str | None) -> None:
        if not isinstance(msg, dict):
            return
        content = msg.get("content")
        if obj.get("isCompactSummary"):
            event = b.context_events[-1] if b.context_events else None
            if not (event and event["step"] == b.step and event["summary_seq"] is None):
                event = b.context_event("compaction", drop=_before(b, b.seq), line=line)  # 1.0.x: no boundary line
            event["summary_seq"] = b.add("summary", "user", text_of(content), ts=ts, line=line).seq
            self.flush_attachments(b)
            return
        blocks = content if isinstance(content, list) else [{"type": "text", "text": text_of(content)}]
        if any(isinstance(x, dict) and x.get("type") != "tool_result" for x in blocks) and not obj.get("isMeta"):
            b.new_turn()
        for block in blocks:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "tool_result":
                inner = block.get("content")
                b.result(text_of(inner), block.get("tool_use_id"), ts=ts, line=line,
                         is_error=bool(block.get("is_error")))
                parts = [p for p in inner if isinstance(p, dict)] if isinstance(inner, list) else []
                for part in parts:
                    if part.get("type") == "image":
                        self._image(b, part, line, ts)
                # ToolSearch: the server expands each reference into the tool's schema, which the log omits
                if refs := [p.get("tool_name") for p in parts if p.get("type") == "tool_reference"]:
                    self.unlogged(b, line, "tool-reference", tools=refs)
            elif btype == "image":
                self._image(b, block, line, ts)
            elif btype == "document":
                b.add("attachment", "user", text_of(block.get("source")) or block.get("title") or "", ts=ts, line=line)
            elif block.get("text"):
                b.add("user_text", "user", block["text"], ts=ts, line=line)

    @staticmethod
    def _image(b: RunBuilder, block: dict, line: int, ts: str | None) -> None:
        source = block.get("source") if isinstance(block.get("source"), dict) else {}
        b.add("image", "user", f"[image {source.get('media_type') or ''}]".replace(" ]", "]"), ts=ts, line=line)


READER = ClaudeCodeReader()
