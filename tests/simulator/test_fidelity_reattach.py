"""What Claude Code puts back after a summary, on a transcript in its writer's shape (2.1.40).

The session reads five files with the native Read tool (three small ones, ``a.md`` and one past the 5,000-token
limit), writes ``b.md``, reads ``c.md`` through an MCP tool (``mcp__acp__Read``, which keeps no file state), adds
30 lines to ``a.md`` with Edit, and is compacted after a long user paste and a build's output. Claude Code (cli.js
2.1.21 ``tC2``/``fx6``, the same in 2.1.69) then re-reads the newest five files of its read-file state by
modification time: ``a.md`` as edited and ``b.md`` (written in the session), then the files only read, newest
first; ``big.md`` becomes a ``compact_file_reference`` note; ``x1.md`` is the sixth and stays out; ``c.md`` is not
in the state. The recorded prompt after the compaction is the harness
prefix, the summary and those files as the Read tool shows them (numbered lines).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from replay.simulator.fidelity import fidelity_frame
from tests.simulator.cc_switch import store

PREFIX = 20_000  # the harness's system prompt and tools, which the transcript does not hold
MODEL = "claude-opus-4-5-20251101"
NOTE = 50  # the preset's size of a compact_file_reference note


def numbered(text: str) -> str:
    """``text`` as Claude Code's Read tool shows it: each line after a six-wide line number and an arrow."""
    return "\n".join(f"{n:>6}\u2192{line}" for n, line in enumerate(text.split("\n"), 1))


def lines_of(n_lines: int, width: int, seed: str) -> str:
    return "\n".join(f"{seed} line {i:04d} " + "x" * (width - 16 - len(seed)) for i in range(n_lines))


FILES = {  # name -> raw content
    "x1.md": lines_of(40, 50, "x1"),
    "x2.md": lines_of(40, 50, "x2"),
    "x3.md": lines_of(40, 50, "x3"),
    "a.md": lines_of(200, 60, "a"),
    "big.md": lines_of(600, 80, "big"),
}
WRITTEN = lines_of(150, 60, "b")
OLD = FILES["a.md"].split("\n")[0]  # the edit puts 30 lines after a.md's first
NEW = OLD + "\n" + lines_of(30, 60, "e")
EDITED = FILES["a.md"].replace(OLD, NEW, 1)
MCP_READ = lines_of(300, 60, "c")


def tokens(text: str) -> int:
    return (len(text) + 3) // 4


def reattached() -> int:
    """What cli.js 2.1.21 re-reads: a.md as edited, b.md, big.md (a note), x3.md, x2.md."""
    shown = [numbered(EDITED), numbered(WRITTEN), numbered(FILES["x3.md"]), numbered(FILES["x2.md"])]
    assert tokens(numbered(FILES["big.md"])) > 5_000 and all(tokens(s) < 5_000 for s in shown)
    return sum(tokens(s) for s in shown) + NOTE


def session() -> list[dict]:
    times = iter(f"2026-02-01T10:{m // 60:02d}:{m % 60:02d}.000Z" for m in range(3600))
    base = {"sessionId": "s1", "version": "2.1.40", "cwd": "/w", "entrypoint": "cli", "userType": "external"}
    lines: list[dict] = []
    parent: list[str | None] = [None]
    sent = [0]  # tokens of the conversation so far (chars/4)

    def add(entry: dict) -> None:
        lines.append({**base, "parentUuid": parent[0], "timestamp": next(times), **entry})
        parent[0] = entry["uuid"]

    def user(uuid: str, content: object, size: int, **extra: object) -> None:
        sent[0] += size
        add({"type": "user", "uuid": uuid, "message": {"role": "user", "content": content}, **extra})

    def assistant(uuid: str, block: dict, size: int, prompt: int | None = None) -> None:
        prompt = PREFIX + sent[0] if prompt is None else prompt
        usage = {"input_tokens": 10, "cache_read_input_tokens": prompt - 10, "cache_creation_input_tokens": 0}
        message = {"id": f"m-{uuid}", "model": MODEL, "role": "assistant", "usage": {**usage, "output_tokens": 30}}
        add({"type": "assistant", "uuid": uuid, "requestId": f"r-{uuid}", "message": {**message, "content": [block]}})
        sent[0] += size

    def call(k: int, name: str, args: dict, result: str) -> None:
        assistant(f"a{k}", {"type": "tool_use", "id": f"t{k}", "name": name, "input": args}, tokens(str(args)))
        block = {"type": "tool_result", "tool_use_id": f"t{k}", "content": result}
        user(f"r{k}", [block], tokens(result), toolUseResult={"type": "text"})

    user("u0", "Document the modules.", 5)
    for k, name in enumerate(FILES):
        call(k, "Read", {"file_path": f"/w/{name}"}, numbered(FILES[name]))
    call(5, "Write", {"file_path": "/w/b.md", "content": WRITTEN}, "File created successfully at: /w/b.md")
    call(6, "mcp__acp__Read", {"file_path": "/w/c.md"}, MCP_READ)
    edit = {"file_path": "/w/a.md", "old_string": OLD, "new_string": NEW}
    call(10, "Edit", edit, "The file /w/a.md has been updated.")
    assistant("a7", {"type": "text", "text": "Done."}, 2)
    paste = "p" * (4 * 100_000)
    user("u8", paste, tokens(paste))
    # the build's output takes the next prompt past both 155k and 167k: compacted before it is sent
    call(8, "Bash", {"command": "make"}, "o" * (4 * 40_000))
    add(
        {
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": "b9",
            "logicalParentUuid": parent[0],
            "content": "Conversation compacted",
            "compactMetadata": {"trigger": "auto", "preTokens": PREFIX + sent[0]},
        }
    )
    lines[-1]["parentUuid"] = None
    summary = "summary " * 1_000
    user("s9", summary, 0, isCompactSummary=True, isVisibleInTranscriptOnly=True)
    assistant("a9", {"type": "text", "text": "On it."}, 2, prompt=PREFIX + tokens(summary) + reattached())
    return lines


@pytest.fixture(scope="module")
def event(tmp_path_factory) -> dict:
    con = store(Path(tmp_path_factory.mktemp("reattach")), session(), folder="projects/-w")
    (row,) = [r for r in fidelity_frame(con, None).to_dicts() if r["kind"] != "run"]
    return row


def test_the_preset_re_reads_the_newest_files_of_the_native_tools(event) -> None:
    """The prompt after the compaction within 1% of the log's (29,087 of 29,096): the five newest native files, the
    edited one grown by its edit, the large one as a note, the MCP tool's file and the sixth file left out (main's
    fixed 10,800: 32,768, 12.6% high)."""
    assert event["recorded_request"] == event["simulated_request"] == 10
    assert event["reason"] is None
    assert abs(event["simulated_after"] / event["recorded_after"] - 1) <= 0.01, event
