"""A Claude Code transcript in the writer's shape for model-switch tests: requests on a series of models, each sending a
user message of a given size, and one automatic compaction (``compact_boundary`` + the summary) recorded before a
given request."""

from __future__ import annotations

import json
from pathlib import Path

from replay.ingest import ingest
from replay.store import open_store


def cc_session(version: str, turns: list[tuple[str, int]], compact_before: int) -> list[dict]:
    """``turns``: per request (its model, the tokens its user message adds); the recorded prompt of each is the sum so
    far (chars/4 of the messages), the one after the compaction a small one."""
    t = iter(f"2026-05-01T10:{m // 60:02d}:{m % 60:02d}.000Z" for m in range(3600))
    base = {"sessionId": "s1", "version": version, "cwd": "/tmp", "entrypoint": "cli", "userType": "external"}
    lines: list[dict] = []
    parent: str | None = None

    def add(entry: dict) -> None:
        nonlocal parent
        lines.append({**base, "parentUuid": parent, "timestamp": next(t), **entry})
        parent = entry["uuid"]

    def user(uuid: str, text: str, **extra: object) -> None:
        add({"type": "user", "uuid": uuid, "message": {"role": "user", "content": text}, **extra})

    def assistant(uuid: str, model: str, prompt: int) -> None:
        usage = {"input_tokens": 10, "cache_read_input_tokens": prompt - 10, "cache_creation_input_tokens": 0}
        message = {
            "id": f"msg-{uuid}",
            "model": model,
            "role": "assistant",
            "usage": {**usage, "output_tokens": 20},
            "content": [{"type": "text", "text": "done " + uuid}],
        }
        add({"type": "assistant", "uuid": uuid, "requestId": f"req-{uuid}", "message": message})

    prompt = 0
    for k, (model, tokens) in enumerate(turns):
        if k == compact_before:
            add(
                {
                    "type": "system",
                    "subtype": "compact_boundary",
                    "uuid": f"b{k}",
                    "logicalParentUuid": parent,
                    "content": "Conversation compacted",
                    "compactMetadata": {"trigger": "auto", "preTokens": prompt},
                }
            )
            parent = None
            lines[-1]["parentUuid"] = None
            user(f"s{k}", "summary " * 1_000, isCompactSummary=True, isVisibleInTranscriptOnly=True)
            prompt = 2_000
        user(f"u{k}", chr(ord("a") + k % 26) * (4 * tokens))
        prompt += tokens
        assistant(f"a{k}", model, prompt)
    return lines


def store(tmp_path: Path, lines: list[dict], name: str = "session.jsonl", folder: str = "session-state/s102"):
    """A store holding the log ``lines`` as file ``name`` in ``folder`` (where the harness keeps a session)."""
    path = tmp_path / folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    # a .json log is one array (Cline's ui_messages.json), the others a line per record
    path.write_text(json.dumps(lines) if name.endswith(".json") else "\n".join(json.dumps(x) for x in lines) + "\n")
    con = open_store(tmp_path / "s.duckdb")
    ingest(con, [path])
    return con
