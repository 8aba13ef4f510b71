"""Codex TUI session log (CODEX_TUI_RECORD_SESSION): ``{"ts", "dir", "kind", ...}`` records.

``codex_event`` records wrap protocol events: agent_reasoning / agent_message (full texts; the
*_delta events are skipped), exec_command_begin/end and patch_apply_begin/end (tool calls and
results; a command's result is what the model was sent, ``exec_model_text``) and token_count (one model request
each). The user's prompts are not in this log. A
``session_configured`` event after the first (e.g. after ``/new``) starts a new run.

token_count changed shape in codex-rs: the TUI-log era's flat usage (``input_tokens`` ... at the top), later a
``TokenCountEvent`` (``info``: cumulative ``total_token_usage``, the call's ``last_token_usage``,
``model_context_window``; ``rate_limits``), sent again unchanged for rate-limit updates. A request is then an
``info`` whose total moved, as in the rollout reader. Later codex-rs TUIs log only UI events and ops (no
``codex_event``): such a log holds no model call, and the reader says so instead of yielding an empty run.
A ``thread_rolled_back`` event is read as in the rollout reader, each turn starting at its task_started.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

from replay.model import BadRecord, Item, Record, Run
from replay.readers.base import ReadContext, iter_json_lines
from replay.readers.builder import RunBuilder
from replay.readers.codex_history import TURN, History
from replay.readers.codex_rollout import Deferred, note_window, openai_usage, rollback, sniff_json_lines, window_filled
from replay.readers.json_fields import sub_dict

TUI_KINDS = {"session_start", "codex_event", "app_event", "key_event", "insert_history", "log_line", "op"}
NO_EVENTS = (
    "a Codex TUI session log without codex_event records: this codex-rs TUI logs only UI events and ops, no model"
    " call or usage; read the session's rollout file (~/.codex/sessions/**/rollout-*.jsonl) instead"
)


def flat_token_count(msg: dict, last_total: Any) -> dict | None:
    """A token_count as the flat usage ``_event`` reads, or None when it is no new model call. A
    ``TokenCountEvent`` (``info``/``rate_limits``) is a call when its cumulative total moved and it is not the
    context-window-exceeded marker; the call's usage is its ``last_token_usage``."""
    if "info" not in msg and "rate_limits" not in msg:
        return msg  # the TUI-log era's flat shape: every token_count is a call
    info = msg.get("info")
    if not isinstance(info, dict) or not isinstance(info.get("last_token_usage"), dict) or window_filled(info):
        return None
    if info.get("total_token_usage") == last_total:
        return None
    return {"type": "token_count", **info["last_token_usage"]}


class CodexTuiReader:
    format = "codex-tui"
    version = 3  # 2: TokenCountEvent-shaped token_counts; a log with no protocol event is reported; 3: rollbacks

    def sniff(self, head: str, path: Path) -> bool:
        return sniff_json_lines(head, lambda o: {"ts", "dir", "kind"} <= o.keys() and o.get("kind") in TUI_KINDS)

    def read(self, ctx: ReadContext) -> Iterator[Record]:
        runs: list[RunBuilder] = []
        d: Deferred | None = None
        start: dict[str, Any] = {}
        last_total: Any = None  # the run's latest cumulative usage (TokenCountEvent)
        live = History()  # what Codex's history holds, for a thread rollback
        first_line: tuple[int, str] | None = None
        for entry in iter_json_lines(ctx):
            if isinstance(entry, BadRecord):
                yield entry
                continue
            line, obj = entry
            if not isinstance(obj, dict):
                continue
            first_line = first_line or (line, json.dumps(obj, ensure_ascii=False)[:200])
            if obj.get("kind") == "session_start":
                start = {k: obj[k] for k in ("cwd", "model", "model_provider_id") if k in obj}
                start["started_at"] = obj.get("ts")
                continue
            payload = obj.get("payload") if obj.get("kind") == "codex_event" else None
            msg = payload.get("msg") if isinstance(payload, dict) else None
            if not isinstance(msg, dict):
                continue
            t, ts = msg.get("type"), obj.get("ts")
            if t == "session_configured" or d is None:
                if d is not None:
                    d.flush()
                meta = {k: v for k, v in {**start, **msg}.items() if k not in ("type", "started_at", "model")}
                run = Run(
                    run_id=ctx.run_id(len(runs) or None),
                    format=self.format,
                    source_path=str(ctx.path),
                    model=msg.get("model") or start.get("model"),
                    harness="codex-tui",
                    started_at=ts,
                    metadata=meta,
                )
                runs.append(RunBuilder(run))
                d = Deferred(runs[-1])
                last_total, live = None, History()
                if t == "session_configured":
                    continue
            if t == "token_count":
                flat = flat_token_count(msg, last_total)
                info = msg.get("info")
                if isinstance(info, dict):
                    last_total = info.get("total_token_usage", last_total)
                    note_window(d.b, info.get("model_context_window"), line)
                if flat is None:
                    continue
                msg = flat
            if t == "thread_rolled_back":
                d.input(partial(tui_rollback, d.b, live, msg.get("num_turns"), line))
                continue
            self._event(d, t, msg, line, ts)
        if d is None and first_line is not None:
            yield BadRecord(first_line[0], NO_EVENTS, first_line[1])
        if d is not None:
            d.flush()
        for b in runs:
            yield from b

    @staticmethod
    def _event(d: Deferred, t: str | None, msg: dict, line: int, ts: str | None) -> None:
        b = d.b
        at: dict[str, Any] = {"ts": ts, "line": line}
        if t == "token_count":
            reasoning = msg.get("reasoning_output_tokens")
            d.request(
                reasoning if isinstance(reasoning, int) else None,
                ts=ts,
                line=line,
                model=b.run.model,
                **openai_usage(msg),
            )
        elif t == "agent_reasoning" and msg.get("text"):
            # the text is a summary; the server keeps the full (encrypted) reasoning, sized by the request
            d.output(lambda: d.encrypted_reasoning(b.add("reasoning", "assistant", msg["text"], **at).seq))
        elif t == "agent_message" and msg.get("message"):
            d.output(lambda: b.add("assistant_text", "assistant", msg["message"], **at))
        elif t == "exec_command_begin":
            args = {"command": msg.get("command"), "workdir": msg.get("cwd")}
            d.output(lambda: b.call("exec_command", args, msg.get("call_id"), **at))
        elif t == "patch_apply_begin":
            changes = sub_dict(msg, "changes")
            args = {"file_path": next(iter(changes), None), "changes": changes}
            d.output(lambda: b.call("apply_patch", args, msg.get("call_id"), **at))
        elif t in ("exec_command_end", "patch_apply_end"):
            text = exec_model_text(msg) if t == "exec_command_end" else _joined(msg)
            failed = msg.get("exit_code") not in (0, None) or msg.get("success") is False
            d.after_output(lambda: b.result(text, msg.get("call_id"), is_error=failed, **at))
        elif t == "task_started":
            b.new_turn()


def tui_rollback(b: RunBuilder, live: History, turns: Any, line: int) -> None:
    """A ``thread_rolled_back`` event (``codex_rollout.rollback``); the log holds no user prompt, so each turn
    starts at its task_started: its first item is the boundary."""
    last = 0
    for rec in b.records:
        if isinstance(rec, Item) and rec.turn != last:
            live.mark(rec.seq, rec.seq + 1, TURN)
            last = rec.turn
    rollback(b, live, turns, line)


def _joined(msg: dict) -> str:
    return "\n".join(s for s in (msg.get("stdout"), msg.get("stderr")) if isinstance(s, str) and s)


def exec_model_text(msg: dict) -> str:
    """What the model was sent for a command: the event's ``formatted_output`` or ``aggregated_output`` when it has
    one (later codex-rs), else what format_exec_output of the TUI-log era (codex-rs, August 2025) serialised: JSON
    ``{"output": .., "metadata": {"exit_code": .., "duration_seconds": ..}}`` whose output is stdout when the
    command exited 0 and stderr otherwise (a successful ``cargo clippy`` writes to stderr: the model saw no output).
    """
    for key in ("formatted_output", "aggregated_output"):
        if isinstance(msg.get(key), str):
            return msg[key]
    code = msg.get("exit_code")
    stream = msg.get("stdout") if code == 0 else msg.get("stderr")
    given = msg.get("duration")
    duration = given if isinstance(given, dict) else {}
    secs = float(duration.get("secs") or 0) + float(duration.get("nanos") or 0) / 1e9
    payload = {
        "output": stream if isinstance(stream, str) else "",
        "metadata": {"exit_code": code if isinstance(code, int) else -1, "duration_seconds": round(secs * 10) / 10},
    }
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


READER = CodexTuiReader()
