"""Codex CLI rollouts from before the line envelope: codex-rs 0.8.0-0.29.0 (May-August 2025) and the TypeScript CLI.

codex-rs ``core/src/rollout.rs`` (``RolloutRecorder``, ``rollout_writer``) wrote ``rollout-<time>-<uuid>.jsonl``:
line 1 is the ``SessionMeta`` (``id``, ``timestamp``, ``instructions`` when set; ``git`` from 0.2x), then each
persisted ``ResponseItem`` serialized bare (``message``, ``reasoning``, ``local_shell_call``, ``function_call``,
``function_call_output``; no ``timestamp``/``type``/``payload`` envelope) and ``{"record_type": "state", ...}``
lines (the ``SessionStateSnapshot``: no model input). No event is logged: no token usage, no model, no timestamp
per item, no compaction. codex 0.34.0 is the first release in the npm registry with the envelope
(``codex_rollout``); 0.30-0.33 are not there to check.

What the log does give is the order the Responses API saw: the model's output items of one response follow the
input they answered. A request is read where output starts after input (the response's reasoning, calls and
message are its output); its usage is unknown, and the run says so (a warning, ``runs.metadata.usage_logged``
false). The session's ``instructions`` (the user's AGENTS.md) went into the API ``instructions`` field until
codex-rs sent them as a ``<user_instructions>`` message (0.2x); they are an item only when no such message is
logged, so they are counted once.

The TypeScript CLI before codex-rs (npm 0.1.2504x, src/utils/storage/save-rollout.ts) saved
``rollout-<date>-<uuid>.json``: one document ``{"session": {timestamp, id, instructions}, "items": [...]}``, the
same ResponseItems (its UI's ``system`` notes among them, never sent), read the same way (entry n is
``items[n - 1]``). It wrote a new file with the whole conversation at each update, so one session leaves files
that are prefixes of each other (the warning says so).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from replay.model import BadRecord, Record, Run
from replay.readers.base import (
    HEAD_BYTES,
    ReadContext,
    decode_head,
    iter_json_lines,
    load_json_document,
    open_log,
    text_of,
)
from replay.readers.builder import RunBuilder
from replay.readers.codex_history import History
from replay.readers.codex_rollout import ITEM_TYPES, CodexRolloutReader, Deferred, is_output

META_KEYS = {"id", "timestamp", "instructions", "git"}
# the TypeScript CLI's saved rollout (codex-cli src/utils/storage/save-rollout.ts): {"session": {timestamp, ...}, ...}
TS_SAVED = re.compile(r'^\s*\{\s*"session"\s*:\s*\{\s*"timestamp"\s*:')
USER_INSTRUCTIONS = "<user_instructions>"
NO_USAGE = (
    "a codex-rs rollout from before the session_meta/response_item envelope (Codex CLI <= 0.29): it logs no token"
    " usage, model or timestamps; {n} request(s) are read where the model's output starts, their usage unknown"
)
TS_NO_USAGE = (
    "a Codex TypeScript CLI rollout (0.1.2504-0.1.2505, save-rollout.ts): it logs no token usage, model or timestamps;"
    " {n} request(s) are read where the model's output starts, their usage unknown. That CLI saved the whole"
    " conversation to a new file at every update: a session's files are prefixes of each other, ingest the longest"
)


def is_meta(obj: Any) -> bool:
    """The legacy first line: a SessionMeta with its id and timestamp, nothing else but instructions and git."""
    return (
        isinstance(obj, dict)
        and isinstance(obj.get("id"), str)
        and isinstance(obj.get("timestamp"), str)
        and set(obj) <= META_KEYS
    )


def is_legacy_line(obj: Any) -> bool:
    """A bare response item or a state line, as the legacy writer logged them after the meta line."""
    if not isinstance(obj, dict) or "payload" in obj:
        return False
    return obj.get("record_type") == "state" or obj.get("type") in ITEM_TYPES


def _has_user_instructions(item: dict) -> bool:
    return item.get("type") == "message" and text_of(item.get("content")).lstrip().startswith(USER_INSTRUCTIONS)


class CodexLegacyReader:
    format = "codex-rollout-legacy"

    def sniff(self, head: str, path: Path) -> bool:
        if TS_SAVED.match(head):
            return True
        lines = [ln for ln in head.splitlines()[:20] if ln.strip()]
        if not lines:
            return False
        try:
            first = json.loads(lines[0])
        except (ValueError, TypeError, RecursionError):
            return False
        if not is_meta(first):
            return False
        for line in lines[1:]:
            try:
                if is_legacy_line(json.loads(line)):
                    return True
            except (ValueError, TypeError, RecursionError):
                continue
        return len(lines) == 1 and path.name.startswith("rollout-")  # a session with nothing recorded yet

    def read(self, ctx: ReadContext) -> Iterator[Record]:
        b = RunBuilder(Run(run_id=ctx.run_id(), format=self.format, source_path=str(ctx.path), harness="codex"))
        saved = self._saved(ctx)
        if isinstance(saved, BadRecord):
            yield saved
            return
        # no JSONL line has an identity (repeats are real); a saved document's entries are numbered from 1
        entries = saved if saved is not None else list(iter_json_lines(ctx, identity=frozenset()))
        lines = [e for e in entries if not isinstance(e, BadRecord)]
        sent_as_message = any(isinstance(o, dict) and _has_user_instructions(o) for _, o in lines)
        d, live = Deferred(b), History()
        in_output = False  # the last item was the model's output: the next output item is the same response's
        for entry in entries:
            if isinstance(entry, BadRecord):
                yield entry
                continue
            line, obj = entry
            if not isinstance(obj, dict):
                continue
            if line == lines[0][0] and is_meta(obj):
                self._meta(b, d, obj, line, sent_as_message)
                continue
            if obj.get("record_type") is not None or obj.get("type") not in ITEM_TYPES or obj.get("role") == "system":
                continue  # state snapshots, the TypeScript CLI's own notes and what later codex-rs added: not input
            output = is_output(obj)
            if output and not in_output:  # the first output item after input: a new response
                b.request(line=line)
            in_output = output
            CodexRolloutReader._item(b, d, live, obj, line, None, None)
            d.flush()  # the request is known before its output here: nothing waits for it
        b.run.metadata["usage_logged"] = False
        b.warn(1, (TS_NO_USAGE if saved is not None else NO_USAGE).format(n=b.step))
        yield from b

    @staticmethod
    def _saved(ctx: ReadContext) -> list[tuple[int, Any]] | BadRecord | None:
        """A TypeScript CLI rollout's entries: its session meta (entry 0), then ``items[n - 1]`` as entry n; None
        for a JSONL rollout."""
        with open_log(ctx.path) as fh:
            if not TS_SAVED.match(decode_head(fh.read(HEAD_BYTES))):
                return None
        doc = load_json_document(ctx)
        if isinstance(doc, BadRecord):
            return doc
        if not (isinstance(doc, dict) and isinstance(doc.get("session"), dict) and isinstance(doc.get("items"), list)):
            return BadRecord(1, "Codex TypeScript CLI rollout without a 'session' object and an 'items' list", "")
        return [(0, doc["session"]), *enumerate(doc["items"], start=1)]

    @staticmethod
    def _meta(b: RunBuilder, d: Deferred, meta: dict, line: int, sent_as_message: bool) -> None:
        run_meta = b.run.metadata
        run_meta["session_id"] = meta["id"]
        if isinstance(meta.get("git"), dict):
            run_meta["git"] = meta["git"]
        b.run = b.records[0] = replace(b.run, started_at=meta["timestamp"], metadata=run_meta)
        instructions = text_of(meta.get("instructions"))
        if instructions and not sent_as_message:  # sent with the API instructions, not logged as a message
            d.input(lambda: b.add("system", "system", instructions, ts=meta["timestamp"], line=line))


READER = CodexLegacyReader()
