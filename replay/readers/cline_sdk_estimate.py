"""The Cline SDK's own size estimate of a message, which its compaction triggers and cuts on (cline/cline 21cb8d2525,
the same in v4.1.0): ``estimateTokens`` (sdk/packages/shared/src/llms/tokens.ts) is max(1, ceil(characters / 3));
``createTokenEstimator`` (core extensions/context/compaction-shared.ts) applies it to ``JSON.stringify(message)``,
and the trigger to the JSON of the request's messages as ``MessageBuilder.buildForApi`` sends them
(core session/services/message-builder.ts): every string of a tool result longer than 8,000 characters cut in the
middle around a ``[truncated N chars]`` marker. The message is the one the runtime holds (agent-message-codec.ts:
id, role, content, ts, metadata, modelInfo, metrics), which is what ``<id>.messages.json`` stores. Characters are
JavaScript's: UTF-16 code units of the compact JSON.

Not modelled (the estimate is larger there than the SDK's): the builder's rewrite of re-read files' older results
to ``[outdated - see the latest file content]`` once 64 KB of them are stale, and its 200,000-character cap on
assistant text and 50,000 on attached files.
"""

from __future__ import annotations

import json
import math
from typing import Any

CHARS_PER_TOKEN = 3
MAX_TOOL_RESULT_CHARS = 8_000
FIELDS = ("id", "role", "content", "ts", "metadata", "modelInfo", "metrics")


def js_length(text: str) -> int:
    """``text.length`` in JavaScript: UTF-16 code units."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _marker(removed: int) -> str:
    return f"\n\n...[truncated {removed} chars]...\n\n"


def truncate_middle(text: str, limit: int = MAX_TOOL_RESULT_CHARS) -> str:
    """``truncateMiddleByChars`` with the default marker: the head and tail of ``text`` around a marker naming the
    characters removed, ``limit`` characters in all (the marker's length depends on the count: two passes)."""
    if len(text) <= limit:
        return text
    keep = max(0, (limit - len(_marker(len(text) - limit))) // 2)
    removed = max(0, len(text) - keep * 2)
    marker = _marker(removed)
    keep = max(0, (limit - len(marker)) // 2)
    return text[:keep] + marker + (text[-keep:] if keep > 0 else "")


def _cut_strings(value: Any) -> Any:
    """Every string in a structured tool output cut (``truncateNestedStrings``); image blocks left whole."""
    if isinstance(value, str):
        return truncate_middle(value)
    if isinstance(value, list):
        return [_cut_strings(v) for v in value]
    if isinstance(value, dict):
        if value.get("type") == "image":
            return value
        return {k: _cut_strings(v) for k, v in value.items()}
    return value


def _api_result(content: Any) -> Any:
    """A tool result's content as the builder sends it (``truncateToolResultContent``)."""
    if isinstance(content, str):
        return truncate_middle(content)
    if not isinstance(content, list):
        return content
    out = []
    for entry in content:
        if isinstance(entry, dict) and entry.get("type") == "text" and isinstance(entry.get("text"), str):
            entry = {**entry, "text": truncate_middle(entry["text"])}
        elif isinstance(entry, dict) and entry.get("type") == "file" and isinstance(entry.get("content"), str):
            entry = {**entry, "content": truncate_middle(entry["content"])}
        elif isinstance(entry, dict) and entry.get("type") not in ("text", "image", "file"):
            entry = _cut_strings(entry)
        out.append(entry)
    return out


def api_message(message: dict) -> dict:
    """The message's fields the runtime holds, its tool results as the builder sends them."""
    out = {k: message[k] for k in FIELDS if message.get(k) is not None}
    blocks = out.get("content")
    if isinstance(blocks, list):
        out["content"] = [
            {**b, "content": _api_result(b["content"])}
            if isinstance(b, dict) and b.get("type") == "tool_result" and "content" in b
            else b
            for b in blocks
        ]
    return out


def message_estimate(message: dict) -> int:
    """The SDK's estimate of ``message`` in its tokens: max(1, ceil(JSON characters / 3))."""
    text = json.dumps(api_message(message), ensure_ascii=False, separators=(",", ":"))
    return max(1, math.ceil(js_length(text) / CHARS_PER_TOKEN))
