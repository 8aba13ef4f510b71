"""Gemini CLI chat recordings (~/.gemini/tmp/<project>/chats/session-*.json or .jsonl).

Two layouts, as the CLI's ChatRecordingService writes them:
- JSON (<= 0.3x): one object ``{sessionId, projectHash, startTime, lastUpdated, messages[], kind?}``;
- JSONL (>= 0.40): line 1 is the metadata record, then MessageRecords, ``{"$set": {...}}`` metadata patches and
  ``{"$rewindTo": id}`` (drop that message and everything after it). A message is appended again with the same
  ``id`` when it changes (e.g. its tool calls finish): the last copy wins, at the place of the first.

Messages: ``user`` -> user_text (``content``, what the model got, not ``displayContent``); ``gemini`` -> one
request, then reasoning (``thoughts`` subject/description), assistant_text and, per ``toolCalls[]`` entry, a tool
call and its result (``result[].functionResponse.response``); ``info``/``error``/``warning`` are UI notes, kept
in ``runs.metadata.notes`` but not sent to the model.

Usage per gemini message ``tokens``: ``input`` includes ``cached`` (prompt_tokens = input, cache_read = cached,
input_tokens = input - cached; no cache-write count); output_tokens = output + thoughts (billed output, as
OpenAI's completion_tokens includes reasoning).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from replay.model import BadRecord, Record, Run
from replay.readers.aliases import add_call
from replay.readers.base import ReadContext, iter_json_lines, load_json_document, text_of
from replay.readers.builder import RunBuilder

MESSAGE_TYPES = {"user", "gemini", "info", "error", "warning"}
NOTE_TYPES = {"info", "error", "warning"}
GEMINI_LINE_RE = re.compile(r'^\{"id":"[^"]+","timestamp":"[^"]+","type":"(?:user|gemini|info)"', re.M)


def _is_message(obj: Any) -> bool:
    return isinstance(obj, dict) and obj.get("type") in MESSAGE_TYPES and "id" in obj and "timestamp" in obj


class GeminiCliReader:
    format = "gemini-cli"

    def sniff(self, head: str, path: Path) -> bool:
        if head.lstrip()[:1] == "{" and '"sessionId"' in head and '"projectHash"' in head:
            return True
        return '"$set"' in head and bool(GEMINI_LINE_RE.search(head))  # JSONL with a damaged first line

    def read(self, ctx: ReadContext) -> Iterator[Record]:
        meta: dict[str, Any] = {}
        messages: dict[str, tuple[int, dict]] = {}  # id -> (line, last copy); dict keeps first-seen order
        bad: list[BadRecord] = []
        if self._is_document(ctx):
            doc = load_json_document(ctx)
            if isinstance(doc, BadRecord):
                yield doc
                return
            if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
                yield BadRecord(1, "Gemini CLI session JSON without a 'messages' list", str(doc)[:2000])
                return
            meta = {k: v for k, v in doc.items() if k != "messages"}
            for n, msg in enumerate(doc["messages"]):
                if _is_message(msg):
                    messages[msg["id"]] = (n, msg)
                else:
                    bad.append(BadRecord(n, f"messages[{n}] is not a Gemini CLI message record", str(msg)[:2000]))
        else:
            for entry in iter_json_lines(ctx):
                if isinstance(entry, BadRecord):
                    bad.append(entry)
                    continue
                line, obj = entry
                if _is_message(obj):
                    messages[obj["id"]] = (line, obj)
                elif isinstance(obj, dict) and "$rewindTo" in obj:
                    ids = list(messages)
                    if obj["$rewindTo"] in messages:
                        for mid in ids[ids.index(obj["$rewindTo"]):]:
                            del messages[mid]
                elif isinstance(obj, dict) and isinstance(obj.get("$set"), dict):
                    meta.update(obj["$set"])
                elif isinstance(obj, dict) and "sessionId" in obj:
                    meta.update(obj)
                else:
                    bad.append(BadRecord(line, "not a Gemini CLI record (message, $set, $rewindTo or session "
                                         "metadata)", str(obj)[:2000]))
        yield from bad
        yield from self._run(ctx, meta, list(messages.values()))

    @staticmethod
    def _is_document(ctx: ReadContext) -> bool:
        """A single JSON object (pretty-printed or one line holding ``messages``) rather than JSONL."""
        with ctx.path.open("rb") as fh:
            first = fh.readline().strip()
        if first == b"{":  # pretty-printed
            return True
        try:
            obj = json.loads(first)
        except ValueError:
            return False  # a damaged first line of a JSONL
        return isinstance(obj, dict) and isinstance(obj.get("messages"), list)

    def _run(self, ctx: ReadContext, meta: dict, messages: list[tuple[int, dict]]) -> Iterator[Record]:
        info = {k: meta[k] for k in ("sessionId", "projectHash", "kind", "lastUpdated", "summary", "directories")
                if meta.get(k) is not None}
        model = next((m.get("model") for _, m in messages if m.get("type") == "gemini" and m.get("model")), None)
        run = Run(run_id=ctx.run_id(), format=self.format, source_path=str(ctx.path), model=model,
                  harness="gemini-cli", started_at=meta.get("startTime"), metadata=info)
        b = RunBuilder(run)
        for line, msg in messages:
            kind, ts = msg["type"], msg.get("timestamp")
            if kind in NOTE_TYPES:
                note = {"type": kind, "line": line, "text": text_of(msg.get("content"))}
                run.metadata.setdefault("notes", []).append(note)
            elif kind == "user":
                b.new_turn()
                b.add("user_text", "user", _content_text(msg.get("content")), line=line, ts=ts)
            else:
                self._gemini(b, msg, line, ts)
        yield from b

    @staticmethod
    def _gemini(b: RunBuilder, msg: dict, line: int, ts: str | None) -> None:
        tokens = msg.get("tokens") if isinstance(msg.get("tokens"), dict) else {}
        usage: dict[str, Any] = {}
        if tokens:
            prompt, cached = tokens.get("input"), tokens.get("cached") or 0
            output = (tokens.get("output") or 0) + (tokens.get("thoughts") or 0)
            usage = {"prompt_tokens": prompt, "cache_read": cached,
                     "input_tokens": max(prompt - cached, 0) if isinstance(prompt, int) else None,
                     "output_tokens": output}
        b.request(line=line, ts=ts, model=msg.get("model"), **usage)
        thoughts = [t for t in msg.get("thoughts") or [] if isinstance(t, dict)]
        if thoughts:
            text = "\n\n".join(f"**{t.get('subject') or ''}** {t.get('description') or ''}".strip() for t in thoughts)
            b.add("reasoning", "assistant", text, line=line, ts=ts)
        if text := _content_text(msg.get("content")):
            b.add("assistant_text", "assistant", text, line=line, ts=ts)
        calls = [c for c in msg.get("toolCalls") or [] if isinstance(c, dict)]
        for call in calls:
            add_call(b, call.get("name") or "", call.get("args") or {}, call.get("id"), line=line,
                     ts=call.get("timestamp"))
        for call in calls:
            if call.get("result") is None and call.get("status") not in ("error", "cancelled"):
                continue  # not finished when the file was written
            b.result(_result_text(call.get("result")), call.get("id"), call.get("name"), line=line,
                     ts=call.get("timestamp"), is_error=call.get("status") in ("error", "cancelled"))


def _content_text(content: Any) -> str:
    """Text of a string or Part[] content (function responses/calls rendered as JSON)."""
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and "text" in part:
                parts.append(str(part["text"]))
            elif isinstance(part, dict) and ("functionResponse" in part or "functionCall" in part):
                parts.append(json.dumps(part, ensure_ascii=False))
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(p for p in parts if p)
    return text_of(content)


def _result_text(result: Any) -> str:
    """A tool call's result Part[]: the functionResponse's response (output or error), else the text parts."""
    if not isinstance(result, list):
        return text_of(result)
    out = []
    for part in result:
        if not isinstance(part, dict):
            continue
        fr = part.get("functionResponse")
        if isinstance(fr, dict):
            resp = fr.get("response")
            if isinstance(resp, dict) and set(resp) <= {"output", "error"}:
                out.append(str(resp.get("output") if resp.get("output") is not None else resp.get("error") or ""))
            else:
                out.append(json.dumps(resp, ensure_ascii=False) if not isinstance(resp, str) else resp)
        elif "text" in part:
            out.append(str(part["text"]))
    return "\n".join(out)


READER = GeminiCliReader()
