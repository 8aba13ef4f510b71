"""mini-swe-agent trajectories (``*.traj.json``): ``{"info", "messages", "trajectory_format"}`` or,
in the old format, a bare list of ``{"role", "content"}`` messages. 1.0 to 1.3 write ``{"info", "messages"}`` with
no format marker (``trajectory_format`` from 1.4, ``info.mini_version`` from 1.5): such a file is known by its
``info.model_stats`` (``instance_cost``, ``api_calls``) beside a ``messages`` list; its messages are bare
``{"role", "content"}`` (no per-call usage before 1.12's ``extra.response``, no model name before 1.4's
``info.config``).

Request rule: one request per model call the messages record. Each assistant message is one call, with usage
from ``extra.response.usage`` when recorded (``replay.readers.mini_swe_agent_usage``). A response rejected as a
format error is not kept as an assistant message: from 2.0 the agent adds a user message with
``extra.interrupt_type == "FormatError"`` instead, and from 2.3.1 that message keeps the call's ``extra.response``
(from 2.4.6 its ``extra.cost``), so it is a request with that usage, made before the error text joins the
history. Before 2.3.1 such a message records no call: their number is ``run.metadata.format_error_calls`` (each
was one call, counted in ``info.model_stats.api_calls``, kept in ``run.metadata``).
Every message but the ``exit`` record is sent whole (2.x strips only ``extra``): no history processor.
Responses API models (2.x ``*ResponseModel``) keep the response object itself as the assistant message
(``"object": "response"``, its ``output`` items: reasoning, message, function_call) and each result as a
``function_call_output`` item with the call's ``call_id``.
Tool calls: ``extra.actions`` when present, else the message's ``tool_calls`` (or ``function_call`` output items),
else the ```bash (or ```mswea_bash_command) block in the content; tool name ``bash``, args ``{"command": ...}``.
A call written in the content (the text-based format: no ``tool_calls``) is sent once, in that text: the text
around its block is the assistant text and the block, as written, the call's arguments.
The ``tool`` message with the call's id, or in the text-based format the next user message, is the result.
Timestamps: ``extra.timestamp`` (2.x) or the message's own ``timestamp`` (1.17 on, 1.x).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from replay.model import BadRecord, Record, Run
from replay.readers.base import ReadContext, load_json_document, text_of
from replay.readers.builder import RunBuilder
from replay.readers.json_fields import sub_dict
from replay.readers.mini_swe_agent_usage import call_usage, settle

MARKERS = ('"mini_version":', '"agent_type": "minisweagent', '"trajectory_format": "mini-swe-agent')
# 1.0 to 1.3 (``run/utils/save.py`` ``save_traj``) wrote none of the markers: ``{"info": {"exit_status",
# "submission", "model_stats": {"instance_cost", "api_calls"}, ...}, "messages": [...]}`` (plus ``instance_id``)
V1_STATS_RE = re.compile(r'"model_stats"\s*:\s*\{\s*"instance_cost"\s*:[^{}]*"api_calls"\s*:[^{}]*\}')
V1_MESSAGES_RE = re.compile(r'"messages"\s*:\s*\[\s*(?:\]|\{\s*"role")')
BLOCK_RE = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n?```", re.S)


class MiniSweAgentReader:
    format = "mini-swe-agent"
    version = 3  # 2: 2.3.1+ format-error calls are requests; Responses API messages; cache writes; 1.x timestamps;
    # 3: a call written in the text (```bash block) is counted once, as written

    def sniff(self, head: str, path: Path) -> bool:
        start = head.lstrip()[:1]
        if start == "{":
            if any(key in head for key in MARKERS):
                return True
            return bool(V1_STATS_RE.search(head) and V1_MESSAGES_RE.search(head)) and '"trajectory"' not in head
        return start == "[" and '"role"' in head and "```mswea_bash_command" in head

    def read(self, ctx: ReadContext) -> Iterator[Record]:
        doc = load_json_document(ctx)
        if isinstance(doc, BadRecord):
            yield doc
            return
        messages = doc.get("messages") if isinstance(doc, dict) else doc
        if not isinstance(messages, list):
            yield BadRecord(1, "not a mini-swe-agent trajectory: expected a 'messages' list", str(doc)[:2000])
            return
        info = doc["info"] if isinstance(doc, dict) and isinstance(doc.get("info"), dict) else {}
        config = sub_dict(info, "config")
        model = ((config.get("model") or {}).get("model_name")) if isinstance(config.get("model"), dict) else None
        metadata = {
            "model_stats": info.get("model_stats"),
            "exit_status": info.get("exit_status"),
            "mini_version": info.get("mini_version"),
            "trajectory_format": doc.get("trajectory_format") if isinstance(doc, dict) else None,
            "instance_id": doc.get("instance_id") if isinstance(doc, dict) else None,
        }
        run = Run(
            run_id=ctx.run_id(),
            format=self.format,
            source_path=str(ctx.path),
            model=model,
            harness="mini-swe-agent",
            metadata={k: v for k, v in metadata.items() if v is not None},
        )
        builder = RunBuilder(run)
        yield from _Walk(builder).messages(messages)
        settle(builder.records, run.metadata)
        yield from builder


class _Walk:
    """The messages in order, onto one RunBuilder."""

    def __init__(self, builder: RunBuilder) -> None:
        self.b = builder
        self.pending: list[str] = []  # text-based format: calls waiting for the next user message
        self.unrecorded = 0  # format-error calls (2.0 to 2.3.0) whose response was not kept

    def messages(self, messages: list[Any]) -> Iterator[BadRecord]:
        for idx, msg in enumerate(messages):
            if isinstance(msg, dict) and msg.get("object") == "response":
                self.response(msg, idx)
            elif isinstance(msg, dict) and msg.get("type") == "function_call_output":
                ts = _ts(msg)
                self.b.result(text_of(msg.get("output")), _str(msg.get("call_id")), "bash", line=idx, ts=ts)
                self.pending = []
            elif not isinstance(msg, dict) or "role" not in msg:
                yield BadRecord(idx, "message without a role", str(msg)[:2000])
            else:
                self.message(msg, idx)
        if self.unrecorded:
            self.b.run.metadata["format_error_calls"] = self.unrecorded

    def message(self, msg: dict, idx: int) -> None:
        b, extra = self.b, sub_dict(msg, "extra")
        role, text, ts = msg["role"], text_of(msg.get("content")), _ts(msg)
        if role == "system":
            b.add("system", "system", text, line=idx)
        elif role == "assistant":
            b.request(line=idx, ts=ts, **call_usage(extra.get("response")))
            b.new_turn()
            actions = _actions(msg, extra, text)
            blocks = list(BLOCK_RE.finditer(text)) if not msg.get("tool_calls") else []
            if actions and len(blocks) == len(actions):  # the text-based format: the calls are in the text
                self.written(text, blocks, actions, idx, ts)
                return
            if text:
                b.add("assistant_text", "assistant", text, line=idx, ts=ts)
            self.calls(actions, idx, ts)
        elif role == "tool":
            b.result(text, msg.get("tool_call_id"), "bash", line=idx, ts=ts)
            self.pending = []
        elif role == "user" and self.pending and not extra.get("interrupt_type"):
            b.result(text, self.pending[0], "bash", role="user", line=idx, ts=ts)
            self.pending = []
        elif role == "exit":
            return  # the harness's final record (submission), never sent to the model
        else:
            if extra.get("interrupt_type") == "FormatError":
                self.format_error(extra, idx)
            b.add("user_text", "user", text, line=idx, ts=ts)
            self.pending = []

    def format_error(self, extra: dict, idx: int) -> None:
        """A rejected response: the call is a request when its response was kept (2.3.1 on), else only counted."""
        if "response" not in extra:
            self.unrecorded += 1
            return
        self.b.request(line=idx, **call_usage(extra["response"]))
        self.b.new_turn()

    def response(self, msg: dict, idx: int) -> None:
        """A Responses API response kept as the assistant message: its output items in order."""
        b, extra, ts = self.b, sub_dict(msg, "extra"), _ts(msg)
        b.request(line=idx, ts=ts, **call_usage(msg))
        b.new_turn()
        calls: list[tuple[str, str | None]] = []
        for item in msg.get("output") or []:
            kind = item.get("type") if isinstance(item, dict) else None
            if kind == "reasoning":
                if summary := text_of(item.get("summary")):
                    b.add("reasoning", "assistant", summary, line=idx, ts=ts)
            elif kind == "message":
                if text := text_of(item.get("content")):
                    b.add("assistant_text", "assistant", text, line=idx, ts=ts)
            elif kind == "function_call" and isinstance(item, dict):
                calls.append((_command(item.get("arguments")), _str(item.get("call_id")) or _str(item.get("id"))))
        actions = extra.get("actions")
        self.calls(_listed(actions) if isinstance(actions, list) and actions else calls, idx, ts)

    def calls(
        self, actions: list[tuple[str, str | None]], idx: int, ts: str | None, written: list[str] | None = None
    ) -> None:
        """The message's bash calls; ``written``: each as the model wrote it in its text (sent as such, once)."""
        self.pending = []
        for n, (command, call_id) in enumerate(actions):
            call_id = call_id or f"msg-{idx}-{n}"
            item = self.b.call("bash", {"command": command}, call_id, line=idx, ts=ts)
            if written is not None:
                self.b.records[-1] = replace(item, args=written[n])
            self.pending.append(call_id)

    def written(
        self, text: str, blocks: list[re.Match[str]], actions: list[tuple[str, str | None]], idx: int, ts: str | None
    ) -> None:
        """An assistant message whose calls are its ```bash blocks (the text-based format): the text around them
        as assistant text, each block as its call's arguments as written, so the message is counted once."""
        pos = 0
        for block in blocks:
            if lead := text[pos : block.start()].strip():
                self.b.add("assistant_text", "assistant", lead, line=idx, ts=ts)
            pos = block.end()
        self.calls(actions, idx, ts, [m.group(0) for m in blocks])
        if tail := text[pos:].strip():
            self.b.add("assistant_text", "assistant", tail, line=idx, ts=ts)


def _actions(msg: dict, extra: dict, text: str) -> list[tuple[str, str | None]]:
    actions = extra.get("actions")
    if isinstance(actions, list) and actions:
        return _listed(actions)
    calls: list[tuple[str, str | None]] = []
    for call in msg.get("tool_calls") or []:
        fn = call.get("function") or {}
        calls.append((_command(fn.get("arguments")), call.get("id")))
    if calls:
        return calls
    blocks: list[tuple[str, str | None]] = [(m.group(1).strip(), None) for m in BLOCK_RE.finditer(text)]
    return blocks if len(blocks) == 1 else []  # the harness runs exactly one block; else a format error, no call


def _listed(actions: list[Any]) -> list[tuple[str, str | None]]:
    """``extra.actions`` as (command, tool call id)."""
    return [(str(a.get("command", "")), a.get("tool_call_id")) for a in actions if isinstance(a, dict)]


def _command(arguments: Any) -> str:
    """The command of a bash call's JSON arguments (the arguments as written when they are not JSON)."""
    try:
        args = json.loads(arguments or "{}")
    except (TypeError, ValueError):
        args = {"command": arguments}
    return str(args.get("command", "")) if isinstance(args, dict) else str(args)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _ts(msg: dict) -> str | None:
    """When the message was added: ``extra.timestamp`` (2.x), else the message's ``timestamp`` (1.17 on, 1.x)."""
    value = sub_dict(msg, "extra").get("timestamp")
    if value is None:
        value = msg.get("timestamp")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return datetime.fromtimestamp(value, UTC).isoformat()
    return value if isinstance(value, str) else None


READER = MiniSweAgentReader()
