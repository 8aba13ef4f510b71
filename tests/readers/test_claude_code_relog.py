"""A Claude Code conversation logged again as a new chain (replay.readers.claude_code_relog).

Lines are in the shape 2.0.2 writes them (parentUuid, isSidechain, userType, cwd, sessionId, version, gitBranch,
then the message; an assistant line per content block with the response's ``requestId`` and usage). After an
hour away the file gets the conversation a second time, every line stamped with one instant: a user line with
``parentUuid`` null, the earlier user lines and responses under new uuids, the responses with their
``message.id`` and no ``requestId``; then the session goes on. The content is made up; the recorded prompts are a
server's that counts four characters a token over a fixed prefix and is sent that history once.
"""

from __future__ import annotations

import json
from pathlib import Path

from replay.ingest import ingest
from replay.model import Item, Request, Run
from replay.readers.base import ReadContext
from replay.readers.claude_code import READER
from replay.store import open_store
from replay.tokens import DEFAULT_OVERHEAD
from replay.tokens.calibrate import fit_usage

SESSION = "e77c0000-0000-4000-8000-000000000001"
PREFIX = 15_000
AGAIN = "2026-01-06T23:35:24.239Z"


class Session:
    def __init__(self) -> None:
        self.lines: list[dict] = []
        self.parent: str | None = None
        self.history = 0  # characters the server's history holds
        self.n = 0
        self.usage: dict[int, dict] = {}  # response -> its usage, which its copy repeats

    def _line(self, kind: str, message: dict, ts: str | None = None, **rest) -> dict:
        self.n += 1
        uuid = f"00000000-0000-4000-8000-{self.n:012d}"
        line = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/Users/u/dev/app",
            "sessionId": SESSION,
            "version": "2.0.2",
            "gitBranch": "main",
            "type": kind,
            "message": message,
            **rest,
            "uuid": uuid,
            "timestamp": ts or f"2026-01-06T22:{self.n // 60:02d}:{self.n % 60:02d}.000Z",
        }
        self.lines.append(line)
        self.parent = uuid
        return line

    def user(self, content: list[dict], new: bool = True, ts: str | None = None) -> None:
        self._line("user", {"role": "user", "content": content}, ts)
        if new:
            self.history += len(json.dumps(content))

    def response(self, k: int, block: dict, new: bool = True, ts: str | None = None) -> None:
        message = {"model": "claude-opus-4-1-20250805", "id": f"msg_{k:04d}", "type": "message", "role": "assistant"}
        usage = {"input_tokens": 3, "cache_read_input_tokens": PREFIX + self.history // 4 - 3, "output_tokens": 40}
        usage = self.usage.setdefault(k, usage)
        rest = {"requestId": f"req_{k:04d}"} if new else {}
        self._line("assistant", {**message, "content": [block], "usage": usage}, ts, **rest)
        if new:
            self.history += len(json.dumps(block))


def tool_turn(s: Session, k: int, new: bool, ts: str | None = None) -> None:
    """Response ``k`` reads a file; its result follows."""
    call = {"type": "tool_use", "id": f"toolu_{k:04d}", "name": "Read", "input": {"file_path": f"/app/f{k}.ts"}}
    s.response(k, call, new, ts)
    body = "".join(f"{n:6d}\tconst v{n} = {n * k};\n" for n in range(40 * (k + 1)))
    s.user([{"tool_use_id": f"toolu_{k:04d}", "type": "tool_result", "content": body}], new, ts)


def session(path: Path) -> Path:
    s = Session()
    s.user([{"type": "text", "text": "Add a spec for the goal date change."}])
    for k in range(4):
        tool_turn(s, k, new=True)
    s.response(4, {"type": "text", "text": "The spec is added and passes."})
    # an hour later: the same conversation written again as a new chain, at one instant
    s.parent = None
    s.user([{"type": "text", "text": "Add a spec for the goal date change."}], new=False, ts=AGAIN)
    for k in range(4):
        tool_turn(s, k, new=False, ts=AGAIN)
    s.response(4, {"type": "text", "text": "The spec is added and passes."}, new=False, ts=AGAIN)
    s.user([{"type": "text", "text": "Now make it pass on the server too."}])
    for k in range(5, 8):
        tool_turn(s, k, new=True)
    s.response(8, {"type": "text", "text": "Done."})
    path.write_text("\n".join(json.dumps(line) for line in s.lines) + "\n")
    return path


def test_relogged_lines_are_neither_requests_nor_content(tmp_path: Path) -> None:
    path = session(tmp_path / f"{SESSION}.jsonl")
    records = list(READER.read(ReadContext(path=path, file_hash="0" * 32)))
    run = next(r for r in records if isinstance(r, Run))
    assert len([r for r in records if isinstance(r, Request)]) == 9  # the 5 copied responses are not requests
    # 5 responses and 4 tool results; the user lines before the first copied response are kept (in 2.0.2 the new
    # chain may open with a prompt the first one lacks)
    assert run.metadata["relogged_lines"] == 9
    results = [i.call_id for i in records if isinstance(i, Item) and i.kind == "tool_result"]
    assert len(results) == len(set(results)) == 7


def test_a_relogged_conversation_calibrates_within_target(tmp_path: Path) -> None:
    con = open_store(tmp_path / "store.duckdb")
    ingest(con, [session(tmp_path / f"{SESSION}.jsonl")])
    _, runs, _ = fit_usage(con, None, DEFAULT_OVERHEAD)
    (row,) = runs.to_dicts()
    assert row["unreconstructable"] == ""
    assert row["median_err"] < 0.03 and row["p95_err"] < 0.10  # on main: the copies are read as 5 more requests
