"""inspect_ai eval logs: the ``.json`` document (``{"version", "status", "eval", "samples": [...]}``) and the
``.eval`` zip archive (``header.json`` and ``samples/<id>_epoch_<n>.json``: replay.readers.inspect_archive).

Each sample is a run (``ctx.run_id("<sample id>.<epoch>")``), read by replay.readers.inspect_sample: requests come
from its ``model`` events, each event's prompt (``input``, or ``input_refs`` into the sample's message pool) is what
it sent, compaction events are context events, and a side conversation (a scorer, another model role) is a child
run. Without model events, a request precedes every assistant message (usage then only in
``run.metadata["model_usage"]``). ``attachment://`` references are resolved. Usage is read by the version of
inspect_ai that wrote the log (``eval.packages.inspect_ai``; replay.readers.inspect_usage).

The tools of a conversation's first model event are a ``tool_defs`` item: for an ``openai/`` model as OpenAI's chat
format declares them (``replay.readers.openai_tools``), which is what its server counts; for other providers their
JSON.

The plan's steps record each solver's arguments with their defaults (``EvalPlanStep.params``); a ``compaction``
argument (``react()``, ``deep_agent()``) is kept in ``run.metadata["compaction_plan"]`` (one entry per such step:
the solver and the argument): from 0.3.209 a strategy is logged as its ``_repr_params_()`` (``type``,
``threshold``, ``memory`` and the strategy's own fields; the ``prompt`` and ``instructions`` texts are kept only as
whether they were given), before that as its class name; ``None`` is no compaction, ``"auto"`` deep_agent()'s
default ``CompactionAuto()``. replay.policies.inspect_compaction chooses the preset from it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from replay.model import BadRecord, Record
from replay.readers.base import ReadContext, load_json_document
from replay.readers.inspect_archive import is_archive_head, read_archive
from replay.readers.inspect_sample import SampleReader
from replay.readers.inspect_usage import parse_version
from replay.readers.json_fields import sub_dict

SNIFF_RE = re.compile(r'"eval"\s*:\s*\{\s*"(?:eval_set_id|eval_id|run_id|task)"\s*:')


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
    # 2: .eval archives, pooled inputs (input_refs), compaction events, usage by inspect_ai version; 3: the plan's
    # compaction arguments; 4: messages without ids (before 0.3.75) keyed by content: a scorer's call is its own run;
    # the interim sample-level message_pool (0.3.195-0.3.199 with INSPECT_LOG_FORMAT_V3) read as the pool; 5: each
    # image's pixel size (``image_sizes``; replay.tokens.images)
    version = 5

    def sniff(self, head: str, path: Path) -> bool:
        if is_archive_head(head):
            return path.suffix.lower() == ".eval" or "_journal/start.json" in head[:4096] or "header.json" in head
        return head.lstrip().startswith("{") and bool(SNIFF_RE.search(head)) and '"version"' in head

    def read(self, ctx: ReadContext) -> Iterator[Record]:
        with ctx.path.open("rb") as fh:
            zipped = fh.read(4) == b"PK\x03\x04"
        if zipped:
            docs = read_archive(ctx)
            header = next(docs)
            if isinstance(header, BadRecord):
                yield header
                return
            yield from self._samples(ctx, header, docs)
            return
        doc = load_json_document(ctx)
        if isinstance(doc, BadRecord):
            yield doc
            return
        if not isinstance(doc, dict) or not isinstance(doc.get("eval"), dict):
            yield BadRecord(1, "not an inspect_ai eval log: expected an object with 'eval'", str(doc)[:2000])
            return
        yield from self._samples(ctx, doc, doc.get("samples") or [])

    def _samples(self, ctx: ReadContext, doc: dict, samples: Iterable[Any]) -> Iterator[Record]:
        ev = sub_dict(doc, "eval")
        meta = {k: ev.get(k) for k in ("eval_id", "run_id", "task", "task_id", "dataset") if ev.get(k) is not None}
        meta["status"] = doc.get("status")
        written_by = sub_dict(ev, "packages").get("inspect_ai")
        if written_by is not None:
            meta["inspect_ai_version"] = written_by
        if doc.get("version") is not None:
            meta["log_version"] = doc.get("version")
        compaction = plan_compaction(doc.get("plan"))
        if compaction:
            meta["compaction_plan"] = compaction
        version = parse_version(written_by)
        for index, sample in enumerate(samples, start=1):
            if isinstance(sample, BadRecord):
                yield sample
                continue
            if not isinstance(sample, dict) or not isinstance(sample.get("messages"), list):
                yield BadRecord(index, f"sample {index} has no 'messages' list", str(sample)[:2000])
                continue
            transcript = sub_dict(sample, "transcript")  # logs before EvalSample.events: {events, content}
            if "events" not in sample and transcript:
                sample = {**sample, "events": transcript.get("events"), "attachments": transcript.get("content")}
            resolved = _resolve(sample, sub_dict(sample, "attachments"))
            yield from SampleReader(ctx, ev, meta, resolved, index, version).read()


TEXTS = ("prompt", "instructions")  # strategy fields whose text is not kept, only whether it was given


def plan_compaction(plan: Any) -> list[dict]:
    """The plan steps (and finish step) that take a ``compaction`` argument: [{"solver", "compaction"}, ...]."""
    if not isinstance(plan, dict):
        return []
    steps = [s for s in (plan.get("steps") or []) if isinstance(s, dict)]
    finish = plan.get("finish")
    if isinstance(finish, dict) and finish not in steps:
        steps.append(finish)
    out = []
    for step in steps:
        params = step.get("params")
        if not isinstance(params, dict) or "compaction" not in params:
            continue
        value = params["compaction"]
        if isinstance(value, dict):
            value = {k: (v is not None) if k in TEXTS else v for k, v in value.items()}
        out.append({"solver": step.get("solver"), "compaction": value})
    return out


READER = InspectAIReader()
