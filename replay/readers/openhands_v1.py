"""OpenHands V1 (Software Agent SDK) events: a conversation folder, an eval ``output.jsonl`` or an event stream.

Forms: a conversation folder (``base_state.json`` + ``events/event-NNNNN-<uuid>.json``, one event per file, in
index order) is one run; a JSONL whose lines hold ``history[]`` (eval output) is one run per line; a JSONL of
events (``events.jsonl``, ``openhands --headless --json``) or a JSON array of events is one run. The agent-server
(SDK 2025-09-17 #317 to 2025-10-14 #732) saved a conversation one level down, ``<conversations>/<id hex>/
event_service/{base_state.json, events/}``: a folder whose only entry is a folder holding that state, not named
after the conversation id ``base_state.json`` gives, is the conversation (``state_folder``), and names the run.

Events (discriminator ``kind``): SystemPromptEvent -> system + tool_defs; MessageEvent -> user_text /
assistant_text (+ reasoning, extended_content as attachments); ActionEvent -> one tool call (``tool_call``
arguments; before the SDK's own MessageToolCall, LiteLLM's ``{"function": {"name", "arguments"}}``), its
``thought`` and reasoning once per response; ObservationEvent / UserRejectObservation / AgentErrorEvent -> tool
results linked by ``tool_call_id``; Condensation -> a recorded context event (EVENTS.md), its summary a
``summary`` item. As the SDK's view does, an action no observation ever answers is not sent, nor the rest of its
response's actions and their observations (``runs.metadata.unmatched_tool_calls``), and a second observation-like
event for one call (crash recovery) is not sent (``duplicate_observations``). In a conversation tree (events
with ``parent_id``, SDK 2026-07 on) only the branch leading to the HEAD is read (``off_branch``;
``runs.metadata.abandoned`` counts the rest, as Gemini CLI's ``rewound``). The agent's condenser settings,
as ``base_state.json`` records them (``max_size``, ``keep_first``, ``max_tokens``...), go to
``runs.metadata.condenser``. A Condensation after a CondensationRequest has trigger ``manual``: the SDK writes
that request alike when the user asks (``conversation.condense()``) and when the agent's LLM call failed on the
context window (or, from 2026-04-06, on a malformed history), so it marks no threshold of the condenser's.

Request rule: one request per distinct ``llm_response_id`` of agent events (parallel calls share one
response). Usage: ``base_state.json`` ``stats.usage_to_metrics`` (older ``service_to_metrics``)
``.<usage_id>.token_usages[]`` joined by ``response_id``; in a stream, ``ConversationStateUpdateEvent``
key=stats is cumulative, so each change of an agent usage id's ``accumulated_token_usage`` is one request's
usage (a change seen before its response events opens the request; one seen after fills the open request).
Condenser usage ids (name contains "condenser") are not agent requests: their usage goes to the condensation
event (by ``llm_response_id``; a Condensation has one only from SDK 2025-10-30 #930, before which, and in a stream,
the condenser's calls go to the condensations in order, ``pair_condensations``); their sum in a stream is
``runs.metadata.condenser_usage``.

What ``prompt_tokens`` counts (``prompt_rule``): the SDK stores LiteLLM's ``usage.prompt_tokens`` as it is, with
``prompt_tokens_details.cached_tokens`` as cache reads and ``_cache_creation_input_tokens`` as cache writes
(``Telemetry._record_usage``, unchanged in this respect from SDK 49cbde95, 2025-09-23, to 2026). For Anthropic
models LiteLLM builds ``prompt_tokens`` from the Messages API usage as ``input_tokens + cache_read_input_tokens``
up to 1.77.1 (the SDK locked 1.77.1 at 49cbde95; OpenHands/benchmarks locked 1.76.2 at 36cfef5) and as
``input_tokens + cache_creation_input_tokens + cache_read_input_tokens`` from 1.77.3 on (1.77.3, 1.77.5, 1.78.0,
1.79.0 and 1.110.2 read; ``AnthropicConfig.calculate_usage``). With a ``litellm_proxy/`` model the proxy's LiteLLM
does that sum, so neither the SDK version nor its lock file settles it; the numbers do: uncached input is never
negative under either rule, so a usage whose prompt is below its reads + writes was written under the older one.
Every request is then made canonical (``prompt_tokens`` = input + cache_read + cache_write, as ``Request``);
``runs.metadata.prompt_tokens_rule`` says which rule and why. Usage no rule can give is quarantined.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import replace
from itertools import islice
from pathlib import Path
from typing import Any

from replay.model import BadRecord, Record, Request, Run
from replay.readers.aliases import add_call
from replay.readers.base import (
    ISOLATED_ERRORS,
    ReadContext,
    is_json_document,
    iter_json_lines,
    load_json_document,
    text_of,
)
from replay.readers.builder import RunBuilder, seq_ranges
from replay.readers.json_fields import sub_dict
from replay.readers.litellm_prompt_rule import canonical, is_count, prompt_rule

EVENT_KIND_RE = re.compile(r'"kind"\s*:\s*"(?:\w+Event|Condensation|CondensationRequest|UserRejectObservation)"')
EVENT_FILE_RE = re.compile(r"^event-(\d+)-[^/]*\.json$")
STATS_KEYS = ("usage_to_metrics", "service_to_metrics")


def event_files(folder: Path) -> list[Path]:
    """The event files of a conversation's ``events`` folder, in index order."""
    found = [(int(m.group(1)), f) for f in folder.iterdir() if (m := EVENT_FILE_RE.match(f.name)) and f.is_file()]
    return [f for _, f in sorted(found)]


def _events_dir(path: Path) -> Path | None:
    if (path / "events").is_dir() and event_files(path / "events"):
        return path / "events"
    if path.name == "events" and event_files(path):
        return path
    return None


def conversation_id(state_folder: Path) -> str | None:
    """The conversation id ``base_state.json`` gives (as 32 hex digits), or None when there is none to read."""
    try:
        doc = json.loads((state_folder / "base_state.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    cid = doc.get("id") if isinstance(doc, dict) else None
    return cid.replace("-", "").lower() if isinstance(cid, str) and cid else None


AGENT_SERVER_STATE = "event_service"  # agent_server/conversation_service.py: <conversations>/<id hex>/event_service


def state_folder(path: Path) -> Path | None:
    """The folder holding the conversation's state (``base_state.json`` and ``events/``) when ``path`` is a
    conversation saved one level down, as the agent-server saves it: its only entry (hidden files aside) is a folder
    holding that state, and that folder is not itself named after the conversation (the SDK's own layout names the
    state folder after the conversation id, and its parent is a folder of conversations); the agent-server's own
    ``event_service`` folder also when it holds events alone (a conversation whose state was never saved). None
    otherwise."""
    try:  # two visible entries are enough to say no (a folder of many logs is not listed whole)
        entries = list(islice((e for e in path.iterdir() if not e.name.startswith(".")), 2))
    except OSError:
        return None
    if len(entries) != 1 or not entries[0].is_dir() or entries[0].name == "events":
        return None
    inner = entries[0]
    if _events_dir(inner) is None:
        return None
    if not (inner / "base_state.json").is_file():
        return inner if inner.name == AGENT_SERVER_STATE else None
    cid = conversation_id(inner)
    return inner if cid and cid not in inner.name.replace("-", "").lower() else None


OBSERVATION_KINDS = ("ObservationEvent", "UserRejectObservation", "AgentErrorEvent")
ROOT_PARENT_ID = "__root__"  # openhands-sdk event.types: an explicit root of the conversation tree


def off_branch(events: list[dict], leaf: Any, head_is_empty: Any = None) -> set[str]:
    """Ids of the events no request of the active branch sees (the SDK's conversation tree, 657553455,
    2026-07-02): each event's ``parent_id`` (none: the event before it, the legacy chain) leads back from the HEAD
    (``base_state.json`` ``leaf_event_id``, else the last event that is no ConversationStateUpdateEvent, which never
    becomes HEAD); events off that path were a branch the user navigated away from, their requests included.
    Empty for a conversation without parent ids."""
    if not any(isinstance(e.get("parent_id"), str) for e in events):
        return set()
    nodes = [e for e in events if isinstance(e.get("id"), str)]
    parent: dict[str, str | None] = {}
    for i, e in enumerate(nodes):
        p = e.get("parent_id")
        parent[e["id"]] = (
            None if p == ROOT_PARENT_ID else p if isinstance(p, str) else nodes[i - 1]["id"] if i else None
        )
    tree = [e["id"] for e in nodes if e.get("kind") != "ConversationStateUpdateEvent"]
    if head_is_empty:
        cur = None
    else:
        cur = leaf if isinstance(leaf, str) and leaf in parent else tree[-1] if tree else None
    path: set[str] = set()
    while cur is not None and cur not in path:
        path.add(cur)
        cur = parent.get(cur)
    return {eid for eid in tree if eid not in path}


def _call_id(ev: dict) -> str | None:
    call_id = ev.get("tool_call_id") or sub_dict(ev, "tool_call").get("id")
    return call_id if isinstance(call_id, str) else None


def unmatched_calls(events: list[dict], maybe_observed: set[str] | None = None) -> set[str]:
    """Tool call ids the SDK's view never sends (View: ToolCallMatchingProperty, BatchAtomicityProperty): an
    action no observation-like event ever answers (a call interrupted before it ran) is left out with every other
    action of its response, and so are those actions' observations. ``maybe_observed``: calls an unreadable event
    after them may answer, taken as answered (a damaged line costs only itself)."""
    observed = {e.get("tool_call_id") for e in events if e.get("kind") in OBSERVATION_KINDS} | (maybe_observed or set())
    actions = [(_call_id(e), e.get("llm_response_id")) for e in events if e.get("kind") == "ActionEvent"]
    open_responses = {rid for cid, rid in actions if cid is not None and cid not in observed}
    return {
        cid
        for cid, rid in actions
        if cid is not None and (cid not in observed or rid is not None and rid in open_responses)
    }


def condenser_config(agent: Any) -> tuple[dict[str, Any] | None, str | None]:
    """The agent's condenser as ``base_state.json`` records it: its ``kind`` and scalar settings (``max_size``,
    ``keep_first``, ``max_tokens`` from SDK 3bd0250ab of 2025-12-23, ...), without its LLM; None when there is
    none. Second: why a ``max_tokens`` that is neither null nor a token count was left out (the SDK writes
    ``int | None``), else None."""
    c = agent.get("condenser") if isinstance(agent, dict) else None
    if not isinstance(c, dict):
        return None, None
    kept = {k: v for k, v in c.items() if not isinstance(v, dict | list)}
    tokens = kept.get("max_tokens")
    if tokens is None or (type(tokens) is int and tokens >= 0):
        return kept or None, None
    del kept["max_tokens"]
    why = (
        f"agent.condenser.max_tokens={tokens!r:.40} is not a token count (the SDK writes an integer or null): "
        "left out, so no token limit is replayed for this run; fix the value to replay it"
    )
    return kept or None, why


def is_condenser(usage_id: str) -> bool:
    return "condenser" in usage_id.lower()


def usage_fields(u: dict) -> dict[str, Any]:
    """Request fields from an SDK TokenUsage as written; ``input_tokens`` waits for the run's ``prompt_rule``."""
    return {
        "prompt_tokens": u.get("prompt_tokens"),
        "input_tokens": None,
        "cache_read": u.get("cache_read_tokens") or 0,
        "cache_write": u.get("cache_write_tokens") or 0,
        "output_tokens": u.get("completion_tokens"),
    }


def _stats_map(stats: Any) -> dict[str, dict]:
    if not isinstance(stats, dict):
        return {}
    for key in STATS_KEYS:
        if isinstance(stats.get(key), dict):
            return {k: v for k, v in stats[key].items() if isinstance(v, dict)}
    return {}


def _token_usages(metrics: Any) -> tuple[dict[str, dict], dict[str, dict], dict[str, Any]]:
    """(agent usage by response id, condenser usage by response id, per-usage-id totals) from stats/metrics."""
    agent: dict[str, dict] = {}
    condenser: dict[str, dict] = {}
    totals: dict[str, Any] = {}
    by_id = _stats_map(metrics) or ({"agent": metrics} if isinstance(metrics, dict) else {})
    for usage_id, m in by_id.items():
        target = condenser if is_condenser(usage_id) else agent
        for u in m.get("token_usages") or []:
            if isinstance(u, dict) and u.get("response_id"):
                target[u["response_id"]] = u
        if isinstance(m.get("accumulated_token_usage"), dict):
            totals[usage_id] = {
                "model": m.get("model_name"),
                "cost": m.get("accumulated_cost"),
                **usage_fields(m["accumulated_token_usage"]),
            }
    return agent, condenser, totals


TERMINAL_OBSERVATIONS = ("ExecuteBashObservation", "TerminalObservation")


def observation_text(obs: dict) -> str:
    """The text the SDK sends the model for an observation (its ``agent_observation``, later ``to_llm_content``):
    the terminal's output framed by its metadata (``terminal_text``); the editor's error in place of its output;
    the finish tool's message; else the observation's content or output."""
    if obs.get("kind") in TERMINAL_OBSERVATIONS and isinstance(obs.get("metadata"), dict):
        return terminal_text(obs)
    if obs.get("content") is not None:
        return text_of(obs["content"])
    if isinstance(obs.get("error"), str) and obs["error"]:
        return obs["error"]
    if obs.get("output") is None and isinstance(obs.get("message"), str):
        return obs["message"]
    return text_of(obs.get("output"))


def terminal_text(obs: dict) -> str:
    """A terminal observation as the model saw it (SDK 49cbde95 ``ExecuteBashObservation``, later
    ``TerminalObservation``, the same framing): the metadata's prefix, the output, its suffix, then a line each for
    the working directory, the Python interpreter and the exit code (when not -1), after an error header when the
    command failed to run."""
    m = obs["metadata"]
    body = text_of(obs["content"]) if obs.get("content") is not None else text_of(obs.get("output"))
    text = f"{m.get('prefix') or ''}{body}{m.get('suffix') or ''}"
    if m.get("working_dir"):
        text += f"\n[Current working directory: {m['working_dir']}]"
    if m.get("py_interpreter_path"):
        text += f"\n[Python interpreter: {m['py_interpreter_path']}]"
    if m.get("exit_code", -1) not in (-1, None):
        text += f"\n[Command finished with exit code {m['exit_code']}]"
    if obs.get("error") is True:
        text = "[There was an error during command execution.]\n" + text
    elif obs.get("is_error") is True:
        text = "[An error occurred during execution.]\n" + text
    return text


class OpenHandsV1Reader:
    format = "openhands-v1"
    version = 5  # 2: a condensation's event names the condenser's model (``summariser_model``); 3: an action
    # before a line that reads as no event (no kind) may have been answered there; 4: a condensation naming an
    # agent response takes no usage, and an event of another kind that forgets events is named; 5: an agent-server
    # ``event_service`` folder without ``base_state.json`` is its conversation's, named after it

    def sniff(self, head: str, path: Path) -> bool:
        return bool(EVENT_KIND_RE.search(head)) and '"source"' in head

    def members(self, path: Path) -> list[Path] | None:
        events = _events_dir(path)
        if events is None and (inner := state_folder(path)) is not None:  # agent-server: <conversation>/<state>/
            path, events = inner, _events_dir(inner)
        if events is None:
            return None
        base = (events.parent if events.name == "events" else path) / "base_state.json"
        return ([base] if base.is_file() else []) + event_files(events)

    def read(self, ctx: ReadContext) -> Iterator[Record]:
        if ctx.path.is_dir():
            yield from self._folder(ctx)
            return
        if is_json_document(ctx.path):
            doc = load_json_document(ctx)
            if isinstance(doc, BadRecord) or not isinstance(doc, list):
                yield doc if isinstance(doc, BadRecord) else BadRecord(1, "expected a JSON array of events", "")
                return
            yield from _Conversation(ctx, ctx.run_id(), {}).run([(i, e) for i, e in enumerate(doc)])
            return
        stream: list[tuple[int, Any]] = []
        damaged: list[int] = []  # lines that could not be read as events
        used: set[str] = set()  # run id suffixes of eval lines so far
        for entry in iter_json_lines(ctx):
            if isinstance(entry, BadRecord):
                damaged.append(entry.line)
                yield entry
                continue
            line, obj = entry
            if isinstance(obj, dict) and isinstance(obj.get("history"), list):
                yield from self._eval_line(ctx, line, obj, used)
            elif isinstance(obj, dict) and obj.get("kind"):
                stream.append((line, obj))
            else:
                damaged.append(line)  # it may have been the event that answered an action before it
                yield BadRecord(
                    line,
                    "OpenHands V1 line that is neither an event (no 'kind') nor an eval output "
                    "line (no 'history' list)",
                    str(obj)[:2000],
                )
        if stream:
            yield from _Conversation(ctx, ctx.run_id(), {}).run(stream, damaged=damaged)

    def _eval_line(self, ctx: ReadContext, line: int, obj: dict, used: set[str]) -> Iterator[Record]:
        meta = sub_dict(obj, "metadata")
        llm = sub_dict(meta, "llm")
        agent, condenser, totals = _token_usages(obj.get("metrics"))
        info = {
            "line": line,
            "instance_id": obj.get("instance_id"),
            "dataset": meta.get("dataset"),
            "error": obj.get("error"),
            "usage_totals": totals or None,
        }
        suffix = str(obj.get("instance_id") or line)
        if isinstance(obj.get("attempt"), int) and obj["attempt"] > 1:  # iterative evaluation: one line per attempt
            suffix += f"/attempt-{obj['attempt']}"
        if suffix in used:
            suffix += f"/line-{line}"
        used.add(suffix)
        info["attempt"] = obj.get("attempt")
        conv = _Conversation(ctx, ctx.run_id(suffix), info, agent, condenser, model=llm.get("model"))
        yield from conv.run([(line, e) for e in obj["history"]], line)

    def _folder(self, ctx: ReadContext) -> Iterator[Record]:
        files = self.members(ctx.path) or []
        agent: dict[str, dict] = {}
        condenser: dict[str, dict] = {}
        meta: dict[str, Any] = {}
        model = None
        events: list[tuple[int, Any]] = []
        damaged: list[int] = []  # indexes of event files that could not be read
        for f in files:
            idx = int(m.group(1)) if (m := EVENT_FILE_RE.match(f.name)) else None
            doc = load_json_document(replace(ctx, path=f))
            if isinstance(doc, BadRecord):
                damaged += [idx] if idx is not None else []
                yield replace(doc, reason=f"{f.name}: {doc.reason}")
                continue
            if idx is None:  # base_state.json
                agent, condenser, totals = _token_usages(doc.get("stats") if isinstance(doc, dict) else None)
                agent_doc = doc.get("agent") if isinstance(doc, dict) else None
                settings, bad_setting = condenser_config(agent_doc)
                if bad_setting:
                    yield BadRecord(1, f"{f.name}: {bad_setting}", repr(settings)[:2000])
                llm = agent_doc.get("llm") if isinstance(agent_doc, dict) else None
                model = llm.get("model") if isinstance(llm, dict) else None
                meta = (
                    {
                        "conversation_id": doc.get("id"),
                        "execution_status": doc.get("execution_status") or doc.get("agent_status"),  # older name
                        "condenser": settings,
                        "usage_totals": totals or None,
                        "leaf_event_id": doc.get("leaf_event_id"),  # the conversation tree's HEAD (2026-07 on)
                        "head_is_empty": doc.get("head_is_empty") or None,
                    }
                    if isinstance(doc, dict)
                    else {}
                )
            else:
                events.append((idx, doc))
        # the run is named after the conversation, also when its state folder is what was named
        named = ctx.path.parent if state_folder(ctx.path.parent) == ctx.path else ctx.path
        run_id = replace(ctx, path=named).run_id()
        yield from _Conversation(ctx, run_id, meta, agent, condenser, model=model).run(events, damaged=damaged)


class _Conversation:
    """Reading one run's events in order: requests by response id, usage joined or differenced."""

    def __init__(
        self,
        ctx: ReadContext,
        run_id: str,
        meta: dict,
        agent_usage: dict | None = None,
        condenser_usage: dict | None = None,
        model: str | None = None,
    ) -> None:
        self.ctx = ctx
        run = Run(
            run_id=run_id,
            format=OpenHandsV1Reader.format,
            source_path=str(ctx.path),
            model=model,
            harness="openhands",
            metadata={k: v for k, v in meta.items() if v is not None},
        )
        self.b = RunBuilder(run)
        self.agent_usage = agent_usage or {}
        self.condenser_usage = condenser_usage or {}
        self.responses: dict[str, int] = {}  # llm_response_id -> request index in records
        self.event_seqs: dict[str, list[int]] = {}  # event id -> item seqs it produced
        self.cumulative: dict[str, dict[str, int]] = {}  # usage id -> last accumulated usage
        self.unbound: int | None = None  # a request opened by a stats change, not yet tied to a response
        self.last_request: int | None = None  # records index of the latest request
        self.usage_filled: set[int] = set()  # record indexes of requests whose usage is known
        self.condenser_delta: dict[str, int] = {}
        self.manual_condense = False
        self.events: list[dict] = []
        self.event_usage: list[tuple[dict, dict]] = []  # (condensation event, its condenser usage as written)
        self.unlinked: list[dict] = []  # condensation events written without llm_response_id (SDK before #930)
        self.condenser_used: set[str] = set()  # condenser response ids given to an event
        self.condenser_calls: list[dict] = []  # in a stream: each change of the condenser's cumulative usage
        self.summary_seq: int | None = None  # the summary the view shows now
        self.unsent_calls: set[str] = set()  # tool call ids no view holds (unmatched_calls)
        self.observed: set[str] = set()  # tool call ids whose observation-like event was read
        self.duplicates = 0  # observation-like events for a call already observed (not in the view)

    def run(
        self, events: list[tuple[int, Any]], line: int | None = None, damaged: Sequence[int] = ()
    ) -> Iterator[Record]:
        """The conversation's records from its events (position, event); ``damaged``: positions of events that
        could not be read (quarantined by the caller)."""
        meta = self.b.run.metadata
        off = off_branch(
            [e for _, e in events if isinstance(e, dict)], meta.get("leaf_event_id"), meta.get("head_is_empty")
        )
        # an event that could not be read, or read as no event (an object without a kind: its line damaged), may
        # have answered any action before it
        unusable = (w for w, e in events if not isinstance(e, dict) or not isinstance(e.get("kind"), str))
        last_damage = max([*damaged, *unusable], default=-1)
        actions = [(w, _call_id(e)) for w, e in events if isinstance(e, dict) and e.get("kind") == "ActionEvent"]
        maybe = {c for w, c in actions if c is not None and w < last_damage}
        self.unsent_calls = unmatched_calls(
            [e for _, e in events if isinstance(e, dict) and e.get("id") not in off], maybe
        )
        abandoned: set[str] = set()
        for n, (where, event) in enumerate(events):
            if isinstance(event, dict) and event.get("id") in off:  # another branch of the conversation tree
                if isinstance(event.get("llm_response_id"), str) and event.get("source") == "agent":
                    abandoned.add(event["llm_response_id"])
                continue
            at = line if line is not None else where
            if not isinstance(event, dict):
                yield BadRecord(at, f"event {n} is not an object", str(event)[:2000])
                continue
            if not self.b.run.started_at and event.get("timestamp"):
                self._set_run(started_at=event["timestamp"])
            start = self.b.seq
            try:
                self.event(event, at)
            except ISOLATED_ERRORS as exc:  # one malformed event is quarantined; the rest of the run is read
                yield BadRecord(
                    at, f"event {n} could not be read ({type(exc).__name__}: {str(exc)[:200]})", str(event)[:2000]
                )
                continue
            if event.get("id") and self.b.seq > start:
                self.event_seqs.setdefault(event["id"], []).extend(range(start, self.b.seq))
        self.pair_condensations()
        self.settle_usage()
        if off:
            meta["abandoned"] = {"events": len(off), "requests": len(abandoned - set(self.responses))}
        if self.unsent_calls:
            self.b.run.metadata["unmatched_tool_calls"] = len(self.unsent_calls)
        if self.duplicates:
            self.b.run.metadata["duplicate_observations"] = self.duplicates
        if self.events:
            self.b.run.metadata["context_events"] = self.events
        self.b.scan_clips()
        yield from self.b

    def pair_condensations(self) -> None:
        """Condensations whose usage no response id gives get the condenser's calls in order, one each: the
        summarising condenser makes one completion per condensation and records its usage only when the call
        returns, so the n-th call is the n-th condensation. The calls are the condenser's ``token_usages`` no
        condensation claimed (base_state, for condensations written without ``llm_response_id``) or, in a stream,
        each change of the condenser's cumulative usage. When the counts differ, none is paired (noted)."""
        if self.condenser_usage or self.agent_usage:
            waiting = self.unlinked
            calls = [u for rid, u in self.condenser_usage.items() if rid not in self.condenser_used]
        else:
            waiting = [e for e in self.events if not any(e is x for x, _ in self.event_usage)]
            calls = self.condenser_calls
        if waiting and len(calls) == len(waiting):
            self.event_usage += list(zip(waiting, calls, strict=True))
        elif calls:
            self.b.run.metadata["condenser_usage_unpaired"] = (
                f"{len(calls)} condenser calls and {len(waiting)} condensations without their usage: not paired"
            )

    def settle_usage(self) -> None:
        """Usage in the canonical meaning (prompt = input + cache_read + cache_write) under the run's
        ``prompt_rule``; a request whose numbers no rule gives keeps no usage (quarantined with the reason)."""
        reqs = [(i, r) for i, r in enumerate(self.b.records) if isinstance(r, Request) and r.prompt_tokens is not None]
        raw = [
            (u.get("prompt_tokens"), u.get("cache_read_tokens") or 0, u.get("cache_write_tokens") or 0)
            for u in [*self.condenser_usage.values(), self.condenser_delta]
            if u
        ]
        with_writes, why = prompt_rule(
            [(r.prompt_tokens, r.cache_read or 0, r.cache_write or 0) for _, r in reqs] + raw
        )
        if reqs or raw:
            self.b.run.metadata["prompt_tokens_rule"] = why
        for i, r in reqs:
            fields: dict[str, Any] | None = canonical(
                r.prompt_tokens or 0, r.cache_read or 0, r.cache_write or 0, with_writes
            )  # reqs holds only requests with a prompt_tokens
            if fields is None:
                self.b.records.append(
                    BadRecord(
                        r.line or 0,
                        f"usage prompt_tokens={r.prompt_tokens} < cache_read={r.cache_read}: no LiteLLM rule "
                        "gives that; request kept without usage",
                        repr(r)[:2000],
                    )
                )
                fields = dict.fromkeys(("prompt_tokens", "input_tokens", "cache_read", "cache_write", "output_tokens"))
            self.b.records[i] = replace(r, **fields)
        for event, u in self.event_usage:
            if (f := self._canonical_usage(u, with_writes)) is not None:
                event["usage"] = {
                    "input": f["input_tokens"],
                    "cache_read": f["cache_read"],
                    "cache_write": f["cache_write"],
                    "output": f["output_tokens"],
                }
                if isinstance(u.get("model"), str) and u["model"]:  # the condenser's own LLM, priced as its model
                    event["summariser_model"] = u["model"]
        if self.condenser_delta:
            self.b.run.metadata["condenser_usage"] = self._canonical_usage(self.condenser_delta, with_writes)
        for total in (self.b.run.metadata.get("usage_totals") or {}).values():
            if is_count(total["prompt_tokens"]) and is_count(total["cache_read"]) and is_count(total["cache_write"]):
                total.update(
                    canonical(total["prompt_tokens"], total["cache_read"], total["cache_write"], with_writes) or {}
                )

    @staticmethod
    def _canonical_usage(u: dict, with_writes: bool) -> dict[str, Any] | None:
        """Canonical request fields of an SDK TokenUsage, or None when they are not counts the rule can give."""
        f = usage_fields(u)
        if not all(is_count(f[k]) for k in ("prompt_tokens", "cache_read", "cache_write")):
            return None
        fixed = canonical(f["prompt_tokens"], f["cache_read"], f["cache_write"], with_writes)
        return None if fixed is None else {**f, **fixed}

    def _set_run(self, **changes: Any) -> None:
        self.b.run = self.b.records[0] = replace(self.b.run, **changes)

    # --- requests -------------------------------------------------------------------------------------------
    def response(self, ev: dict, line: int) -> bool:
        """Open the request of this event's response if it is new; True when it was."""
        rid = ev.get("llm_response_id") or f"event-{ev.get('id') or line}"
        if rid in self.responses:
            return False
        usage = self.agent_usage.get(rid)
        fields = {**usage_fields(usage), "model": usage.get("model")} if usage else {}
        if self.unbound is not None:  # a stats change already opened this request
            index, self.unbound = self.unbound, None
        else:
            self.b.request(line=line, ts=ev.get("timestamp"), **fields)
            index = len(self.b.records) - 1
            if usage:
                self.usage_filled.add(index)
        self.responses[rid] = self.last_request = index
        if fields.get("model") and not self.b.run.model:
            self._set_run(model=fields["model"])
        return True

    def stats(self, value: Any, line: int, ts: str | None) -> None:
        """A cumulative stats update: each change of an agent usage id is one request's usage."""
        for usage_id, m in _stats_map(value).items():
            acc = m.get("accumulated_token_usage")
            if not isinstance(acc, dict):
                continue
            now = {
                k: acc.get(k) or 0
                for k in (
                    "prompt_tokens",
                    "completion_tokens",
                    "cache_read_tokens",
                    "cache_write_tokens",
                    "reasoning_tokens",
                )
            }
            wrong = {k: v for k, v in now.items() if isinstance(v, bool) or not isinstance(v, int | float)}
            if wrong:  # quarantined; the next update's delta spans this one
                self.b.records.append(
                    BadRecord(line, f"usage {wrong!r:.80}: not a number; stats update skipped", repr(acc)[:2000])
                )
                continue
            before = self.cumulative.get(usage_id, dict.fromkeys(now, 0))
            self.cumulative[usage_id] = now
            delta = {k: now[k] - before[k] for k in now}
            if not any(delta.values()):
                continue
            if is_condenser(usage_id):
                for k, v in delta.items():
                    self.condenser_delta[k] = self.condenser_delta.get(k, 0) + v
                self.condenser_calls.append(delta)
                continue
            if self.agent_usage:  # per-response usage from base_state is exact; the stream's is not needed
                continue
            fields = {**usage_fields(delta), "model": m.get("model_name")}
            index = self.last_request
            if index is not None and index not in self.usage_filled and self.unbound is None:
                fields = self.b.checked_usage(fields, line)
                self.b.records[index] = replace(self.b.records[index], **fields)
            else:  # the change precedes its response's events: it opens the request they will bind to
                self.b.request(line=line, ts=ts, **fields)
                index = self.unbound = self.last_request = len(self.b.records) - 1
            self.usage_filled.add(index)
            if fields["model"] and not self.b.run.model:
                self._set_run(model=fields["model"])

    # --- events ---------------------------------------------------------------------------------------------
    def event(self, ev: dict, line: int) -> None:
        kind, ts, b = ev.get("kind"), ev.get("timestamp"), self.b
        if kind == "SystemPromptEvent":
            b.add("system", "system", text_of(ev.get("system_prompt")), line=line, ts=ts)
            if ev.get("dynamic_context"):
                b.add("system", "system", text_of(ev["dynamic_context"]), line=line, ts=ts)
            if ev.get("tools"):
                b.add("tool_defs", "system", json.dumps(ev["tools"], ensure_ascii=False), line=line, ts=ts)
        elif kind == "MessageEvent":
            self.message(ev, line, ts)
        elif kind == "ActionEvent":
            self.action(ev, line, ts)
        elif kind in ("ObservationEvent", "UserRejectObservation", "AgentErrorEvent"):
            self.observation(ev, kind, line, ts)
        elif kind == "ConversationStateUpdateEvent" and ev.get("key") in ("stats", "full_state"):
            value = ev.get("value")
            self.stats(value.get("stats", value) if isinstance(value, dict) else value, line, ts)
        elif kind == "CondensationRequest":
            self.manual_condense = True
        elif kind == "Condensation":
            self.condensation(ev, line, ts)
        elif isinstance(ids := ev.get("forgotten_event_ids"), list) and ids:
            self.unread_forgetting(ev, len(ids), line)

    def unread_forgetting(self, ev: dict, n: int, line: int) -> None:
        """An event of a kind this reader does not read that forgets events from the view (sources newer than
        611629e6 have the NotesRetrievalCondenser's ``HistoryIndexEvent``, whose rendering they do not give): named,
        as the prompts after it are read with those events still in the view."""
        self.b.records.append(
            BadRecord(
                line,
                f"event kind {str(ev.get('kind'))!r:.60} forgets {n} events, and this reader does not know how the "
                "SDK renders it: the requests after it are read as if nothing was forgotten; leave this run out of "
                "fidelity comparisons",
                repr(ev)[:2000],
            )
        )

    def message(self, ev: dict, line: int, ts: str | None) -> None:
        msg = sub_dict(ev, "llm_message")
        text = text_of(msg.get("content"))
        if ev.get("source") == "agent" or msg.get("role") == "assistant":
            self.response(ev, line)
            self.reasoning(ev, line, ts)
            self.b.add("assistant_text", "assistant", text, line=line, ts=ts)
            return
        self.b.new_turn()
        self.b.add("user_text", "user", text, line=line, ts=ts)
        for part in ev.get("extended_content") or []:
            if extra := text_of(part):
                self.b.add("attachment", "user", extra, line=line, ts=ts)

    def reasoning(self, ev: dict, line: int, ts: str | None) -> None:
        blocks = [text_of(t.get("thinking")) for t in ev.get("thinking_blocks") or [] if isinstance(t, dict)]
        text = "\n".join(t for t in blocks if t) or text_of(ev.get("reasoning_content"))
        if text:
            self.b.add("reasoning", "assistant", text, line=line, ts=ts)

    def action(self, ev: dict, line: int, ts: str | None) -> None:
        if _call_id(ev) in self.unsent_calls:  # the view leaves the action out: a response, nothing sent
            self.response(ev, line)
            return
        if self.response(ev, line):  # thought and reasoning belong to the response, logged on its first action
            self.reasoning(ev, line, ts)
        if thought := text_of(ev.get("thought")):
            self.b.add("assistant_text", "assistant", thought, line=line, ts=ts)
        call = sub_dict(ev, "tool_call")
        if isinstance(call.get("function"), dict):  # LiteLLM's tool call (SDK before MessageToolCall): name, arguments
            call = {**call["function"], "id": call.get("id")}
        args: Any = call.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                pass
        if args is None:
            action = sub_dict(ev, "action")
            args = {k: v for k, v in action.items() if k != "kind"}
        name = ev.get("tool_name") or call.get("name") or ""
        add_call(self.b, name, args, ev.get("tool_call_id") or call.get("id"), line=line, ts=ts)

    def observation(self, ev: dict, kind: str, line: int, ts: str | None) -> None:
        call_id = ev.get("tool_call_id")
        if isinstance(call_id, str) and (call_id in self.unsent_calls or call_id in self.observed):
            self.duplicates += call_id in self.observed  # ObservationUniquenessProperty: the first one stays
            return
        if isinstance(call_id, str) and call_id:
            self.observed.add(call_id)
        obs = sub_dict(ev, "observation")
        if kind == "UserRejectObservation":  # the SDK sends "Action rejected: <reason>"
            text, error = f"Action rejected: {ev.get('rejection_reason') or 'rejected by the user'}", True
        elif kind == "AgentErrorEvent":
            text, error = str(ev.get("error") or ""), True
        else:  # later SDKs send the event's extended content after the observation's
            extra = [t for part in ev.get("extended_content") or [] if (t := text_of(part))]
            text = "\n".join([observation_text(obs), *extra])
            error = bool(obs.get("is_error") or obs.get("error"))
        if kind == "AgentErrorEvent" and not ev.get("tool_call_id"):
            self.b.add("user_text", "user", text, line=line, ts=ts, is_error=True)
            return
        self.b.result(text, ev.get("tool_call_id"), ev.get("tool_name"), line=line, ts=ts, is_error=error)

    def condensation(self, ev: dict, line: int, ts: str | None) -> None:
        """The SDK's view (``View.from_events``) leaves out the forgotten events. Until multi-summary views
        (d616ab07, 2026-01-22) it showed one summary, the newest condensation's that has one (with its
        ``summary_offset``): a new summary replaced the previous one. Since, every summary stays (its event id is
        the condensation's with ``-summary``) until a condensation forgets it by that id; a condensation naming
        any such id is read that way. A condensation naming a response of the agent's own (the AgentResetCondenser
        of sources newer than 611629e6 answers the agent's ``new_context`` call so, with no summary) made no LLM
        call: that request's usage is not its."""
        ids = [eid for eid in ev.get("forgotten_event_ids") or [] if isinstance(eid, str)]
        forgotten = [s for eid in ids for s in self.event_seqs.get(eid, [])]
        multi = any(eid.endswith("-summary") for eid in ids)
        summary_seq = None
        if ev.get("summary") and ev.get("summary_offset", 0) is not None:
            if self.summary_seq is not None and not multi and self.summary_seq not in forgotten:
                forgotten.append(self.summary_seq)
            summary_seq = self.summary_seq = self.b.add("summary", "user", str(ev["summary"]), line=line, ts=ts).seq
            if isinstance(ev.get("id"), str):
                self.event_seqs[f"{ev['id']}-summary"] = [summary_seq]
        forgotten.sort()
        drop = seq_ranges(forgotten)
        event: dict[str, Any] = {
            "kind": "condensation",
            "step": self.b.step,
            "drop": drop,
            "summary_seq": summary_seq,
            "trigger": "manual" if self.manual_condense else "auto",
            "pre_tokens": None,
            "line": line,
        }
        rid = ev.get("llm_response_id") or ""
        if rid in self.responses:  # an agent response's reset (AgentResetCondenser): no call of its own
            pass
        elif (u := self.condenser_usage.get(rid) or self.agent_usage.get(rid)) is not None:  # eval metrics: combined
            self.event_usage.append((event, u))
            self.condenser_used.add(rid)
        elif "llm_response_id" not in ev:
            self.unlinked.append(event)
        self.manual_condense = False
        self.events.append(event)


READER = OpenHandsV1Reader()
