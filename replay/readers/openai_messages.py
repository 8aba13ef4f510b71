"""OpenAI chat-completions message arrays, per-request LLM logs (LiteLLM / OpenHands SDK) and Anthropic Messages logs.

Accepted shapes, detected by content:
- a JSON array of messages ``[{"role", "content", "tool_calls"...}]``, or JSONL with one message per line;
- an object holding ``messages`` (after optional scalar metadata such as ``model``), e.g. exported transcripts;
- a per-request log: ``messages`` (+ ``system``, ``tools``) as the prompt and ``response`` as its output.

A message array has a request before every assistant message. A per-request log is exactly one request: its
messages (and tool definitions) are the prompt and ``response.usage`` goes on that request. No prompt in the file
contains the response (the next request's log holds it as history), so it is kept in ``run.metadata``
(``response_text``, ``response_tool_calls``), not as items. Prompt-based ("non-function-calling") logs embed tool
calls as text: they stay ``assistant_text``, as MANIFEST.md counts them. Blocks may be OpenAI or Anthropic ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from replay.model import BadRecord, Record, Run, dumps
from replay.readers.base import ReadContext, iter_json_lines, load_json_document, text_of
from replay.readers.builder import RunBuilder
from replay.readers.json_fields import sub_dict, sub_list

# A tuple: a JSON value of any type (a damaged role, a list) tests for membership without hashing.
ROLES = ("system", "developer", "user", "assistant", "tool", "function")
OTHER_FORMAT_KEYS = {"info", "trajectory", "trajectory_format", "history", "samples", "eval", "type"}


def top_keys(text: str, start: int) -> set[str]:
    """Keys at the top level of the JSON object opening at ``text[start]`` (tolerates a truncated head)."""
    keys: set[str] = set()
    depth, i, n = 0, start, len(text)  # a tiny scanner: strings skipped, keys kept at depth 1
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            if depth == 1 and text[j + 1 : j + 64].lstrip().startswith(":"):
                keys.add(text[i + 1 : j])
            i = j
        elif c in "{[":
            depth += 1
        elif c in "}]" and (depth := depth - 1) <= 0:
            break
        i += 1
    return keys


def usage_fields(usage: Any) -> dict[str, int | None]:
    """Map OpenAI/LiteLLM (prompt_tokens, cached) or Anthropic (input_tokens uncached) usage onto a Request."""
    if not isinstance(usage, dict):
        return {}
    details = sub_dict(usage, "prompt_tokens_details")
    cache_read = usage.get("cache_read_input_tokens") or details.get("cached_tokens") or 0
    cache_write = usage.get("cache_creation_input_tokens") or 0
    output = usage.get("completion_tokens", usage.get("output_tokens"))
    raw = {
        "prompt_tokens": usage.get("prompt_tokens"),
        "input_tokens": usage.get("input_tokens"),
        "cache_read": cache_read,
        "cache_write": cache_write,
        "output_tokens": output,
    }
    if any(v is not None and (isinstance(v, bool) or not isinstance(v, int | float)) for v in raw.values()):
        return raw  # not numbers: RunBuilder.request quarantines them as they are
    if usage.get("prompt_tokens") is not None:
        prompt = usage["prompt_tokens"]
        uncached = max(prompt - cache_read - cache_write, 0)
    elif usage.get("input_tokens") is not None:
        prompt = (uncached := usage["input_tokens"]) + cache_read + cache_write
    else:
        return {}
    return {
        "prompt_tokens": prompt,
        "input_tokens": uncached,
        "cache_read": cache_read,
        "cache_write": cache_write,
        "output_tokens": output,
    }


def _iso(ts: Any) -> str | None:
    if not isinstance(ts, int | float) or isinstance(ts, bool):
        return ts if isinstance(ts, str) else None
    try:
        return datetime.fromtimestamp(ts, UTC).isoformat()
    except (OverflowError, ValueError, OSError):  # not a plausible epoch time: keep the number as written
        return str(ts)


class OpenAIMessagesReader:
    format = "openai-messages"
    version = 2  # 2: each image's pixel size (``image_sizes``; replay.tokens.images)

    def sniff(self, head: str, path: Path) -> bool:
        body = head.lstrip()
        start = len(head) - len(body)
        if body.startswith("["):
            first = body.find("{")
            return 0 < first and not body[1:first].strip() and "role" in top_keys(head, start + first)
        if not body.startswith("{"):
            return False
        keys = top_keys(head, start)
        if "messages" in keys and not keys & OTHER_FORMAT_KEYS:
            return '"role"' in head
        line = body.split("\n", 1)[0]  # JSONL: one message per line
        try:
            obj = json.loads(line)
        except ValueError:
            return False
        return isinstance(obj, dict) and obj.get("role") in ROLES and "type" not in obj

    def read(self, ctx: ReadContext) -> Iterator[Record]:
        doc: Any = load_json_document(ctx)
        if isinstance(doc, BadRecord):  # maybe JSONL, one message per line
            lines = list(iter_json_lines(ctx))
            if not lines or not isinstance(lines[0], tuple) or not isinstance(lines[0][1], dict):
                yield doc
                return
            yield from (e for e in lines if isinstance(e, BadRecord))
            doc = [e[1] for e in lines if isinstance(e, tuple)]
        meta = doc if isinstance(doc, dict) else {}
        messages = meta.get("messages") if meta else doc
        if not isinstance(messages, list):
            yield BadRecord(1, "expected a list of chat messages or an object with a 'messages' list", str(doc)[:2000])
            return
        response = meta["response"] if isinstance(meta.get("response"), dict) else None
        yield from self._run(ctx, meta, messages, response)

    def _run(self, ctx: ReadContext, meta: dict, messages: list, response: dict | None) -> Iterator[Record]:
        session = (meta.get("meta") or {}).get("session_meta") or {} if isinstance(meta.get("meta"), dict) else {}
        contexts = (meta.get("meta") or {}).get("turn_contexts") if session else None
        model = (
            meta.get("model")
            or (response or {}).get("model")
            or (meta.get("kwargs") or {}).get("model")
            or (contexts[0].get("model") if contexts else None)
        )
        info = {k: v for k, v in meta.items() if isinstance(v, (str, int, float, bool)) and k != "model"}
        info.update({"session_id": session["id"]} if session.get("id") else {})
        builder = RunBuilder(
            Run(
                run_id=ctx.run_id(),
                format=self.format,
                source_path=str(ctx.path),
                model=model,
                harness=session.get("originator"),
                started_at=session.get("timestamp"),
                metadata=info,
            )
        )
        if meta.get("system"):  # Anthropic Messages: system prompt and tools sit beside the messages
            builder.add("system", "system", text_of(meta["system"]), line=1)
        if tools := meta.get("tools") or (meta.get("kwargs") or {}).get("tools"):
            builder.add("tool_defs", "system", dumps(tools), line=1)
        for index, msg in enumerate(messages, start=1):
            if not isinstance(msg, dict) or msg.get("role") not in ROLES:
                yield BadRecord(
                    index, "message without a known role (system, developer, user, assistant, tool)", str(msg)[:2000]
                )
                continue
            _message(builder, msg, index, requests=response is None)
        if response is not None:
            _response(builder, meta, response)
        builder.scan_clips()  # tool output cut at its source ("<response clipped>", "tokens truncated")
        yield from builder


def _image_data(part: dict) -> object:
    """An image part's data: Chat Completions' ``image_url`` (an object with ``url``, or the URL), the Responses
    API's ``input_image.image_url``, Anthropic's ``source.data``."""
    url = part.get("image_url")
    if isinstance(url, dict):
        return url.get("url")
    source = part.get("source")
    return url if url is not None else source.get("data") if isinstance(source, dict) else None


def _message(b: RunBuilder, msg: dict, line: int, requests: bool) -> None:
    """Add one message; ``requests`` is False in a per-request log, whose history holds earlier outputs."""
    role, content = msg["role"], msg.get("content")
    ts = _iso((msg.get("_metadata") or {}).get("timestamp") if isinstance(msg.get("_metadata"), dict) else None)
    parts: list[Any] = content if isinstance(content, list) else [content]  # untrusted JSON values
    if role in ("system", "developer"):
        b.add("system", "system", text_of(content), line=line, ts=ts)
    elif role in ("tool", "function"):
        exit_code = (msg.get("metadata") or {}).get("exit_code") if isinstance(msg.get("metadata"), dict) else None
        b.result(
            text_of(content),
            msg.get("tool_call_id"),
            msg.get("name"),
            line=line,
            ts=ts,
            is_error=bool(msg.get("is_error")) or exit_code not in (None, 0),
        )
    elif role == "user":
        b.new_turn()
        for part in parts:
            kind = part.get("type") if isinstance(part, dict) else "text"
            if kind == "tool_result":
                b.result(
                    text_of(part.get("content")),
                    part.get("tool_use_id"),
                    line=line,
                    ts=ts,
                    is_error=bool(part.get("is_error")),
                )
            elif kind in ("image", "image_url", "input_image"):
                b.image("user", "", _image_data(part), line=line, ts=ts)
            elif text_of(part):
                b.add("user_text", "user", text_of(part), line=line, ts=ts)
    else:
        if requests:
            b.request(line=line, ts=ts, model=msg.get("model"), **usage_fields(msg.get("usage")))
        _assistant(b, msg, line, ts)


def _assistant(b: RunBuilder, msg: dict, line: int | None, ts: str | None) -> None:
    content = msg.get("content")
    if msg.get("reasoning_content"):
        b.add("reasoning", "assistant", str(msg["reasoning_content"]), line=line, ts=ts)
    items: list[Any] = content if isinstance(content, list) else [content]  # untrusted JSON values
    for part in items:
        kind = part.get("type") if isinstance(part, dict) else "text"
        if kind in ("thinking", "reasoning", "redacted_thinking"):
            b.add("reasoning", "assistant", text_of(part.get("thinking") or part.get("text") or part), line=line, ts=ts)
        elif kind == "tool_use":
            b.call(part.get("name") or "", part.get("input"), part.get("id"), line=line, ts=ts)
        elif kind == "tool_call":  # codex-export duplicate of tool_calls; used only when tool_calls is absent
            if not msg.get("tool_calls"):
                b.call(part.get("name") or "", part.get("arguments"), part.get("tool_call_id"), line=line, ts=ts)
        elif text_of(part):
            b.add("assistant_text", "assistant", text_of(part), line=line, ts=ts)
    for call in [c for c in [*(msg.get("tool_calls") or []), msg.get("function_call")] if isinstance(c, dict)]:
        fn = call.get("function", call) if isinstance(call.get("function"), dict) else call
        b.call(fn.get("name") or "", fn.get("arguments"), call.get("id"), line=line, ts=ts)


def _response(b: RunBuilder, meta: dict, response: dict) -> None:
    """The one request of a per-request log; its output goes to run metadata (see module docstring)."""
    choices = response.get("choices")
    first = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else None
    out = first.get("message", {}) if first is not None else response
    out = out if isinstance(out, dict) else {}
    b.request(ts=_iso(meta.get("timestamp")), model=response.get("model"), **usage_fields(response.get("usage")))
    content = out.get("content")
    parts = [p for p in content if isinstance(p, dict)] if isinstance(content, list) else []
    b.run.metadata["response_text"] = text_of(
        [p for p in parts if p.get("type") == "text"] if isinstance(content, list) else content
    )
    tool_calls = sub_list(out, "tool_calls")
    calls = [c["function"] if isinstance(c.get("function"), dict) else {} for c in tool_calls if isinstance(c, dict)]
    calls += [p for p in parts if p.get("type") == "tool_use"]
    b.run.metadata["response_tool_calls"] = [
        {"name": c.get("name"), "args": c.get("arguments", c.get("input"))} for c in calls
    ]


READER = OpenAIMessagesReader()
