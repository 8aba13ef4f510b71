"""inspect_ai chat messages (``ChatMessage`` as logged) as items, and how the reader compares them."""

from __future__ import annotations

from typing import Any

from replay.model import dumps
from replay.readers.base import text_of
from replay.readers.builder import RunBuilder
from replay.readers.json_fields import sub_dict, sub_list


def key_of(value: Any) -> Any:
    """An id as a dict or set key: a string or number as it is, any other JSON value (a damaged id) as its JSON."""
    return value if value is None or isinstance(value, (str, int, float)) else dumps(value)


def content_key(m: dict) -> str:
    """A message as the message pool compares it: everything but its id."""
    return dumps({k: v for k, v in m.items() if k != "id"})


def message_key(m: dict) -> Any:
    """What tells a message apart from the others of its sample: its id, or its content when it has none (inspect_ai
    before 0.3.75 gave messages no id, so a scorer's or another role's call could not be told from the main
    conversation by an id)."""
    return key_of(m["id"]) if m.get("id") is not None else content_key(m)


def same_message(a: dict, b: dict) -> bool:
    """Whether two logged messages say the same, their ids aside (as the message pool compares them). A pooled
    message resolves to the same object wherever it is sent, so the common case costs nothing."""
    if a is b:
        return True
    if a.keys() - {"id"} != b.keys() - {"id"}:
        return False
    return all(k == "id" or a[k] == b[k] for k in a)


def calls_of(m: dict) -> list[dict]:
    return [c for c in sub_list(m, "tool_calls") if isinstance(c, dict)]


def completion_of(e: dict) -> str:
    for choice in sub_list(sub_dict(e, "output"), "choices")[:1]:
        if isinstance(choice, dict) and isinstance(choice.get("message"), dict):
            return plain(choice["message"].get("content"))
    return ""


def summary_text(prompt: list[dict]) -> str | None:
    for m in prompt:
        if sub_dict(m, "metadata").get("summary"):
            return plain(m.get("content"))
    return None


def native_compaction(m: dict) -> dict | None:
    """The provider's compaction block a message carries (native compaction: a ``data`` part whose
    ``compaction_metadata`` is Anthropic's ``anthropic_compact``, with its summary as ``content``, or OpenAI's
    ``openai_compact``, ``encrypted_content`` only), or None."""
    content = m.get("content")
    for part in content if isinstance(content, list) else []:
        if isinstance(part, dict) and part.get("type") == "data":
            block = sub_dict(sub_dict(part, "data"), "compaction_metadata")
            if block:
                return block
    return None


def is_summary(m: dict) -> bool:
    """Whether a message stands in for a compacted history: inspect_ai's summary (``metadata.summary``, the
    summary strategy) or a provider's compaction block (native compaction)."""
    return bool(sub_dict(m, "metadata").get("summary")) or native_compaction(m) is not None


def plain(content: Any) -> str:
    """A message's text: its text parts, a native compaction block's readable summary; no reasoning."""
    parts: list[Any] = content if isinstance(content, list) else [content]
    texts = []
    for p in parts:
        if isinstance(p, dict) and p.get("type") == "reasoning":
            continue
        if isinstance(p, dict) and p.get("type") == "data":
            texts.append(text_of(sub_dict(sub_dict(p, "data"), "compaction_metadata").get("content")))
        else:
            texts.append(text_of(p))
    return "\n".join(t for t in texts if t)


def add_message(
    b: RunBuilder, m: dict, line: int, ts: str | None = None, kind: str | None = None, thoughts: int | None = None
) -> None:
    """A message as items. Reasoning the provider returned encrypted (``redacted``: OpenAI's encrypted_content,
    Anthropic's redacted thinking, kept in ``reasoning``) is an item holding only its readable summary; its size is
    the call's ``reasoning_tokens`` (``thoughts``, given for a call's output: the first such part takes them all), in
    ``runs.metadata.reasoning_tokens`` as Codex's encrypted reasoning is."""
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
    elif kind == "summary":
        b.add("summary", role if isinstance(role, str) else "user", plain(content), line=line, ts=ts)
    else:
        if role == "user":
            b.new_turn()
        kind = "user_text" if role == "user" else "assistant_text"
        parts: list[Any] = content if isinstance(content, list) else [content]  # untrusted JSON values
        for part in parts:
            ptype = part.get("type") if isinstance(part, dict) else "text"
            if ptype == "reasoning" and part.get("redacted") is True:
                item = b.add("reasoning", "assistant", text_of(part.get("summary")), line=line, ts=ts)
                if thoughts is not None:
                    b.run.metadata.setdefault("reasoning_tokens", []).append([item.seq, thoughts])
                    thoughts = 0
            elif ptype == "reasoning":
                b.add("reasoning", "assistant", str(part.get("reasoning") or ""), line=line, ts=ts)
            elif ptype in ("image", "audio", "video"):  # ContentImage.image: a data URL or a link
                b.image(role or "user", "", part.get("image") if ptype == "image" else None, line=line, ts=ts)
            elif text_of(part):
                b.add(kind, role or "user", text_of(part), line=line, ts=ts)
        for call in m.get("tool_calls") or []:
            if isinstance(call, dict):
                b.call(call.get("function") or "", call.get("arguments"), call.get("id"), line=line, ts=ts)
