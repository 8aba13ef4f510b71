"""One inspect_ai sample (``EvalSample``) as runs: its main conversation and side conversations (scorers, roles).

Each ``model`` event's ``input`` is the prompt it sent. From inspect_ai 0.3.186 the log writer moves every event's
input to a pool (``events_data.messages``) and leaves ``input_refs``, ranges ``[start, end)`` into it; a pooled
message is stored once per content (its ``id`` is left out of that comparison, so two messages that say the same
share the first one's id). The prompt is therefore read by content: a request whose prompt is the previous prompt
and its output, extended, adds the new messages. A conversation is keyed by the model role (``ModelEvent.role``)
and the id of its first message (its content when messages carry no id, before inspect_ai 0.3.75: the model-graded
scorer's call then starts a conversation of its own); the first conversation is the sample's run, the others child runs.

A ``compaction`` event (inspect_ai 0.3.170 on: ``type`` summary, edit or trim, ``tokens_before``/``tokens_after``,
``metadata.trigger`` threshold or forced) precedes the first request that sends the compacted input; it is read as
a ``compaction`` context event there (docs/canonical-format.md): ``drop`` = the messages of the previous prompt
that request no longer starts with, the messages it sends in their place are items (the one inspect_ai marks
``metadata.summary`` the summary, copies and rewrites of dropped ones ``resent``). The summary strategy's own call
(the model event just before the compaction, whose completion the summary quotes) is no request: its usage is the
event's, and the messages it saw that no request had sent are items dropped by the event.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from replay.model import BadRecord, Record, Run, dumps
from replay.readers.base import ReadContext
from replay.readers.builder import RunBuilder, seq_ranges
from replay.readers.inspect_messages import (
    add_message,
    calls_of,
    completion_of,
    content_key,
    is_summary,
    key_of,
    message_key,
    native_compaction,
    same_message,
    summary_text,
)
from replay.readers.inspect_usage import usage_fields
from replay.readers.json_fields import sub_dict, sub_list
from replay.readers.openai_tools import render_functions

TRIGGERS = {"threshold": "auto", "forced": "manual"}  # CompactionEvent.metadata.trigger -> context event trigger
SUMMARY_TAIL = 80  # characters of the summariser's completion the summary message must quote
# an assistant message's metadata: tokens of encrypted reasoning the provider's usage leaves out, which inspect_ai's
# compaction count adds (0.3.218 to 0.3.260 at least; gone in 0.3.285)
REDACTED = "redacted_reasoning_tokens"


@dataclass
class _Sent:
    """A message of the last prompt (or its output) and the seqs of the items it was read as."""

    message: dict
    seqs: list[int]


@dataclass
class _Conv:
    builder: RunBuilder
    role: str | None = None
    seen: set[Any] = field(default_factory=set)  # message ids read as items
    seqs_by_id: dict[Any, list[int]] = field(default_factory=dict)
    sent: list[_Sent] = field(default_factory=list)
    last_output_id: Any = None
    not_extended: list[int] = field(default_factory=list)  # requests whose prompt did not extend the last one


@dataclass
class _Pending:
    """A compaction event waiting for the request that sends its result."""

    event: dict
    index: int
    summariser: dict | None
    summariser_input: list[dict] = field(default_factory=list)


class SampleReader:
    """Reads one sample's events into runs."""

    def __init__(
        self,
        ctx: ReadContext,
        ev: dict,
        meta: dict,
        sample: dict,
        index: int,
        version: tuple[int, int, int] | None,
        attempt: tuple[int, str] | None = None,
    ) -> None:
        """``attempt``: (n, the run id of the sample's run) for the events of an attempt that failed and was
        retried (``error_retries[n - 1]``): a run ``<sample>-retry<n>`` under the sample's run."""
        self.ctx, self.ev, self.sample, self.index, self.version = ctx, ev, sample, index, version
        self.name = f"{sample.get('id', index)}.{sample.get('epoch', 1)}" + (f"-retry{attempt[0]}" if attempt else "")
        self.parent = attempt[1] if attempt else None
        self.meta = {
            **meta,
            "sample_id": sample.get("id"),
            "epoch": sample.get("epoch"),
            "model_usage": sample.get("model_usage"),
            "scores": sample.get("scores"),
        }
        self.convs: dict[Any, _Conv] = {}
        self.by_role: dict[Any, _Conv] = {}  # the conversation each model role last sent
        self.spans: dict[Any, str] = {}
        self.bad: list[BadRecord] = []

    def _conv(self, key: Any, span: str | None, model: Any) -> _Conv:
        if key not in self.convs:
            main = next(iter(self.convs.values()), None)
            suffix = self.name if main is None else f"{self.name}-{len(self.convs)}"
            meta = self.meta if main is None else {"span": span, "sample_id": self.sample.get("id")}
            parent = main.builder.run.run_id if main else self.parent
            run = Run(
                run_id=self.ctx.run_id(suffix),
                format="inspect-ai",
                source_path=str(self.ctx.path),
                model=model if isinstance(model, str) and model else self.ev.get("model"),
                harness="inspect_ai",
                started_at=self.ev.get("created"),
                parent_run_id=parent,
                metadata=meta,
            )
            self.convs[key] = _Conv(RunBuilder(run))
        return self.convs[key]

    def _continued(self, role: str | None, prompt: list[dict]) -> _Conv | None:
        """The conversation of ``role`` whose last prompt and output this prompt extends, though its first message
        has another id: ``GenerateConfig.system_message`` is a new message (a new id) at every call."""
        last = self.by_role.get(role)
        if last is not None and last.sent and _common_prefix(last.sent, prompt) == len(last.sent):
            return last
        return None

    def tool_text(self, tools: Any) -> str:
        """``tools`` as the model's provider puts them in the prompt (OpenAI: its function namespace)."""
        provider = str(self.ev.get("model") or "").split("/", 1)[0]
        rendered = render_functions(tools) if provider == "openai" else None
        return rendered if rendered is not None else dumps(tools)

    def read(self) -> Iterator[Record]:
        events = [e for e in sub_list(self.sample, "events") if isinstance(e, dict)]
        for e in events:
            if e.get("event") == "span_begin" and e.get("id"):
                self.spans[key_of(e["id"])] = e.get("name") or e.get("type") or ""
        inputs = self._inputs(events)
        messages = [m for m in sub_list(self.sample, "messages") if isinstance(m, dict)]
        if not inputs and self.parent is not None:  # a failed attempt that made no model call
            yield from self.bad
            return
        if not inputs:
            yield from self.bad
            conv = self._conv(None, None, None)
            for m in messages:
                if m.get("role") == "assistant":
                    conv.builder.request(line=self.index)
                add_message(conv.builder, m, self.index)
            yield from conv.builder
            return
        summarisers = self._summarisers(events, inputs)
        pending: dict[Any, _Pending] = {}
        for i, e in enumerate(events):
            if e.get("event") == "compaction":
                role = e.get("role") if isinstance(e.get("role"), str) else None
                s = summarisers.get(i)
                pending[role] = _Pending(e, i, None if s is None else events[s], [] if s is None else inputs[s])
            elif i in inputs and i not in summarisers.values():
                self._request(e, inputs[i], pending)
        yield from self.bad
        for role, p in pending.items():  # a compaction no request followed
            if (last := self.by_role.get(role)) is not None:
                self._event(last, p, drop=[], resent=[])
        main = next(iter(self.convs.values()))
        self._trailing(main, messages)
        for conv in self.convs.values():
            if conv.not_extended:
                conv.builder.warn(
                    self.index,
                    f"sample {self.name}: the prompt of request(s) {conv.not_extended[:20]} does not extend the "
                    "previous prompt and its output, and no compaction is logged before it: read as the previous "
                    "messages plus the new ones",
                )
            yield from conv.builder
        if self.parent is None:
            yield from self._retries(main.builder.run.run_id)

    def _retries(self, parent: str) -> Iterator[Record]:
        """Attempts of the sample that failed and were retried (``error_retries``, each with the events it logged):
        their model calls were made and billed, so each is a run under the sample's."""
        for n, retry in enumerate(sub_list(self.sample, "error_retries"), start=1):
            if isinstance(retry, dict) and sub_list(retry, "events"):
                attempt = {**self.sample, "events": retry["events"], "messages": [], "error_retries": None}
                meta = {**self.meta, "retry_error": retry.get("message")}
                yield from SampleReader(self.ctx, self.ev, meta, attempt, self.index, self.version, (n, parent)).read()

    def _inputs(self, events: list[dict]) -> dict[int, list[dict]]:
        """Each model event's prompt by event index: its ``input``, or its ``input_refs`` resolved in the pool."""
        # the interim shape inspect_ai 0.3.195 to 0.3.199 wrote with INSPECT_LOG_FORMAT_V3 set (log/_log.py at e1b3ff7):
        # the pool as the sample's own ``message_pool``, before #3519 moved it into ``events_data``
        pool = sub_list(sub_dict(self.sample, "events_data"), "messages") or sub_list(self.sample, "message_pool")
        out: dict[int, list[dict]] = {}
        for i, e in enumerate(events):
            if e.get("event") != "model" or e.get("pending") is True:
                continue
            given, refs = e.get("input"), e.get("input_refs")
            if isinstance(given, list) and (given or not isinstance(refs, list)):
                out[i] = [m for m in given if isinstance(m, dict)]
            elif isinstance(refs, list):
                prompt = _expand(refs, pool)
                if prompt is None:
                    self.bad.append(
                        BadRecord(
                            self.index,
                            f"sample {self.name}: model event {i}: input_refs {dumps(refs)[:200]} are not ranges "
                            f"within the message pool of {len(pool)} messages (events_data or message_pool); "
                            "the event is not read",
                            dumps(e)[:2000],
                        )
                    )
                    continue
                out[i] = prompt
        return out

    def _summarisers(self, events: list[dict], inputs: dict[int, list[dict]]) -> dict[int, int]:
        """compaction event index -> the model event that wrote its summary: the last model event before it, when the
        summary message the next request sends quotes that event's completion."""
        found: dict[int, int] = {}
        last: int | None = None
        for i, e in enumerate(events):
            if e.get("event") == "compaction" and last is not None:
                after = next((j for j in sorted(inputs) if j > i), None)
                summary = summary_text(inputs[after]) if after is not None else None
                tail = completion_of(events[last]).strip()[-SUMMARY_TAIL:]
                if summary and tail and tail in summary:
                    found[i] = last
                last = None
            elif i in inputs:
                last = i
        return found

    def _request(self, e: dict, prompt: list[dict], pending: dict[Any, _Pending]) -> None:
        role = e.get("role") if isinstance(e.get("role"), str) else None
        waiting = pending.pop(role, None)
        span = self.spans.get(key_of(e.get("span_id")))
        conv = self.by_role.get(role) if waiting is not None else None
        if conv is None:
            key = (role, message_key(prompt[0]) if prompt else None)
            conv = self.convs.get(key) or self._continued(role, prompt) or self._conv(key, span, e.get("model"))
            conv.role = role
        self.by_role[role] = conv
        b = conv.builder
        if e.get("tools") and b.step == 0:
            b.add("tool_defs", "system", self.tool_text(e["tools"]), line=self.index)
        if waiting is not None:
            self._summariser_saw(conv, waiting.summariser_input)
        kept = _common_prefix(conv.sent, prompt)
        if kept == len(conv.sent):
            conv.sent.extend(self._add(conv, m) for m in prompt[kept:])
            if waiting is not None:
                self._event(conv, waiting, drop=[], resent=[])
        elif waiting is not None:
            self._compact(conv, waiting, prompt, kept)
        else:
            conv.not_extended.append(b.step)
            sent = []
            for m in prompt:
                mid = message_key(m)
                sent.append(self._add(conv, m) if mid not in conv.seen else _Sent(m, conv.seqs_by_id.get(mid, [])))
            conv.sent = sent
        output = sub_dict(e, "output")
        provider = str(e.get("model") or self.ev.get("model") or "").split("/", 1)[0]
        usage, note = usage_fields(output, provider, self.version)
        if e.get("cache") == "read":  # served from inspect_ai's own generate cache: the provider was not called
            b.run.metadata.setdefault("generate_cache_reads", []).append(b.step)
            usage = {}
        if note:
            b.warn(self.index, f"sample {self.name}: request {b.step}: {note}")
        b.request(ts=e.get("timestamp"), model=output.get("model"), line=self.index, **usage)
        if e.get("error"):  # the call failed: its output is the empty placeholder inspect_ai logs, not a reply
            b.run.metadata.setdefault("failed_requests", []).append(b.step - 1)
            return
        for choice in sub_list(output, "choices")[:1]:
            if isinstance(choice, dict) and isinstance(choice.get("message"), dict):
                out = choice["message"]
                conv.last_output_id = message_key(out)
                thoughts = sub_dict(output, "usage").get("reasoning_tokens")
                thoughts = thoughts if type(thoughts) is int and 0 <= thoughts < 10**9 else None
                conv.sent.append(self._add(conv, out, ts=e.get("timestamp"), thoughts=thoughts))

    def _add(
        self, conv: _Conv, m: dict, ts: str | None = None, kind: str | None = None, thoughts: int | None = None
    ) -> _Sent:
        first = conv.builder.seq
        add_message(conv.builder, m, self.index, ts=ts, kind=kind, thoughts=thoughts)
        if REDACTED in sub_dict(m, "metadata"):  # 0.3.218 on: the compaction count adds it (OpenAI, store=false)
            conv.builder.run.metadata[REDACTED] = True
        seqs = list(range(first, conv.builder.seq))
        mid = message_key(m)
        conv.seen.add(mid)
        conv.seqs_by_id.setdefault(mid, seqs)
        return _Sent(m, seqs)

    def _summariser_saw(self, conv: _Conv, prompt: list[dict]) -> None:
        """Messages the summariser's call sent that no request of the conversation had (results since the last
        request): items, which the compaction drops with the rest."""
        kept = _common_prefix(conv.sent, prompt)
        if kept == len(conv.sent) and len(prompt) > kept + 1:  # its last message is the summarisation prompt
            conv.sent.extend(self._add(conv, m) for m in prompt[kept:-1])

    def _compact(self, conv: _Conv, waiting: _Pending, prompt: list[dict], kept: int) -> None:
        gone = conv.sent[kept:]
        drop = seq_ranges(s for g in gone for s in g.seqs)
        ids = {key_of(g.message.get("id")) for g in gone} - {None}
        contents = {content_key(g.message) for g in gone}
        call_ids = {key_of(c.get("id")) for g in gone for c in calls_of(g.message)} - {None}
        result_ids = {key_of(g.message.get("tool_call_id")) for g in gone} - {None}
        event = self._event(conv, waiting, drop=drop, resent=[])
        sent, resent = conv.sent[:kept], []
        for m in prompt[kept:]:
            if is_summary(m):
                item = self._add(conv, m, kind="summary")
                event["summary_seq"] = item.seqs[0] if item.seqs else None
                block = native_compaction(m)
                if block is not None:  # the provider's compaction block (native), not inspect_ai's summary
                    event["summary_native"] = True
                if block is not None and block.get("encrypted_content"):
                    event["summary_encrypted"] = True
            else:
                item = self._add(conv, m)
                tool_call = key_of(m.get("tool_call_id"))
                if (
                    key_of(m.get("id")) in ids
                    or content_key(m) in contents
                    or (tool_call is not None and tool_call in result_ids)
                    or any(key_of(c.get("id")) in call_ids for c in calls_of(m))
                ):
                    resent.extend(item.seqs)
            sent.append(item)
        if resent:
            event["resent"] = seq_ranges(resent)
        conv.sent = sent

    def _event(self, conv: _Conv, waiting: _Pending, drop: list[list[int]], resent: list[list[int]]) -> dict:
        e = waiting.event
        meta = sub_dict(e, "metadata")
        logged = meta.get("trigger")
        extra: dict[str, Any] = {
            "compaction_type": e.get("type"),
            "source": e.get("source"),
            "tokens_after": e.get("tokens_after"),
            "strategy": meta.get("strategy_applied") or meta.get("strategy"),
        }
        if logged is not None and logged != "threshold":  # forced: after the model refused an overflowing prompt
            extra["trigger_logged"] = logged
        if resent:
            extra["resent"] = resent
        if (s := waiting.summariser) is not None:
            out = sub_dict(s, "output")
            fields, _ = usage_fields(out, str(s.get("model") or "").split("/", 1)[0], self.version)
            if fields and all(type(v) is int for v in fields.values()):  # a damaged count: no usage
                extra["usage"] = {
                    "prompt": fields["prompt_tokens"],
                    "input": fields["input_tokens"],
                    "cache_read": fields["cache_read"],
                    "cache_write": fields["cache_write"],
                    "output": fields["output_tokens"],
                }
            extra["summariser_model"] = out.get("model") or s.get("model")
        pre = e.get("tokens_before")
        return conv.builder.context_event(
            "compaction",
            drop=drop,
            trigger=TRIGGERS.get(logged) if isinstance(logged, str) else None,
            pre_tokens=pre if isinstance(pre, int) and not isinstance(pre, bool) else None,
            line=self.index,
            event_index=waiting.index,
            **{k: v for k, v in extra.items() if v is not None},
        )

    def _trailing(self, main: _Conv, messages: list[dict]) -> None:
        """Messages the sample ends with that no request sent: after the main conversation's last output when the
        history holds it, else every message whose id no request sent."""
        ids = [message_key(m) for m in messages]
        found = main.last_output_id is not None and main.last_output_id in ids
        start = ids.index(main.last_output_id) + 1 if found else 0
        for m in messages[start:]:
            if message_key(m) not in main.seen:
                self._add(main, m)


def _expand(refs: list[Any], pool: list[Any]) -> list[dict] | None:
    """``[[start, end), ...]`` over the pool as messages; None when a range is not one or falls outside it."""
    out: list[dict] = []
    for ref in refs:
        if not (isinstance(ref, list) and len(ref) == 2 and all(type(x) is int for x in ref)):
            return None
        start, end = ref
        if not 0 <= start <= end <= len(pool):
            return None
        out.extend(m for m in pool[start:end] if isinstance(m, dict))
    return out


def _common_prefix(sent: list[_Sent], prompt: list[dict]) -> int:
    n = 0
    for s, m in zip(sent, prompt, strict=False):
        if not same_message(s.message, m):
            break
        n += 1
    return n
