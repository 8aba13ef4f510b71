"""OpenHands event streams: a JSON array of events, or JSONL with one instance per line holding
``history`` (eval output, resolver output); each line becomes its own run. Eval output of 0.6 (OpenDevin) to
0.9.x writes ``history`` as ``[action, observation]`` pairs (``evaluation/swe_bench/run_infer.py``; 0.8 on
through ``compatibility_for_eval_history_pairs`` in ``openhands/memory/history.py``; an action with no
observation gets a ``null`` one, an observation with no action a ``null`` action): each pair is read as its two
events, in order (``runs.metadata.history_pairs``). From 0.10 the history is the flat event list. A V0
conversation folder (``sessions/<id>/events/<n>.json``, one event per file: ``replay.readers.openhands_session``)
is one run.

Actions: ``message`` -> user/assistant text, ``system`` -> system (+ tool_defs), ``think`` -> reasoning,
``finish`` -> assistant_text; every other agent action (run, run_ipython, read, edit, write, browse...)
-> tool_call named after the action, with the arguments of the model's own call in
``tool_call_metadata.model_response`` (what CodeActAgent sends back as the assistant message; the event's ``args``
when the response is not recorded). Observations -> tool_result linked by ``tool_call_metadata.tool_call_id`` or
``cause`` (old streams without either: the latest call), with the text the agent sends the model: for an edit
made through the ACI editor (``impl_source`` ``oh_aci``) that is ``extras.formatted_output_and_error``, not the diff
kept in ``content`` for display.

Placeholders: observations clipped where they were produced ("<response clipped><NOTE>...") are noted as
placeholder events (origin "clip") for the request that first sends them.

Condensation: a recorded ``CondensationAction`` (action "condensation") is the condenser's work, not a model request
nor a tool call: it becomes a context event (``runs.metadata.context_events``) dropping the items of the forgotten
events (``forgotten_event_ids``, or ``forgotten_events_start_id``..``forgotten_events_end_id`` inclusive) from the
next request on, with its ``summary`` (if any) as a ``summary`` item; OpenHands shows only the latest summary, at
``summary_offset`` in the kept events (kept in the event), so a new summary also drops the previous one.

Request rule: one request per distinct ``tool_call_metadata.model_response.id`` (the observation and
any parallel calls repeat the same response), with its ``usage``; an agent action without that
metadata (e.g. a final message, or old streams that never record it) counts as one request itself, with the
usage its ``llm_metrics.token_usages`` gives where 0.29 to 0.32 kept the latest call's there (``_latest_usage``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from replay.model import BadRecord, Record, Run
from replay.readers.base import ReadContext, is_json_document, iter_json_lines, load_json_document, text_of
from replay.readers.builder import RunBuilder, seq_ranges
from replay.readers.json_fields import sub_dict, sub_list
from replay.readers.openhands_session import conversation_folder, event_files, events_dir, load_events

EVENT_RE = re.compile(r'"(?:observation|llm_metrics|tool_call_metadata)":\s*["{]')
SKIP_ACTIONS = {"recall", "change_agent_state", "null"}
SKIP_OBSERVATIONS = {"agent_state_changed", "null", "recall"}
NOISE_ARGS = {
    "thought",
    "is_confirmed",
    "confirmation_state",
    "security_risk",
    "hidden",
    "blocking",
    "keep_prompt",
    "action_risk",
    "impl_source",
    "kernel_init_code",
    "include_extra",
    "is_input",
    "wait_for_response",
}


class OpenHandsReader:
    format = "openhands"
    version = 2  # 2: 0.9.x eval output's [action, observation] pairs are events (were quarantined); sessions

    def sniff(self, head: str, path: Path) -> bool:
        start = head.lstrip()[:1]
        if start == "[":
            return '"action":' in head and ('"observation":' in head or '"source":' in head)
        jsonl = start == "{" or "\n{" in head  # a damaged first line must not hide the rest
        return jsonl and '"history"' in head and '"trajectory"' not in head and bool(EVENT_RE.search(head))

    def members(self, path: Path) -> list[Path] | None:
        events = events_dir(path)
        return event_files(events) if events is not None else None

    def read(self, ctx: ReadContext) -> Iterator[Record]:
        if ctx.path.is_dir():
            events = events_dir(ctx.path)
            files = event_files(events) if events is not None else []
            loaded: list[Any] = []
            for entry in load_events(files):
                if isinstance(entry, BadRecord):
                    yield entry
                else:
                    loaded.append(entry[1])
            run_id = replace(ctx, path=conversation_folder(ctx.path)).run_id()
            yield from self._run(ctx, run_id, loaded, {"session_events": len(loaded)})
            return
        if is_json_document(ctx.path):
            doc = load_json_document(ctx)
            if isinstance(doc, BadRecord) or not isinstance(doc, list):
                yield doc if isinstance(doc, BadRecord) else BadRecord(1, "expected a JSON array of events", "")
                return
            yield from self._run(ctx, ctx.run_id(), doc, {})
            return
        for entry in iter_json_lines(ctx):
            if isinstance(entry, BadRecord):
                yield entry
                continue
            line, obj = entry
            if not isinstance(obj, dict) or not isinstance(obj.get("history"), list):
                yield BadRecord(line, "OpenHands output line without a 'history' list of events", str(obj)[:2000])
                continue
            suffix = obj.get("instance_id") or (obj.get("issue") or {}).get("number") or line
            meta = {
                "line": line,
                "instance_id": obj.get("instance_id"),
                "metrics": _metrics(obj.get("metrics")),
                "error": obj.get("error"),
            }
            history, paired = _unpaired(obj["history"])
            if paired:
                meta["history_pairs"] = True
            yield from self._run(ctx, ctx.run_id(suffix), history, meta, line)

    def _run(
        self, ctx: ReadContext, run_id: str, events: list[Any], meta: dict, line: int | None = None
    ) -> Iterator[Record]:
        model = next(
            (
                e["tool_call_metadata"]["model_response"].get("model")
                for e in events
                if isinstance(e, dict) and isinstance((e.get("tool_call_metadata") or {}).get("model_response"), dict)
            ),
            None,
        )
        run = Run(
            run_id=run_id,
            format=self.format,
            source_path=str(ctx.path),
            model=model,
            harness="openhands",
            started_at=next((e.get("timestamp") for e in events if isinstance(e, dict)), None),
            metadata={k: v for k, v in meta.items() if v is not None},
        )
        builder = RunBuilder(run)
        state = _State()
        for idx, event in enumerate(events):
            if not isinstance(event, dict):
                yield BadRecord(line or idx, f"event {idx} is not an object", str(event)[:2000])
                continue
            first = builder.seq
            if "observation" in event:
                state.observation(builder, event, line or idx)
            elif event.get("action") == "condensation":
                if bad := state.condensation(builder, event, line or idx):
                    yield bad
            elif "action" in event:
                state.action(builder, event, line or idx)
            if "id" in event and builder.seq > first and event.get("action") != "condensation":
                state.seqs.setdefault(event["id"], []).extend(range(first, builder.seq))
        builder.scan_clips()
        yield from builder


class _State:
    """Per-run linking state: responses already counted, pending calls, whether the agent has acted."""

    def __init__(self) -> None:
        self.responses: set[str] = set()
        self.calls: dict[Any, str] = {}  # event id -> call id
        self.last_call: str | None = None
        self.agent_started = False
        self.seqs: dict[Any, list[int]] = {}  # event id -> seqs of the items it produced
        self.summary_seq: int | None = None  # the summary OpenHands currently shows

    def condensation(self, b: RunBuilder, ev: dict, line: int) -> BadRecord | None:
        """A CondensationAction: the forgotten events' items leave the prompt from the next request on."""
        args = sub_dict(ev, "args")
        ids = args.get("forgotten_event_ids")
        start, end = args.get("forgotten_events_start_id"), args.get("forgotten_events_end_id")
        if ids is None and isinstance(start, int) and isinstance(end, int):
            ids = range(start, end + 1)
        elif not isinstance(ids, list):
            return BadRecord(
                line,
                "condensation action without forgotten_event_ids or a forgotten_events_start_id.."
                "end_id range: what it forgot is unknown (damaged log or a newer format)",
                str(ev)[:2000],
            )
        drop = [s for i in ids for s in self.seqs.get(i, [])]
        summary, summary_seq = args.get("summary"), None
        if isinstance(summary, str):
            if self.summary_seq is not None:
                drop.append(self.summary_seq)
            summary_seq = self.summary_seq = b.add("summary", "user", summary, line=line, ts=ev.get("timestamp")).seq
        offset = args.get("summary_offset")
        extra: dict[str, Any] = {"summary_offset": offset} if isinstance(offset, int) else {}
        b.context_event("condensation", drop=seq_ranges(drop), summary_seq=summary_seq, line=line, **extra)
        return None

    def action(self, b: RunBuilder, ev: dict, line: int) -> None:
        action, args = ev["action"], ev["args"] if isinstance(ev.get("args"), dict) else ev
        source = ev.get("source") or ("user" if action == "message" and not self.agent_started else "agent")
        ts = ev.get("timestamp")
        if action in SKIP_ACTIONS or source == "environment":
            return
        if source == "user":
            b.new_turn()
            b.add("user_text", "user", text_of(args.get("content")) or ev.get("message", ""), line=line, ts=ts)
            return
        if action == "system":
            b.add("system", "system", text_of(args.get("content")), line=line, ts=ts)
            if args.get("tools"):
                b.add("tool_defs", "system", json.dumps(args["tools"], ensure_ascii=False), line=line, ts=ts)
            return
        self.agent_started = True
        tcm = sub_dict(ev, "tool_call_metadata")
        response = sub_dict(tcm, "model_response")
        latest = {} if response else _latest_usage(ev)
        response_id = response.get("id") or latest.get("response_id")
        if not response_id or response_id not in self.responses:
            self.responses.add(response_id or "")
            b.request(line=line, ts=ts, **(_usage(response) if response else _token_usage(latest)))
        thought = text_of(args.get("thought"))
        if action == "message":
            text = text_of(args.get("content")) or ev.get("message", "")
            b.add("assistant_text", "assistant", text, line=line, ts=ts)
        elif action == "think":
            b.add("reasoning", "assistant", thought, line=line, ts=ts, call_id=tcm.get("tool_call_id"))
        elif action == "finish":
            text = args.get("final_thought") or args.get("message") or thought or text_of(args.get("outputs"))
            b.add("assistant_text", "assistant", text_of(text), line=line, ts=ts)
        else:
            if thought:
                b.add("assistant_text", "assistant", thought, line=line, ts=ts)
            call_id = tcm.get("tool_call_id") or f"event-{ev.get('id', line)}-{b.seq}"
            call_args = _model_arguments(response, tcm.get("tool_call_id"))
            if call_args is None:
                call_args = {k: v for k, v in args.items() if k not in NOISE_ARGS and k != "action"}
            b.call(action, call_args, call_id, line=line, ts=ts)
            self.calls[ev.get("id")] = self.last_call = call_id

    def observation(self, b: RunBuilder, ev: dict, line: int) -> None:
        kind, ts = ev["observation"], ev.get("timestamp")
        text = text_of(ev.get("content"))
        extras = sub_dict(ev, "extras")
        if (
            kind == "edit"
            and extras.get("impl_source") == "oh_aci"
            and isinstance(extras.get("formatted_output_and_error"), str)
        ):
            text = extras["formatted_output_and_error"]  # what FileEditObservation sends for ACI edits
        if kind in SKIP_OBSERVATIONS:
            if kind == "recall" and text:
                b.add("attachment", "user", text, line=line, ts=ts)
            return
        tcm = sub_dict(ev, "tool_call_metadata")
        call_id = (
            tcm.get("tool_call_id")
            or self.calls.get(ev.get("cause"))
            or (self.last_call if "cause" not in ev else None)
        )
        is_error = kind == "error" or ev.get("success") is False
        if call_id or kind != "error":
            b.result(text, call_id, kind, line=line, ts=ts, is_error=is_error)
        else:
            b.add("user_text", "user", text, line=line, ts=ts, is_error=True)
        self.last_call = None


def _unpaired(history: list[Any]) -> tuple[list[Any], bool]:
    """The events of a history, and whether it was written as ``[action, observation]`` pairs (0.9.x and older):
    a pair is its action then its observation. Anything else is left as it is (a bad entry stays one)."""
    if not any(_is_pair(e) for e in history):
        return history, False
    events: list[Any] = []
    for entry in history:
        events.extend(entry if _is_pair(entry) else [entry])
    return events, True


def _is_pair(entry: Any) -> bool:
    return (
        isinstance(entry, list)
        and len(entry) == 2
        and isinstance(entry[0], dict)
        and "action" in entry[0]
        and isinstance(entry[1], dict)
        and "observation" in entry[1]
    )


def _model_arguments(response: dict, call_id: Any) -> Any:
    """The arguments of call ``call_id`` as the model wrote them in ``response`` (parsed when JSON), or None when
    the response does not hold that call."""
    choices = sub_list(response, "choices")
    message = choices[0].get("message") if choices and isinstance(choices[0], dict) else None
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    for call in calls if isinstance(calls, list) and call_id else []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict) and call.get("id") == call_id and isinstance(function.get("arguments"), str):
            try:
                return json.loads(function["arguments"])
            except ValueError:
                return function["arguments"]
    return None


def _usage(response: dict) -> dict[str, Any]:
    usage = response["usage"] if isinstance(response.get("usage"), dict) else None
    if not usage:
        return {}
    prompt = usage.get("prompt_tokens")
    details = sub_dict(usage, "prompt_tokens_details")
    cache_read = details.get("cached_tokens") or usage.get("cache_read_input_tokens") or 0
    cache_write = usage.get("cache_creation_input_tokens") or 0
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (cache_read, cache_write))
    fresh = max(prompt - cache_read - cache_write, 0) if isinstance(prompt, int) and numbers else None
    return {
        "prompt_tokens": prompt,
        "input_tokens": fresh,
        "cache_read": cache_read,
        "cache_write": cache_write,
        "output_tokens": usage.get("completion_tokens"),
        "model": response.get("model"),
    }


def _latest_usage(ev: dict) -> dict[str, Any]:
    """The call's usage an agent event with no model response carries in ``llm_metrics``: 0.29 to 0.32
    (``AgentController._prepare_metrics_for_frontend``) keep the agent LLM's latest ``TokenUsage`` there
    (``prompt_tokens``, ``completion_tokens``, ``cache_read_tokens``, ``cache_write_tokens``, ``response_id``); from
    0.33 only the accumulated usage, which is no single call's. Empty when there is none."""
    usages = sub_list(sub_dict(ev, "llm_metrics"), "token_usages")
    last = usages[-1] if usages else None
    return last if isinstance(last, dict) and isinstance(last.get("prompt_tokens"), int) else {}


def _token_usage(usage: dict[str, Any]) -> dict[str, Any]:
    """Request fields of an OpenHands ``TokenUsage`` (LiteLLM's prompt_tokens, cache reads and writes inside it)."""
    if not usage:
        return {}
    prompt, read, write = usage["prompt_tokens"], usage.get("cache_read_tokens") or 0, usage.get("cache_write_tokens")
    numbers = all(isinstance(v, int) and not isinstance(v, bool) for v in (read, write or 0))
    return {
        "prompt_tokens": prompt,
        "input_tokens": max(prompt - read - (write or 0), 0) if numbers else None,
        "cache_read": read,
        "cache_write": write or 0,
        "output_tokens": usage.get("completion_tokens"),
    }


def _metrics(metrics: Any) -> dict[str, Any] | None:
    """Aggregate metrics only (per-call lists are summarised as counts)."""
    if not isinstance(metrics, dict):
        return None
    out = {k: v for k, v in metrics.items() if not isinstance(v, list)}
    out.update({f"n_{k}": len(v) for k, v in metrics.items() if isinstance(v, list)})
    return out


READER = OpenHandsReader()
