"""inspect_ai JSON eval logs (``{"version", "status", "eval", "samples": [...]}``).

Each sample is a run (``ctx.run_id("<sample id>.<epoch>")``). Requests come from the sample's ``model`` events:
each event's ``input`` is the full prompt, so messages not seen before (by id) are appended, then the request
(with ``output.usage``), then the output message. A model event whose prompt starts with a different first
message (e.g. a model-graded scorer) is a separate conversation: a child run ``<sample>-<n>`` with
``parent_run_id`` set, so scorer prompts never count as context of the agent. Messages left in
``sample.messages`` after the last event are appended. Without model events, a request precedes every assistant
message (usage then only in ``run.metadata["model_usage"]``). ``attachment://`` references are resolved.

The tools of the first model event are a ``tool_defs`` item: for an ``openai/`` model as OpenAI's chat format
declares them (``replay.readers.openai_tools``), which is what its server counts; for other providers their JSON.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from replay.model import BadRecord, Record, Run, dumps
from replay.readers.base import ReadContext, load_json_document, text_of
from replay.readers.builder import RunBuilder, validate_usage
from replay.readers.json_fields import sub_dict, sub_list
from replay.readers.openai_tools import render_functions

SNIFF_RE = re.compile(r'"eval"\s*:\s*\{\s*"(?:eval_id|run_id|task)"\s*:')


def usage_fields(usage: Any) -> dict[str, int | None]:
    """inspect ModelUsage -> Request fields; the prompt total is total - output (providers differ on input).
    A count that is not a plausible number is passed on as it is, for the builder to quarantine."""
    if not isinstance(usage, dict) or usage.get("input_tokens") is None:
        return {}
    raw = {
        "input_tokens": usage["input_tokens"],
        "output_tokens": usage.get("output_tokens") or 0,
        "cache_read": usage.get("input_tokens_cache_read") or 0,
        "cache_write": usage.get("input_tokens_cache_write") or 0,
        "prompt_tokens": usage.get("total_tokens"),
    }
    counts, problem = validate_usage(raw)
    if problem:
        return raw
    out, read, write = counts["output_tokens"], counts["cache_read"], counts["cache_write"]
    total = counts["prompt_tokens"]
    prompt = total - out if total else counts["input_tokens"] + read + write
    return {
        "prompt_tokens": prompt,
        "input_tokens": max(prompt - read - write, 0),
        "cache_read": read,
        "cache_write": write,
        "output_tokens": out,
    }


def _resolve(value: Any, attachments: dict[str, str]) -> Any:
    if isinstance(value, str) and value.startswith("attachment://"):
        return attachments.get(value[len("attachment://") :], value)
    if isinstance(value, list):
        return [_resolve(v, attachments) for v in value]
    if isinstance(value, dict):
        return {k: _resolve(v, attachments) for k, v in value.items()}
    return value


class InspectAIReader:
    format = "inspect-ai"

    def sniff(self, head: str, path: Path) -> bool:
        return head.lstrip().startswith("{") and bool(SNIFF_RE.search(head)) and '"version"' in head

    def read(self, ctx: ReadContext) -> Iterator[Record]:
        doc = load_json_document(ctx)
        if isinstance(doc, BadRecord):
            yield doc
            return
        if not isinstance(doc, dict) or not isinstance(doc.get("eval"), dict):
            yield BadRecord(1, "not an inspect_ai eval log: expected an object with 'eval'", str(doc)[:2000])
            return
        ev = doc["eval"]
        meta = {k: ev.get(k) for k in ("eval_id", "run_id", "task", "task_id", "dataset") if ev.get(k) is not None}
        meta["status"] = doc.get("status")
        samples = doc.get("samples") or []
        for index, sample in enumerate(samples, start=1):
            if not isinstance(sample, dict) or not isinstance(sample.get("messages"), list):
                yield BadRecord(index, f"sample {index} has no 'messages' list", str(sample)[:2000])
                continue
            yield from _Sample(ctx, ev, meta, _resolve(sample, sample.get("attachments") or {}), index).read()


def _key(value: Any) -> Any:
    """An id as a dict or set key: a string or number as it is, any other JSON value (a damaged id) as its JSON."""
    return value if value is None or isinstance(value, (str, int, float)) else dumps(value)


class _Sample:
    """One sample: its main conversation and any side conversations (scorers)."""

    def __init__(self, ctx: ReadContext, ev: dict, meta: dict, sample: dict, index: int) -> None:
        self.ctx, self.ev, self.sample, self.index = ctx, ev, sample, index
        self.name = f"{sample.get('id', index)}.{sample.get('epoch', 1)}"
        self.meta = {
            **meta,
            "sample_id": sample.get("id"),
            "epoch": sample.get("epoch"),
            "model_usage": sample.get("model_usage"),
            "scores": sample.get("scores"),
        }
        self.convs: dict[Any, tuple[RunBuilder, set[Any]]] = {}
        self.spans: dict[Any, str] = {}

    def _builder(self, key: Any, span: str | None) -> tuple[RunBuilder, set[Any]]:
        if key not in self.convs:
            main = next(iter(self.convs.values()), None)
            suffix = self.name if main is None else f"{self.name}-{len(self.convs)}"
            meta = self.meta if main is None else {"span": span, "sample_id": self.sample.get("id")}
            run = Run(
                run_id=self.ctx.run_id(suffix),
                format="inspect-ai",
                source_path=str(self.ctx.path),
                model=self.ev.get("model"),
                harness="inspect_ai",
                started_at=self.ev.get("created"),
                parent_run_id=main[0].run.run_id if main else None,
                metadata=meta,
            )
            self.convs[key] = (RunBuilder(run), set())
        return self.convs[key]

    def tool_text(self, tools: Any) -> str:
        """``tools`` as the model's provider puts them in the prompt (OpenAI: its function namespace)."""
        provider = str(self.ev.get("model") or "").split("/", 1)[0]
        rendered = render_functions(tools) if provider == "openai" else None
        return rendered if rendered is not None else dumps(tools)

    def read(self) -> Iterator[Record]:
        events = [e for e in self.sample.get("events") or [] if isinstance(e, dict)]
        for e in events:
            if e.get("event") == "span_begin" and e.get("id"):
                self.spans[_key(e["id"])] = e.get("name") or e.get("type") or ""
        model_events = [e for e in events if e.get("event") == "model" and isinstance(e.get("input"), list)]
        messages = [m for m in self.sample["messages"] if isinstance(m, dict)]
        if not model_events:
            b, _ = self._builder(None, None)
            for m in messages:
                if m.get("role") == "assistant":
                    b.request(line=self.index)
                _message(b, m, self.index)
            yield from b
            return
        for e in model_events:
            prompt = [m for m in e["input"] if isinstance(m, dict)]
            span = self.spans.get(_key(e.get("span_id")))
            b, seen = self._builder(_key(prompt[0].get("id")) if prompt else None, span)
            if e.get("tools") and b.step == 0:
                b.add("tool_defs", "system", self.tool_text(e["tools"]), line=self.index)
            for m in prompt:
                if (mid := _key(m.get("id"))) not in seen:
                    seen.add(mid)
                    _message(b, m, self.index)
            output = sub_dict(e, "output")
            b.request(
                ts=e.get("timestamp"), model=output.get("model"), line=self.index, **usage_fields(output.get("usage"))
            )
            choices = sub_list(output, "choices")
            for choice in choices[:1]:
                if isinstance(choice, dict) and isinstance(choice.get("message"), dict):
                    seen.add(_key(choice["message"].get("id")))
                    _message(b, choice["message"], self.index, ts=e.get("timestamp"))
        main, seen = next(iter(self.convs.values()))
        for m in messages:
            if _key(m.get("id")) not in seen:
                _message(main, m, self.index)
        for b, _ in self.convs.values():
            yield from b


def _message(b: RunBuilder, m: dict, line: int, ts: str | None = None) -> None:
    role, content = m.get("role"), m.get("content")
    if role == "system":
        b.add("system", "system", text_of(content), line=line, ts=ts)
    elif role == "tool":
        error = m.get("error")
        b.result(
            text_of(content) or text_of(error),
            m.get("tool_call_id"),
            m.get("function"),
            line=line,
            ts=ts,
            is_error=bool(error),
        )
    else:
        if role == "user":
            b.new_turn()
        kind = "user_text" if role == "user" else "assistant_text"
        parts: list[Any] = content if isinstance(content, list) else [content]  # untrusted JSON values
        for part in parts:
            ptype = part.get("type") if isinstance(part, dict) else "text"
            if ptype == "reasoning":
                b.add("reasoning", "assistant", str(part.get("reasoning") or ""), line=line, ts=ts)
            elif ptype in ("image", "audio", "video"):
                b.add("image", role or "user", "", line=line, ts=ts)
            elif text_of(part):
                b.add(kind, role or "user", text_of(part), line=line, ts=ts)
        for call in m.get("tool_calls") or []:
            if isinstance(call, dict):
                b.call(call.get("function") or "", call.get("arguments"), call.get("id"), line=line, ts=ts)


READER = InspectAIReader()
