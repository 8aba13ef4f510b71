"""The canonical JSONL format (docs/canonical-format.md): one record per line.

    {"type": "run", "format": "replay-canonical/1", "run": "r1", "model": "...", "harness": "..."}
    {"type": "item", "kind": "user_text", "role": "user", "text": "..."}
    {"type": "request", "ts": "...", "input_tokens": 10, "cache_read": 0, ...}
    {"type": "item", "kind": "tool_call", "tool_name": "read", "call_id": "c1", "args": {...}}
    {"type": "item", "kind": "tool_result", "call_id": "c1", "text": "..."}

Items before a request line are in that request's prompt; a new ``run`` line starts a new run.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from replay.model import KINDS, BadRecord, Record, Run
from replay.readers.base import ID_KEYS, ReadContext, iter_json_lines
from replay.readers.builder import RunBuilder

MARKER = "replay-canonical/1"
USAGE_KEYS = (
    "ts",
    "input_tokens",
    "cache_read",
    "cache_write",
    "output_tokens",
    "prompt_tokens",
    "model",
    "cache_write_1h",
)
ITEM_KEYS = ("is_error", "ts", "resource", "access")


class CanonicalReader:
    format = "canonical"

    def sniff(self, head: str, path: Path) -> bool:
        return MARKER in head.split("\n", 1)[0]

    def read(self, ctx: ReadContext) -> Iterator[Record]:
        builder: RunBuilder | None = None
        for entry in iter_json_lines(ctx, ID_KEYS):  # a canonical line's ts is written by hand: not an identity
            if isinstance(entry, BadRecord):
                yield entry
                continue
            line, obj = entry
            kind = obj.get("type") if isinstance(obj, dict) else None
            if kind == "run":
                if builder:
                    yield from builder
                run = Run(
                    run_id=ctx.run_id(obj.get("run")),
                    format=self.format,
                    source_path=str(ctx.path),
                    model=obj.get("model"),
                    harness=obj.get("harness"),
                    started_at=obj.get("started_at"),
                    metadata=obj.get("metadata") or {},
                )
                builder = RunBuilder(run)
            elif builder is None:
                reason = 'record before the first {"type": "run"} line; start the file with a run line'
                yield BadRecord(line, reason, str(obj))
            elif kind == "request":
                builder.request(line=line, **{k: obj.get(k) for k in USAGE_KEYS})
            elif kind == "item" and obj.get("kind") in KINDS:
                yield from self._item(builder, obj, line)
            else:
                yield BadRecord(
                    line,
                    f"unknown record type {kind!r} or item kind {obj.get('kind')!r}; item kinds are {', '.join(KINDS)}",
                    str(obj),
                )
        if builder:
            yield from builder

    @staticmethod
    def _item(builder: RunBuilder, obj: dict, line: int) -> Iterator[Record]:
        extra = {k: obj[k] for k in ITEM_KEYS if obj.get(k) is not None}
        if obj.get("new_turn"):
            builder.new_turn()
        derived = {k: v for k, v in extra.items() if k not in ("resource", "access")}
        if obj["kind"] == "tool_call":
            builder.call(
                obj.get("tool_name") or "",
                obj.get("args"),
                obj.get("call_id"),
                line=line,
                text=obj.get("text", ""),
                **derived,
            )
        elif obj["kind"] == "tool_result":
            builder.result(obj.get("text", ""), obj.get("call_id"), obj.get("tool_name"), line=line, **derived)
        else:
            builder.add(
                obj["kind"],
                obj.get("role", "user"),
                obj.get("text", ""),
                tool_name=obj.get("tool_name"),
                line=line,
                **extra,
            )
        return iter(())


READER = CanonicalReader()
