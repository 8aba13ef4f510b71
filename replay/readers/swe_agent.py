"""SWE-agent ``.traj`` trajectories: the 1.x format and the legacy 0.x format.

Items come from ``history`` (the full conversation): the system prompt, demonstrations and the
instance template become system/user items; each assistant entry is what the model wrote, as SWE-agent sends it
back: its ``content``. With function calling (``tool_calls`` in the entry) the content is assistant_text and each
call is a tool_call with the model's own name and arguments. Otherwise the content is the thought followed by the
action written in the model's format (a fenced block, ``<function=...>`` XML): the thought is assistant_text and
the rest, verbatim, is the tool_call's ``args`` (tool name = the command's first word; resource and access are
classified from the parsed ``action``), so the item payloads add up to the content. The following observation is
its tool_result. Text is kept verbatim, so placeholders such as "Old environment output: (N lines omitted)" stay
visible wherever the log stores them.

Placeholders: the history keeps every observation whole, but 1.x trajectories also record, per step, the
messages the model was sent after SWE-agent's history processors (``trajectory[i].messages``, the prompt of
request i+1; newer versions: ``trajectory[i].query``, the prompt of request i). Where a sent message differs
from its history entry (e.g. "Old environment output: (N lines omitted)" from last_n_observations), the
builder notes a placeholder for that request and item; clip markers inside observations are noted too.

Request rule: one request per trajectory step, each one model call (``replay.readers.swe_agent_steps``): each
accepted assistant entry of the history, and before it each response SWE-agent rejected and re-asked (1.0 on: in the
trajectory, not in the history; ``run.metadata.requeried_calls``). 0.x (``sweagent/agent/agents.py``
``check_format_and_requery``, ``retry_after_format_fail``, ``retry_after_blocklist_fail``) re-asks from a temporary
history and logs the call nowhere but in ``info.model_stats.api_calls``: the calls beyond the history's replies are
``run.metadata.unlogged_calls``, with a warning (where they fell and what they sent is not in the file). The
re-ask's own prompt also held the rejected output and the error message, which the history does not keep.
Demonstration entries (``is_demo``, ``put_demos_in_history``) are prompt text, never calls or results. A replayed
demonstration whose ``info.model_stats.api_calls`` is 0 made no model calls, so it gets no requests. ``.traj`` files
have no per-call usage: ``model_stats`` goes into ``run.metadata`` only. 0.x names no model: the run folder
``run.py`` wrote it in does (``swe_agent_run_name``).

A call that got no reply is no request: when the context window is exceeded (SWE-agent's own count before the call,
or the server's refusal) or the API retries run out, SWE-agent ends the run with an assistant entry it writes itself
(0.x ``forward_with_error_check``, 1.x ``handle_error_with_autosubmission``: thought and content "Exit due to context
window", "Exit due to retry error: ..."; exit status ``exit_context``/``exit_api``), and ``model_stats`` never
counted the call (``_update_stats`` runs only on a reply). Other exits (cost limit, command timeouts, environment
errors) come after a call that was made and counted, whose reply the entry replaces: still a request.

A ``RetryAgent`` run (``agent.type: retry``) keeps each attempt under ``attempts`` (and a copy of the chosen one,
with the totals of every attempt and of the reviewer, at the top level): each attempt is a run of its own
(``<run>/attempt-N``), the totals and the choice in ``run.metadata.retry_loop``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from replay.model import BadRecord, Item, Record, Run
from replay.readers.base import ReadContext, load_json_document, text_of
from replay.readers.builder import RunBuilder
from replay.readers.json_fields import sub_dict
from replay.readers.swe_agent_run_name import run_name_model
from replay.readers.swe_agent_steps import StepPlan, plan_steps, prompts
from replay.readers.tool_targets import normalise_path

OPEN_FILE_RE = re.compile(r"\(Open file: ([^)\n]+)\)\s*(?:\n|$)")
FILE_CONTEXT_TOOLS = {"edit", "insert", "goto", "scroll_up", "scroll_down"}
TRAJECTORY_RE = re.compile(r'"trajectory"\s*:\s*\[')
STAT_KEYS = ("tokens_sent", "tokens_received", "api_calls", "instance_cost", "total_cost")
LOOP_KEYS = ("best_attempt_idx", "model_stats", "rloop_model_stats")
# exit status -> the start of the assistant entry SWE-agent writes when that call got no reply (0.x writes the retry
# error's content in lower case)
NO_REPLY_EXITS = {
    "exit_context": ("Exit due to context window",),
    "exit_api": ("Exit due to retry error", "exit due to"),
}


class SweAgentReader:
    format = "swe-agent"
    version = 4  # 2: re-asked responses are requests, demonstrations are not; RetryAgent attempts; swe_agent_version
    # 3: 0.x calls re-asked without a log entry are counted (unlogged_calls); 0.x model from the run folder
    # 4: the exit entry after a call with no reply (exit_context, exit_api) is no request

    def sniff(self, head: str, path: Path) -> bool:
        if not head.lstrip().startswith("{") or not TRAJECTORY_RE.search(head):
            return False
        return any(key in head for key in ('"action"', '"observation"', '"history"', '"model_stats"'))

    def read(self, ctx: ReadContext) -> Iterator[Record]:
        doc = load_json_document(ctx)
        if isinstance(doc, BadRecord):
            yield doc
            return
        attempts = doc.get("attempts") if isinstance(doc, dict) else None
        if isinstance(attempts, list) and attempts:
            loop = {k: v for k, v in sub_dict(doc, "info").items() if k in LOOP_KEYS}
            for n, attempt in enumerate(attempts):
                yield from self._attempt(ctx, attempt, ctx.run_id(f"attempt-{n}"), {"attempt": n, "retry_loop": loop})
            return
        yield from self._attempt(ctx, doc, ctx.run_id(), {})

    def _attempt(self, ctx: ReadContext, doc: Any, run_id: str, extra: dict[str, Any]) -> Iterator[Record]:
        """One agent's trajectory (the file, or one attempt of a RetryAgent's)."""
        if not isinstance(doc, dict) or not isinstance(doc.get("history"), list):
            yield BadRecord(1, "not a SWE-agent trajectory: expected an object with a 'history' list", str(doc)[:2000])
            return
        info = sub_dict(doc, "info")
        stats = sub_dict(info, "model_stats")
        config = _config(doc.get("replay_config"))
        metadata = {
            "model_stats": {k: stats[k] for k in STAT_KEYS if k in stats},
            "exit_status": info.get("exit_status"),
            "n_steps": len(doc.get("trajectory") or []),
            "legacy_format": "replay_config" not in doc,
        }
        if isinstance(info.get("swe_agent_version"), str):
            metadata["swe_agent_version"] = info["swe_agent_version"]
        plan = plan_steps(doc["history"], doc.get("trajectory"))
        if plan is not None and plan.rejected:
            metadata["requeried_calls"] = len(plan.rejected)
        no_reply = no_reply_exit(doc["history"], info.get("exit_status"))
        if no_reply is not None:
            metadata["no_reply_exit"] = {"line": no_reply, "exit_status": info.get("exit_status")}
        model = ((config.get("agent") or {}).get("model") or {}).get("name")
        if model is None and metadata["legacy_format"] and (named := run_name_model(ctx.path)):
            model, metadata["model_from"] = named, "run folder name"  # 0.x logs no model: run.py's folder names it
        run = Run(
            run_id=run_id,
            format=self.format,
            source_path=str(ctx.path),
            model=model,
            harness="swe-agent",
            metadata=metadata | extra,
        )
        builder = RunBuilder(run)
        self._walk(builder, doc["history"], stats.get("api_calls") != 0, plan, no_reply)
        if metadata["legacy_format"]:
            _unlogged_calls(builder, stats.get("api_calls"))
        _placeholders(builder, doc["history"], doc.get("trajectory"), plan)
        builder.scan_clips()
        yield from builder

    def _walk(
        self,
        builder: RunBuilder,
        history: list[Any],
        count_requests: bool,
        plan: StepPlan | None,
        no_reply: int | None = None,
    ) -> None:
        requeried = plan.requeried if plan is not None and count_requests else {}
        open_file: str | None = None
        call_id: str | None = None
        started = False
        for idx, entry in enumerate(history):
            if not isinstance(entry, dict):
                continue
            role, text = entry.get("role"), text_of(entry.get("content"))
            if role == "system":
                builder.add("system", "system", text, line=idx)
            elif entry.get("is_demo"):
                _demonstration(builder, entry, text, idx)
            elif role == "assistant":
                started = True
                for _ in range(requeried.get(idx, 0)):  # responses rejected and asked again before this one
                    builder.request(line=idx)
                if count_requests and idx != no_reply:
                    builder.request(line=idx)
                builder.new_turn()
                call_id = self._assistant(builder, entry, text, idx, open_file)
            elif role in ("user", "tool") and started:
                ids = entry.get("tool_call_ids")
                if isinstance(ids, list) and ids and isinstance(ids[0], str):
                    call_id = ids[0]
                builder.result(text, call_id, role="tool" if role == "tool" else "user", line=idx)
                match = OPEN_FILE_RE.search(text[-500:])
                if match and match.group(1).strip() not in ("n/a", ""):
                    open_file = normalise_path(match.group(1))
                call_id = None
            else:
                builder.add("user_text", "user", text, line=idx)
        for _ in range(requeried.get(len(history), 0)):  # re-asked after the last accepted step (a run cut short)
            builder.request(line=len(history))

    def _assistant(self, builder: RunBuilder, entry: dict, text: str, idx: int, open_file: str | None) -> str | None:
        """Add what the model wrote; return the id of its (first) tool call, if any."""
        calls = [
            c for c in entry.get("tool_calls") or [] if isinstance(c, dict) and isinstance(c.get("function"), dict)
        ]
        if calls:  # function calling: the content, then each call as the model produced it
            builder.add("assistant_text", "assistant", text, line=idx)
            ids = []
            for n, call in enumerate(calls):
                fn = call["function"]
                call_id = call.get("id") or f"step-{builder.step}-{idx}-{n}"
                self._file_context(
                    builder, builder.call(fn.get("name") or "", fn.get("arguments"), call_id, line=idx), open_file
                )
                ids.append(call_id)
            return ids[0]
        thought = entry.get("thought")
        action = entry.get("action")
        if not isinstance(thought, str) or not text.startswith(thought):
            thought = text  # not seen in the corpus: the whole content as text, the action as a plain command
        builder.add("assistant_text", "assistant", thought, line=idx)
        if not isinstance(action, str) or not action.strip():
            return None  # e.g. "Exit due to cost limit": the step ended without a command
        command = action.strip()
        call_id = f"step-{builder.step}-{idx}"
        item = builder.call(command.split(None, 1)[0], {"command": command}, call_id, line=idx)
        written = text[len(thought) :]
        if written.strip():  # the action as the model wrote it, not re-encoded as JSON
            builder.records[-1] = item = replace(item, args=written)
        self._file_context(builder, item, open_file)
        return call_id

    @staticmethod
    def _file_context(builder: RunBuilder, item: Item, open_file: str | None) -> None:
        """Windowed-editor commands (edit, goto, scroll) act on the file SWE-agent has open."""
        if item.resource is None and item.tool_name in FILE_CONTEXT_TOOLS and open_file:
            builder.records[-1] = item = replace(item, resource=open_file)
            builder._call_index[item.call_id or ""] = (item.resource, item.access)


def no_reply_exit(history: list[Any], exit_status: Any) -> int | None:
    """The index of the history's last assistant entry when SWE-agent wrote it for a call that got no reply (the
    exit status names such an exit and the entry is the harness's own exit text, thought and content alike), else
    None."""
    status = exit_status if isinstance(exit_status, str) else ""
    starts = next((texts for name, texts in NO_REPLY_EXITS.items() if name in status), None)
    last = next(
        (
            i
            for i in range(len(history) - 1, -1, -1)
            if isinstance(history[i], dict) and history[i].get("role") == "assistant"
        ),
        None,
    )
    if starts is None or last is None:
        return None
    entry = history[last]
    text, thought = text_of(entry.get("content")), entry.get("thought")
    if entry.get("tool_calls") or not isinstance(thought, str) or not thought.startswith(starts):
        return None
    return last if text.lower() == thought.lower() else None


def _demonstration(builder: RunBuilder, entry: dict, text: str, idx: int) -> None:
    """A demonstration entry: text the prompt shows (its calls' arguments as written), never a call or a result of
    this run, and never elided (last_n_observations counts no demonstration)."""
    if entry.get("role") != "assistant":
        builder.add("user_text", "user", text, line=idx)
        return
    builder.add("assistant_text", "assistant", text, line=idx)
    for call in entry.get("tool_calls") or []:
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict) and fn.get("arguments"):
            builder.add("assistant_text", "assistant", text_of(fn["arguments"]), line=idx)


def _placeholders(builder: RunBuilder, history: list[Any], trajectory: Any, plan: StepPlan | None) -> None:
    """Note each history entry a request was sent in another form (aligned by position and role; only entries
    already in that request's prompt: a re-ask's extra messages come after them)."""
    if not isinstance(trajectory, list) or not builder.n_requests:
        return
    seen = {r.line: (r.seq, r.step) for r in builder.records if isinstance(r, Item) and r.role != "assistant"}
    full = [text_of(e.get("content")) if isinstance(e, dict) else None for e in history]
    for request, messages in prompts(trajectory, plan, builder.n_requests):
        for idx, msg in enumerate(messages[: len(history)]):
            if not isinstance(msg, dict) or not isinstance(history[idx], dict) or idx not in seen:
                continue
            if msg.get("role") != history[idx].get("role") or seen[idx][1] > request:
                break  # not the same conversation from here on: do not guess
            sent = text_of(msg.get("content"))
            if sent != full[idx]:
                builder.placeholder(request, seen[idx][0], sent)


def _unlogged_calls(builder: RunBuilder, api_calls: Any) -> None:
    """Model calls a 0.x ``model_stats`` counts beyond the requests the file shows (re-asks, never logged)."""
    if not isinstance(api_calls, int) or isinstance(api_calls, bool) or api_calls <= builder.n_requests:
        return
    if builder.n_requests == 0:
        return  # a replayed demonstration's stats, or no reply logged at all: nothing to compare
    extra = api_calls - builder.n_requests
    builder.run.metadata["unlogged_calls"] = extra
    builder.warn(
        None,
        f"info.model_stats.api_calls is {api_calls} but the file shows {builder.n_requests} model calls: "
        f"{extra} re-asked call(s) (a malformed or blocked reply, SWE-agent 0.x) were not logged; their prompts "
        "and replies are not replayed, though model_stats' tokens_sent counts them",
    )


def _config(raw: Any) -> dict[str, Any]:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return {}
    return raw if isinstance(raw, dict) else {}


READER = SweAgentReader()
