"""What Claude Code sends and its transcript leaves out (replay.readers.claude_code_unlogged).

Lines are in the shape cli.js 1.0.51 writes them (``insertMessageChain``: parentUuid, isSidechain, userType, cwd,
sessionId, version, then the message; one line per content block, each repeating the response's usage; the
TodoWrite result text is the tool's fixed reply); the content is made up. The calibrate test measures a made-up
session whose recorded prompt jumps after a file edit by more than its new items hold, as the unlogged
attachments of 1.0.51 (a changed file's snippet, new IDE diagnostics) made two real sessions jump.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay.ingest import ingest
from replay.model import Item, Run
from replay.readers.base import ReadContext
from replay.readers.claude_code import READER
from replay.readers.claude_code_unlogged import AGAIN, CLOSING, OPENING
from replay.store import open_store
from replay.tokens import DEFAULT_OVERHEAD
from replay.tokens.calibrate import fit_usage

SESSION = "5e551011-0000-4000-8000-000000000001"
TODO_REPLY = (
    "Todos have been modified successfully. Ensure that you continue to use the todo list to track your progress. "
    "Please proceed with the current tasks if applicable"
)
TODOS = [
    {"content": "Fix the type errors", "status": "in_progress", "priority": "high", "id": "1"},
    {"content": "Run the checks", "status": "pending", "priority": "medium", "id": "2"},
]


class Session:
    """Lines of one made-up session in the writer's shape, chained by parentUuid."""

    def __init__(self, version: str) -> None:
        self.version, self.lines, self.parent, self.n = version, [], None, 0

    def _line(self, kind: str, message: dict, **rest) -> dict:
        self.n += 1
        uuid = f"00000000-0000-4000-8000-{self.n:012d}"
        line = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": "/work/p",
            "sessionId": SESSION,
            "version": self.version,
            "type": kind,
            "message": message,
            "uuid": uuid,
            "timestamp": f"2025-07-13T21:{self.n // 60:02d}:{self.n % 60:02d}.000Z",
            **rest,
        }
        self.lines.append(line)
        self.parent = uuid
        return line

    def user(self, content) -> None:
        self._line("user", {"role": "user", "content": content})

    def response(self, blocks: list[dict], prompt: int) -> None:
        """One API response, a line per content block, each with the response's usage."""
        mid = f"msg_{self.n:04d}"
        usage = {"input_tokens": 4, "cache_creation_input_tokens": prompt - 4, "cache_read_input_tokens": 0}
        for block in blocks:
            message = {"id": mid, "type": "message", "role": "assistant", "model": "claude-sonnet-4-20250514"}
            self._line("assistant", {**message, "content": [block], "usage": {**usage, "output_tokens": 20}})

    def tool(self, name: str, args: dict, reply: str, prompt: int, error: bool = False) -> None:
        call = f"toolu_{self.n:04d}"
        self.response([{"type": "tool_use", "id": call, "name": name, "input": args}], prompt)
        result = {"tool_use_id": call, "type": "tool_result", "content": reply, **({"is_error": True} if error else {})}
        self.user([result])

    def write(self, path: Path) -> Path:
        path.write_text("\n".join(json.dumps(x) for x in self.lines) + "\n")
        return path


def read(path: Path) -> list:
    return list(READER.read(ReadContext(path=path, file_hash="0" * 32)))


def notes(records: list) -> list[Item]:
    return [r for r in records if isinstance(r, Item) and r.kind == "attachment" and r.tool_name == "todo"]


def todo_session(version: str, first: str = "please fix these", error: bool = False) -> Session:
    s = Session(version)
    s.user(first)
    s.tool("TodoWrite", {"todos": TODOS}, TODO_REPLY, 16_000, error=error)
    s.response([{"type": "text", "text": "Done."}], 16_400)
    return s


def test_todo_note_follows_each_todowrite_of_1_0_51(tmp_path: Path) -> None:
    """1.0.51's TodoWrite writes the watched todo file, so the next request carries the whole list as a system
    reminder the transcript drops: the reader adds it, rebuilt from the call's input, in the call's round."""
    records = read(todo_session("1.0.51").write(tmp_path / "s.jsonl"))
    (note,) = notes(records)
    body = json.dumps(TODOS, separators=(",", ":"))
    assert note.text == OPENING + body + "." + CLOSING
    assert (len(OPENING), len(CLOSING)) == (139, 69)  # the sizes of the harness's own wording (cli.js 1.0.51)
    result = next(r for r in records if isinstance(r, Item) and r.kind == "tool_result")
    assert (note.step, note.role, note.seq) == (result.step, "user", result.seq + 1) and note.step == 1


def test_todo_note_wording_and_versions(tmp_path: Path) -> None:
    """Until 1.0.43 the note also says the tool need not be called again; from 1.0.86 the tool keeps the list in
    app state and writes no file, so there is no note."""
    (old,) = notes(read(todo_session("1.0.29").write(tmp_path / "a.jsonl")))
    assert AGAIN in old.text and len(AGAIN) == 97
    assert notes(read(todo_session("1.0.86").write(tmp_path / "b.jsonl"))) == []
    assert notes(read(todo_session("1.0.9").write(tmp_path / "c.jsonl"))) == []


def test_no_todo_note_after_a_failed_call_or_a_clear(tmp_path: Path) -> None:
    """A failed call writes no file; /clear empties the read-file state (the todo file with it), and a session
    after /clear opens with the command's message."""
    assert notes(read(todo_session("1.0.51", error=True).write(tmp_path / "a.jsonl"))) == []
    cleared = "<command-name>/clear</command-name>\n            <command-message>clear</command-message>"
    assert notes(read(todo_session("1.0.51", first=cleared).write(tmp_path / "b.jsonl"))) == []


def test_no_todo_note_in_a_sidechain(tmp_path: Path) -> None:
    """A Task sub-agent writes its own agent's todo file, which the read-file state does not hold."""
    s = todo_session("1.0.51")
    for line in s.lines[1:]:
        line["isSidechain"] = True
    records = read(s.write(tmp_path / "s.jsonl"))
    assert notes(records) == []


def edit_session(version: str, jump: int, dip: int = 0) -> Session:
    """Reads, edits and later requests; ``jump`` tokens the log does not hold enter the prompt two requests after
    the edit (new IDE diagnostics arrive a pass late); ``dip``: one request's prompt is logged that much low."""
    s = Session(version)
    s.user("tidy the module")
    prompt = 16_000
    s.tool("Read", {"file_path": "/work/p/m.py"}, "     1\u2192import os\n" * 40, prompt)
    for k in range(12):
        prompt += 300 + (jump if k == 3 else 0)
        logged = prompt - (dip if k == 2 else 0)
        if k == 1:
            s.tool("Edit", {"file_path": "/work/p/m.py", "old_string": "a", "new_string": "b"}, "updated " * 20, logged)
        else:
            s.tool("Bash", {"command": f"echo {k}"}, "ok " * 150, logged)
    s.response([{"type": "text", "text": "Done."}], prompt + 100)
    return s


def test_unlogged_attachments_noted_from_the_first_file_tool(tmp_path: Path) -> None:
    run = next(r for r in read(edit_session("1.0.51", 0).write(tmp_path / "a.jsonl")) if isinstance(r, Run))
    assert run.metadata["unlogged_attachments"]["from_step"] == 1
    assert run.metadata["unlogged_attachments"]["version"] == "1.0.51"
    later = next(r for r in read(edit_session("2.1.97", 0).write(tmp_path / "b.jsonl")) if isinstance(r, Run))
    assert "unlogged_attachments" not in later.metadata  # 2.1.97 logs its attachments


@pytest.mark.parametrize(
    ("version", "jump", "dip", "flagged"),
    [("1.0.51", 4000, 0, True), ("1.0.51", 0, 0, False), ("1.0.51", 0, 9000, False), ("2.1.97", 4000, 0, False)],
)
def test_content_outside_the_log_after_a_file_edit_is_unreconstructable(
    tmp_path: Path, version: str, jump: int, dip: int, flagged: bool
) -> None:
    """Calibrate flags a run whose unlogged attachments are alone enough to miss the target, whatever the
    tokenizer (sizes as bytes/4): the jump a fitted scale absorbed into a 3% miss is named, not hidden. A prompt
    logged low once and back at its level next (MiniMax's streaming-start usage) is no jump; a version that logs
    its attachments is not flagged so."""
    (tmp_path / "logs").mkdir()
    edit_session(version, jump, dip).write(tmp_path / "logs" / "s.jsonl")
    con = open_store(tmp_path / "s.duckdb")
    ingest(con, [tmp_path / "logs"])
    _, runs, _ = fit_usage(con, None, DEFAULT_OVERHEAD)
    (reason,) = runs["unreconstructable"].to_list()
    assert reason.startswith("content outside the log: Claude Code 1.0.51 does not log the attachments") == flagged
    assert (reason == "") == (not flagged)
