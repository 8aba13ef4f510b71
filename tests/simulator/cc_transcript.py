"""A Claude Code transcript in its writer's shape, built line by line, for fidelity tests around one compaction: each
request's recorded prompt is the harness prefix plus what the session has sent so far, as ``count`` counts it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from replay.ingest import ingest
from replay.store import open_store

MODEL = "claude-opus-4-5-20251101"
PREFIX = 20_000  # the harness's system prompt and tools, which the transcript does not hold


class Transcript:
    """Lines of one session (``version``, ``cwd``); ``count``: the tokenizer's count of a text."""

    def __init__(self, count: Callable[[str], int], version: str, cwd: str) -> None:
        self.count = count
        self.lines: list[dict] = []
        self.parent: str | None = None
        self.sent = 0
        self.base = {"sessionId": "s1", "version": version, "cwd": cwd, "entrypoint": "cli", "userType": "external"}
        self.times = iter(f"2026-05-01T10:{m // 60:02d}:{m % 60:02d}.000Z" for m in range(3600))

    def add(self, entry: dict) -> None:
        self.lines.append({**self.base, "parentUuid": self.parent, "timestamp": next(self.times), **entry})
        self.parent = entry["uuid"]

    def user(self, uuid: str, content: object, text: str, **extra: object) -> None:
        self.sent += self.count(text)
        self.add({"type": "user", "uuid": uuid, "message": {"role": "user", "content": content}, **extra})

    def assistant(self, uuid: str, block: dict, text: str, prompt: int | None = None) -> None:
        prompt = PREFIX + self.sent if prompt is None else prompt
        usage = {"input_tokens": 10, "cache_read_input_tokens": prompt - 10, "cache_creation_input_tokens": 0}
        message = {"id": f"m-{uuid}", "model": MODEL, "role": "assistant", "usage": {**usage, "output_tokens": 30}}
        content = {**message, "content": [block]}
        self.add({"type": "assistant", "uuid": uuid, "requestId": f"r-{uuid}", "message": content})
        self.sent += self.count(text)

    def call(self, k: int, name: str, args: dict, result: str, outcome: dict) -> None:
        """Tool call ``k`` and its result (``outcome``: the line's ``toolUseResult``)."""
        self.assistant(f"a{k}", {"type": "tool_use", "id": f"t{k}", "name": name, "input": args}, json.dumps(args))
        block = {"type": "tool_result", "tool_use_id": f"t{k}", "content": result}
        self.user(f"r{k}", [block], result, toolUseResult=outcome)

    def pastes(self, first: int, last: int) -> None:
        """Long user pastes (20,000 tokens each) answered in turn but the last: the prompt passes 167,000."""
        for k in range(first, last + 1):
            paste = f"paste {k} " + "lorem ipsum dolor sit amet " * 4_000
            self.user(f"u{k}", paste, paste)
            if k < last:
                self.assistant(f"a{k}", {"type": "text", "text": f"Noted {k}."}, f"Noted {k}.")

    def compact(self, k: int) -> str:
        """An automatic compaction (boundary and summary, lines ``b{k}`` and ``s{k}``); returns the summary."""
        boundary = {
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": f"b{k}",
            "logicalParentUuid": self.parent,
            "content": "Conversation compacted",
            "compactMetadata": {"trigger": "auto", "preTokens": PREFIX + self.sent},
        }
        self.parent = None
        self.add(boundary)
        summary = "summary of the session so far " * 200
        message = {"role": "user", "content": summary}
        self.add({"type": "user", "uuid": f"s{k}", "message": message, "isCompactSummary": True})
        self.lines[-1]["isVisibleInTranscriptOnly"] = True
        return summary

    def store(self, root: Path, project: str):
        """A store holding the transcript as ``projects/<project>/s1.jsonl`` under ``root``."""
        path = root / "projects" / project / "s1.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text("\n".join(json.dumps(x) for x in self.lines) + "\n")
        con = open_store(root / "s.duckdb")
        ingest(con, [path])
        return con
