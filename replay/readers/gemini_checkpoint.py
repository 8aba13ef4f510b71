"""Gemini CLI ``/chat save`` checkpoints (~/.gemini/tmp/<project>/checkpoint-<tag>.json).

Before chat recording (``chats/session-*.json``, written from 0.4.0; 0.2.x-0.3.x ship the service unwired) a
Gemini CLI session left on disk only ``logs.json`` (the user's prompts, no model output: no run) and, when the user
ran ``/chat save <tag>``, this checkpoint: packages/core/src/core/logger.ts ``saveCheckpoint`` writes the chat's
history (``GeminiChat.getHistory``), the ``Content[]`` the model is sent, as a JSON array (June 2025 on); from
November 2025 (#13023) as ``{"history": Content[], "authType"}``. It holds the conversation as the model saw it at
the save; no usage, model or timestamp. A chat compression before the save left its summary and the newest turns.

Each ``model`` turn is one request, except the acknowledgements the CLI writes itself (client.ts ``startChat``
after the environment context, chat compression after its summary; ``ACKS``). Parts: ``text`` -> user or
assistant text (``thought`` parts reasoning), ``functionCall`` -> a tool call, ``functionResponse`` -> its result,
``inlineData``/``fileData`` -> an image or file. The run says it has no usage (a warning,
``runs.metadata.usage_logged`` false). Positions are the history's entries (``line`` n: ``history[n - 1]``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from replay.model import BadRecord, Record, Run
from replay.readers.aliases import add_call
from replay.readers.base import ReadContext, load_json_document
from replay.readers.builder import RunBuilder
from replay.readers.gemini_cli import call_result_text

# model turns the CLI writes itself, never the model's reply (client.ts startChat; chat compression)
ACKS = ("Got it. Thanks for the context!", "Got it. Thanks for the additional context!")
FIRST_CONTENT = re.compile(
    r'^\s*(\{\s*"history"\s*:\s*)?\[\s*\{\s*("role"\s*:\s*"(user|model)"\s*,\s*)?"parts"\s*:', re.DOTALL
)
NO_USAGE = (
    "a Gemini CLI /chat save checkpoint: the model's history at the save, without usage, model or timestamps;"
    " {n} request(s) are read at its model turns, their usage unknown (chat recording, chats/session-*.json,"
    " starts with Gemini CLI 0.4.0)"
)


def _history(doc: Any) -> list | None:
    if isinstance(doc, dict) and isinstance(doc.get("history"), list):
        return doc["history"]
    return doc if isinstance(doc, list) else None


def _ack(content: dict) -> bool:
    parts = content.get("parts")
    return isinstance(parts, list) and len(parts) == 1 and isinstance(parts[0], dict) and parts[0].get("text") in ACKS


class GeminiCheckpointReader:
    format = "gemini-cli-checkpoint"

    def sniff(self, head: str, path: Path) -> bool:
        return bool(FIRST_CONTENT.match(head))

    def read(self, ctx: ReadContext) -> Iterator[Record]:
        doc = load_json_document(ctx)
        if isinstance(doc, BadRecord):
            yield doc
            return
        history = _history(doc)
        if history is None:
            yield BadRecord(1, "Gemini CLI checkpoint without a history (a JSON array of Content)", str(doc)[:2000])
            return
        b = RunBuilder(Run(run_id=ctx.run_id(), format=self.format, source_path=str(ctx.path), harness="gemini-cli"))
        if isinstance(doc, dict) and isinstance(doc.get("authType"), str):
            b.run.metadata["auth_type"] = doc["authType"]
        for n, content in enumerate(history, start=1):
            role = content.get("role") if isinstance(content, dict) else None
            parts = content.get("parts") if isinstance(content, dict) else None
            if role not in ("user", "model") or not isinstance(parts, list):
                yield BadRecord(
                    n, f"history[{n - 1}] is not a Content (role user or model, parts)", str(content)[:2000]
                )
                continue
            if role == "model":
                self._model(b, content, n)
            else:
                self._user(b, parts, n)
        b.run.metadata["usage_logged"] = False
        b.warn(1, NO_USAGE.format(n=b.step))
        yield from b

    @staticmethod
    def _model(b: RunBuilder, content: dict, n: int) -> None:
        """A model turn: a request (unless the CLI's own acknowledgement), then its parts."""
        if not _ack(content):
            b.request(line=n)
        for part in content["parts"]:
            if not isinstance(part, dict):
                continue
            call = part.get("functionCall")
            if isinstance(call, dict):
                add_call(b, str(call.get("name") or ""), call.get("args") or {}, call.get("id"), line=n)
            elif isinstance(part.get("text"), str) and part["text"]:
                kind = "reasoning" if part.get("thought") else "assistant_text"
                b.add(kind, "assistant", part["text"], line=n)

    @staticmethod
    def _user(b: RunBuilder, parts: list, n: int) -> None:
        """A user turn: the user's text (a new turn), or the function responses the CLI sent back."""
        if any(isinstance(p, dict) and "text" in p for p in parts):
            b.new_turn()
        for part in parts:
            if not isinstance(part, dict):
                continue
            response = part.get("functionResponse")
            if isinstance(response, dict):
                b.result(call_result_text({"result": [part]}), response.get("id"), response.get("name"), line=n)
            elif isinstance(part.get("text"), str) and part["text"]:
                b.add("user_text", "user", part["text"], line=n)
            elif isinstance(data := part.get("inlineData") or part.get("fileData"), dict):
                b.add("image", "user", f"[{data.get('mimeType') or 'file'}]", line=n)
            else:
                b.add("user_text", "user", json.dumps(part, ensure_ascii=False), line=n)


READER = GeminiCheckpointReader()
