"""Files that hold no run in a Claude Code projects tree: empty files, sessions with no conversation yet, title-only
sessions. Found in a folder (or by discovery) they are skipped and counted in one line, and the exit code stays 0;
named on the command line each is an error saying it holds no run. On main each was "unknown format ... convert it
to the canonical JSONL format" (exit 3), and a title-only session was stored as an empty run.

Every fixture is synthetic, in the shapes Claude Code writes: the entry envelope (``parentUuid``, ``isSidechain``,
``sessionId``, ``uuid``) around ``system`` and ``progress`` entries, ``{type: "file-history-snapshot", messageId,
snapshot, isSnapshotUpdate}`` (2.1.332 ``insertFileHistorySnapshot``), ``summary`` titles with ``leafUuid``."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

from typer.testing import CliRunner

from replay.cli import app
from replay.ingest import file_hash, ingest, watch
from replay.model import Run
from replay.readers import detect
from replay.readers.base import ReadContext
from replay.readers.claude_code import READER
from replay.store import open_store

SESSION = "0b5e4c1a-7d2f-4e8b-9c3a-1f2e3d4c5b6a"
PROJECT = "-home-u-demo"


def _envelope(kind: str, uuid: str, parent: str | None, **fields: object) -> dict:
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/u/demo",
        "sessionId": SESSION,
        "version": "2.1.27",
        "type": kind,
        **fields,
        "timestamp": "2026-01-31T04:40:10.159Z",
        "uuid": uuid,
    }


def _jsonl(*lines: dict) -> str:
    return "".join(json.dumps(line) + "\n" for line in lines)


SNAPSHOTS = _jsonl(
    *(
        {
            "type": "file-history-snapshot",
            "messageId": f"m{n}",
            "snapshot": {"messageId": f"m{n}", "trackedFileBackups": {}, "timestamp": "2026-02-16T18:47:50.736Z"},
            "isSnapshotUpdate": False,
        }
        for n in range(3)
    )
)
NOTICES = _jsonl(  # a session opened and left: a hook's progress, /ide cancelled, a summary while away
    _envelope("progress", "p1", None, data={"type": "hook_progress", "hookEvent": "SessionStart"}),
    _envelope("system", "s1", "p1", subtype="local_command", content="<command-name>/ide</command-name>"),
    _envelope("system", "s2", "s1", subtype="away_summary", content="We were adding a layout.", isMeta=False),
    _envelope("system", "s3", "s2", content="Claude Opus 4 limit reached, now using Sonnet 4", level="warning"),
)
TITLES = _jsonl({"type": "summary", "summary": "Fix the login page", "leafUuid": "u-elsewhere"})
CONVERSATION = _jsonl(
    _envelope("user", "u1", None, message={"role": "user", "content": "hello"}),
    _envelope(
        "assistant",
        "a1",
        "u1",
        requestId="req_1",
        message={
            "id": "msg_1",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "hi"}],
            "usage": {"input_tokens": 10, "cache_read_input_tokens": 0, "output_tokens": 2},
        },
    ),
)

# a projects tree: two real sessions, and every kind of file that holds no run
TREE: dict[str, str] = {
    f"{PROJECT}/{SESSION}.jsonl": CONVERSATION,
    f"{PROJECT}/11111111-2222-4333-8444-555555555555.jsonl": "",
    f"{PROJECT}/22222222-2222-4333-8444-555555555555.jsonl": SNAPSHOTS,
    f"{PROJECT}/33333333-2222-4333-8444-555555555555.jsonl": NOTICES,
    f"{PROJECT}/44444444-2222-4333-8444-555555555555.jsonl": TITLES,
    f"{PROJECT}/{SESSION}/subagents/agent-a0b8e04cef85a7f21.jsonl": "",
    f"{PROJECT}/{SESSION}/subagents/workflows/wf_2fe1a656-589/journal.jsonl": "",
    f"{PROJECT}/{SESSION}/subagents/workflows/wf_2fe1a656-589/agent-a209e34fb281cc7c0.jsonl": "\n\n",
}
NO_RUN = len(TREE) - 1


def _tree(root: Path, files: dict[str, str] = TREE) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _ingest(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    res = CliRunner().invoke(app, ["ingest", *args], env={"COLUMNS": "300", **(env or {})}, catch_exceptions=False)
    return res.exit_code, " ".join(res.output.split())


def test_a_projects_tree_skips_what_holds_no_run_and_exits_0(tmp_path: Path) -> None:
    code, out = _ingest(str(_tree(tmp_path / "projects")), "--db", str(tmp_path / "s.duckdb"))
    assert code == 0, out
    assert "unknown format" not in out and "canonical" not in out
    assert f"skipped {NO_RUN} files holding no run (empty x4, claude-code log with no conversation yet x3)" in out
    assert "1 files: 1 ingested, 0 unchanged, 0 unknown, 0 failed; 1 runs," in out and "0 quarantined" in out
    con = open_store(tmp_path / "s.duckdb")
    assert con.execute("SELECT count(*) FROM runs").fetchone() == (1,)
    assert con.execute("SELECT count(*) FROM quarantine").fetchone() == (0,)


def test_discovery_skips_them_the_same(tmp_path: Path) -> None:
    """``replay ingest --harness claude-code`` (patterns ``*.jsonl``) over the same tree."""
    root = _tree(tmp_path / "projects")
    code, out = _ingest(
        "--harness", "claude-code", "--db", str(tmp_path / "s.duckdb"), env={"REPLAY_CLAUDE_CODE_DIR": str(root)}
    )
    assert code == 0, out
    assert f"claude-code: {len(TREE)} logs in" in out
    assert f"skipped {NO_RUN} files holding no run" in out and "1 files: 1 ingested" in out


def test_an_empty_file_named_says_it_is_empty(tmp_path: Path) -> None:
    path = _tree(tmp_path, {"x/s.jsonl": ""}) / "x/s.jsonl"
    code, out = _ingest(str(path), "--db", str(tmp_path / "s.duckdb"))
    assert code == 3
    assert "s.jsonl:0: an empty file (0 bytes): it holds no run" in out and "unknown format" not in out
    assert "1 files: 0 ingested, 0 unchanged, 1 no run, 0 unknown, 0 failed" in out


def test_an_empty_compressed_file_is_empty_too(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "s.jsonl.gz").write_bytes(gzip.compress(b"\n"))
    code, out = _ingest(str(tmp_path / "d"), "--db", str(tmp_path / "s.duckdb"))
    assert code == 0 and "skipped 1 file holding no run (empty)" in out, out


def test_a_session_with_no_conversation_named_says_it_holds_no_run(tmp_path: Path) -> None:
    for name, text in (("snapshots", SNAPSHOTS), ("notices", NOTICES), ("titles", TITLES)):
        path = _tree(tmp_path, {f"{name}.jsonl": text}) / f"{name}.jsonl"
        assert detect(path) is READER, name
        code, out = _ingest(str(path), "--db", str(tmp_path / f"{name}.duckdb"))
        assert code == 3, out
        assert re.search(rf"{name}\.jsonl:0: a claude-code log with no conversation in it yet .* holds no run", out)
        assert "unknown format" not in out


def test_the_reader_makes_no_run_of_them_and_still_reads_a_journal(tmp_path: Path) -> None:
    """A workflow journal (``started``/``result`` entries, read for ``journal_agents``) is still a run."""
    journal = _jsonl(
        {"type": "started", "agentId": "a209e34fb281cc7c0", "key": "k1"},
        {"type": "result", "agentId": "a209e34fb281cc7c0", "key": "k1", "value": "done"},
    )
    _tree(tmp_path, {"snapshots.jsonl": SNAPSHOTS, "notices.jsonl": NOTICES, "titles.jsonl": TITLES})
    _tree(tmp_path, {"journal.jsonl": journal})
    for name in ("snapshots", "notices", "titles"):
        assert list(READER.read(ReadContext(path=tmp_path / f"{name}.jsonl", file_hash="0" * 32))) == [], name
    runs = [r for r in READER.read(ReadContext(tmp_path / "journal.jsonl", "0" * 32)) if isinstance(r, Run)]
    assert [r.metadata["journal_agents"] for r in runs] == [["a209e34fb281cc7c0"] * 2]


def test_a_title_only_session_stored_as_an_empty_run_is_removed(tmp_path: Path) -> None:
    """A store from reader version 6 holds the title-only session as an empty run; ingesting the tree again reads
    it with version 7 and removes that run."""
    root = _tree(tmp_path / "projects", {f"{PROJECT}/t.jsonl": TITLES, f"{PROJECT}/{SESSION}.jsonl": CONVERSATION})
    con = open_store(tmp_path / "s.duckdb")
    ingest(con, [root], workers=1)
    title_hash = file_hash(root / PROJECT / "t.jsonl")
    con.execute(
        "INSERT INTO files BY NAME SELECT ? AS file_hash, ? AS path, format, bytes, 1 AS n_runs, 0 AS n_items, "
        "0 AS n_requests, 0 AS n_bad, ingested_at, 'claude-code/6' AS reader_version FROM files LIMIT 1",
        [title_hash, str(root / PROJECT / "t.jsonl")],
    )
    con.execute(
        "INSERT INTO runs BY NAME SELECT 't-run' AS run_id, ? AS file_hash, format, ? AS source_path, model, "
        "harness, started_at, 0 AS n_requests, '{}' AS metadata FROM runs LIMIT 1",
        [title_hash, str(root / PROJECT / "t.jsonl")],
    )
    outs = ingest(con, [root], workers=1)
    assert sorted(o.status for o in outs) == ["no run", "unchanged"]
    assert con.execute("SELECT count(*) FROM runs WHERE run_id = 't-run'").fetchone() == (0,)
    assert con.execute("SELECT count(*) FROM files WHERE file_hash = ?", [title_hash]).fetchone() == (0,)


def test_watch_ingests_a_session_once_its_conversation_starts(tmp_path: Path) -> None:
    session = _tree(tmp_path / "projects", {f"{PROJECT}/{SESSION}.jsonl": NOTICES}) / PROJECT / f"{SESSION}.jsonl"
    con = open_store(tmp_path / "s.duckdb")
    seen = []
    assert watch(con, lambda: [session], 0, polls=1, report=seen.append) == 0
    assert [(o.status, o.no_run, o.bad) for o in seen] == [("no run", "claude-code log with no conversation yet", [])]
    session.write_text(NOTICES + CONVERSATION)
    assert watch(con, lambda: [session], 0, polls=1) == 1
    assert con.execute("SELECT count(*) FROM quarantine").fetchone() == (0,)


def test_an_earlier_quarantine_entry_goes_when_its_folder_is_ingested(tmp_path: Path) -> None:
    """Named, a snapshot-only session is quarantined with its reason; its folder ingested later (or a store whose
    quarantine holds main's "unknown format" for it) no longer lists it."""
    root = _tree(tmp_path / "projects", {f"{PROJECT}/s.jsonl": SNAPSHOTS, f"{PROJECT}/e.jsonl": ""})
    db = str(tmp_path / "s.duckdb")
    assert _ingest(str(root / PROJECT / "s.jsonl"), str(root / PROJECT / "e.jsonl"), "--db", db)[0] == 3
    con = open_store(db)
    assert con.execute("SELECT count(*) FROM quarantine").fetchone() == (2,)
    con.close()
    code, out = _ingest(str(root), "--db", db)
    assert code == 0 and "skipped 2 files holding no run" in out, out
    assert open_store(db).execute("SELECT count(*) FROM quarantine").fetchone() == (0,)
