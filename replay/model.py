"""The canonical model: frozen, flat records that every reader produces."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

Kind = Literal[
    "system",
    "tool_defs",
    "user_text",
    "assistant_text",
    "reasoning",
    "tool_call",
    "tool_result",
    "summary",
    "attachment",
    "image",
]
KINDS: tuple[str, ...] = get_args(Kind)
Access = Literal["read", "write", "exec", "search", "other"]
Role = Literal["system", "user", "assistant", "tool"]


def content_hash(text: str) -> str:
    """Stable 128-bit hex digest of the text a tokenizer would see."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


@dataclass(frozen=True, slots=True)
class Run:
    """One agent session (a file may hold several)."""

    run_id: str
    format: str
    source_path: str
    model: str | None = None
    harness: str | None = None
    started_at: str | None = None
    parent_run_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Item:
    """One unit of context, appended to the history before request ``step``."""

    run_id: str
    seq: int
    step: int
    turn: int
    role: str
    kind: str
    text: str
    tool_name: str | None = None
    call_id: str | None = None
    args: str | None = None  # JSON text of the call arguments
    is_error: bool = False
    resource: str | None = None
    access: str | None = None
    ts: str | None = None
    line: int | None = None  # source line (or record index) it came from

    @property
    def payload(self) -> str:
        """The text a model would see for this item (what gets tokenized)."""
        if self.kind == "tool_call":
            return f"{self.tool_name or ''}({self.args or ''}){self.text}"
        return self.text

    @property
    def content_hash(self) -> str:
        return content_hash(self.payload)


@dataclass(frozen=True, slots=True)
class Request:
    """One model request: the prompt holds every item with ``item.step <= step``."""

    run_id: str
    step: int
    ts: str | None = None
    input_tokens: int | None = None  # uncached input as the provider reports it
    cache_read: int | None = None
    cache_write: int | None = None
    output_tokens: int | None = None
    prompt_tokens: int | None = None  # total prompt (input + cache read + cache write)
    model: str | None = None
    line: int | None = None
    cache_write_1h: int | None = None  # the part of cache_write kept 1 hour (None: the log does not split writes)


@dataclass(frozen=True, slots=True)
class BadRecord:
    """A record that could not be read: kept in quarantine, never dropped."""

    line: int
    reason: str
    raw: str


Record = Run | Item | Request | BadRecord


def dumps(obj: Any) -> str:
    """Compact, deterministic JSON."""
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)
