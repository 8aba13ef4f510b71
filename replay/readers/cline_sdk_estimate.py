"""The Cline SDK's own size estimate of a message, which its compaction triggers and cuts on, and what its request
builder sends of it (cline/cline 21cb8d2525, the same in v4.1.0).

``estimateTokens`` (sdk/packages/shared/src/llms/tokens.ts) is max(1, ceil(characters / 3));
``createTokenEstimator`` (core extensions/context/compaction-shared.ts) applies it to ``JSON.stringify(message)``.
The trigger counts the request's messages as ``MessageBuilder.buildForApi`` sends them (core session/services/
message-builder.ts: every string of a tool result longer than 8,000 characters, and an attached file's content
longer than 50,000, cut in the middle around a ``[truncated N chars]`` marker); the cut (``findCutIndex``) and
``tokensBefore`` count them as stored. The message is the one the runtime holds (agent-message-codec.ts: id, role,
content, ts, metadata, modelInfo, metrics), which is what ``<id>.messages.json`` stores. Characters are
JavaScript's: UTF-16 code units of the compact JSON. On the writer's own fixture (sdk/packages/core/fixtures/
session/session.messages.json, 32 messages) the stored estimates add up to 21,919, the ``tokensBefore`` its
agentic.compaction.json records.

Not modelled (the estimate and what is sent are larger there than the SDK's): the builder's rewrite of re-read
files' older results to ``[outdated - see the latest file content]`` once 64 KB of them are stale, its
200,000-character cap on assistant text, and its 6 MB budget for the whole request's text.
"""

from __future__ import annotations

import json
import math
from typing import Any

CHARS_PER_TOKEN = 3
MAX_TOOL_RESULT_CHARS = 8_000
MAX_FILE_CONTENT_CHARS = 50_000
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


def sent_result(content: Any) -> Any:
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


def sent_file(content: str) -> str:
    """An attached file's content as the builder sends it."""
    return truncate_middle(content, MAX_FILE_CONTENT_CHARS)


def _sent_block(block: Any) -> Any:
    if isinstance(block, dict) and block.get("type") == "tool_result" and "content" in block:
        return {**block, "content": sent_result(block["content"])}
    if isinstance(block, dict) and block.get("type") == "file" and isinstance(block.get("content"), str):
        return {**block, "content": sent_file(block["content"])}
    return block


def held_message(message: dict) -> dict:
    """The message's fields the runtime holds."""
    return {k: message[k] for k in FIELDS if message.get(k) is not None}


def api_message(message: dict) -> dict:
    """The message as the builder sends it: its tool results and attached files cut."""
    out = held_message(message)
    if isinstance(out.get("content"), list):
        out["content"] = [_sent_block(b) for b in out["content"]]
    return out


def _estimate(value: dict) -> int:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return max(1, math.ceil(js_length(text) / CHARS_PER_TOKEN))


def message_estimate(message: dict) -> int:
    """The SDK's estimate of ``message`` as sent (the trigger's), in its tokens: max(1, ceil(JSON characters / 3))."""
    return _estimate(api_message(message))


def stored_estimate(message: dict) -> int:
    """The SDK's estimate of ``message`` as it holds it (what its cut and ``tokensBefore`` count)."""
    return _estimate(held_message(message))
