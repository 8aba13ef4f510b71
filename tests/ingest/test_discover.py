"""Discovery of each harness's logs in a fake HOME, environment overrides, the CLI, and --watch."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cli import app
from replay.errors import ReplayError
from replay.ingest import watch
from replay.ingest.discover import discover
from replay.store import open_store

CLINE = ".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks"


def fake_home(corpus: Path, home: Path) -> dict[str, list[Path]]:
    """A HOME laid out like each harness's default location, with one real log each (and some non-logs)."""
    layout = {
        "claude-code": [
            (
                corpus / "claude-code" / "cc-fixture-agentsessions-small.jsonl",
                ".claude/projects/-home-u-proj/0a1b.jsonl",
            )
        ],
        "codex": [
            (
                corpus / "codex-rollout" / "codex-fixture-agentsessions-small-compacted.jsonl",
                ".codex/sessions/2026/01/02/rollout-2026-01-02T10-00-00-abc.jsonl",
            )
        ],
        "gemini-cli": [
            (
                corpus / "gemini-cli" / "gemini-vct-init-v040-20260423.jsonl",
                ".gemini/tmp/9da8/chats/session-2026-04-23T12-52-0ab8.jsonl",
            ),
            (
                corpus / "gemini-cli" / "gemini-vct-readme-update-20260327.json",
                ".gemini/tmp/9da8/chats/0ab84937-9fe7-4284-986a-33c832af0b6a/sub1.jsonl.gz",
            ),
        ],
        "openhands": [
            (
                corpus / "openhands-v1" / "ohv1-sdk-conv-cd945624-gpt4omini",
                ".openhands/conversations/cd94562403b9487ebdd4018e3f531dfd",
            )
        ],
        "copilot-cli": [
            (
                corpus / "copilot-cli" / "copilot-vct-events-1.0.34-20260423.jsonl",
                ".copilot/session-state/96ef38f0/events.jsonl",
            )
        ],
        "cline": [
            (corpus / "cline" / "cline-jeehunter-mcp-root.ui_messages.json", f"{CLINE}/1760000000000/ui_messages.json")
        ],
    }
    out: dict[str, list[Path]] = {}
    for harness, pairs in layout.items():
        for src, rel in pairs:
            dest = home / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            if dest.suffix == ".gz":
                with gzip.open(dest, "wb") as fh:
                    fh.write(src.read_bytes())
            else:
                (shutil.copytree if src.is_dir() else shutil.copy)(src, dest)
            out.setdefault(harness, []).append(dest.parent if harness == "cline" else dest)
    (home / ".copilot/session-state/96ef38f0/workspace.yaml").write_text("id: 96ef38f0\n")  # not a log
    (home / ".gemini/tmp/9da8/logs.json").write_text("[]")  # the prompt history, not a session
    (home / ".claude/projects/-home-u-proj/.hidden.jsonl").write_text("{}\n")
    return out


def test_every_default_location_is_found(corpus, tmp_path):
    expected = fake_home(corpus, tmp_path)
    found = {f.harness: f for f in discover(env={"HOME": str(tmp_path)})}
    assert {h: sorted(f.logs) for h, f in found.items()} == {h: sorted(v) for h, v in expected.items()}
    assert found["claude-code"].existing == [tmp_path / ".claude/projects"]  # ~/.config/claude is absent
    assert all(f.source == "default" for f in found.values())


def test_environment_overrides(corpus, tmp_path):
    home = tmp_path / "home"
    fake_home(corpus, home)
    moved = tmp_path / "elsewhere"
    shutil.copytree(home / ".claude", moved / "c1")
    shutil.copytree(home / ".codex", moved / "codex")
    env = {
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": f"{moved / 'c1'},{moved / 'missing'}",
        "CODEX_HOME": str(moved / "codex"),
        "REPLAY_CLINE_DIR": str(moved / "none"),
    }
    found = {f.harness: f for f in discover(env=env)}
    assert found["claude-code"].roots == [moved / "c1" / "projects", moved / "missing" / "projects"]
    assert found["claude-code"].source == "CLAUDE_CONFIG_DIR" and len(found["claude-code"].logs) == 1
    assert found["codex"].logs[0].is_relative_to(moved / "codex" / "sessions")
    assert found["cline"].source == "REPLAY_CLINE_DIR" and found["cline"].logs == []
    only = discover(["gemini-cli"], env={"HOME": str(home), "REPLAY_GEMINI_CLI_DIR": str(home / ".gemini/tmp")})
    assert [(f.harness, len(f.logs)) for f in only] == [("gemini-cli", 2)]  # a main session and a subagent


def test_cli_ingests_what_it_finds(corpus, tmp_path, monkeypatch):
    fake_home(corpus, tmp_path / "home")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_DATA_DIR"):
        monkeypatch.delenv(var, raising=False)
    db = tmp_path / "s.duckdb"
    result = CliRunner().invoke(app, ["ingest", "--db", str(db)], terminal_width=200)
    assert result.exit_code == 0, result.output
    for harness in ("claude-code", "codex", "gemini-cli", "openhands", "copilot-cli", "cline"):
        assert f"{harness}: {2 if harness == 'gemini-cli' else 1} logs in ~/" in result.output
    assert "7 files: 7 ingested, 0 unchanged, 0 unknown, 0 failed" in result.output
    con = open_store(db, read_only=True)
    formats = {r[0] for r in con.execute("SELECT format FROM files").fetchall()}
    assert formats == {"claude-code", "codex-rollout", "gemini-cli", "openhands-v1", "copilot-cli", "cline"}
    con.close()
    result = CliRunner().invoke(app, ["ingest", "--db", str(db), "--harness", "cline"], terminal_width=200)
    assert result.exit_code == 0 and "cline: 1 logs" in result.output and "codex" not in result.output
    assert "1 files: 0 ingested, 1 unchanged" in result.output


def test_cline_4_sessions_are_found_and_ingested(tmp_path, monkeypatch):
    """Cline 4.x (VS Code 4.x, CLI 3.0.30+) keeps SDK sessions in ~/.cline/data/sessions/<id>/: each folder is one
    unit (the lead transcript, its compaction sidecar, manifest and subagent transcripts)."""
    fixture = Path(__file__).parents[1] / "readers" / "fixtures" / "cline-sdk" / "1785000000000_ab1cd"
    folder = tmp_path / ".cline/data/sessions" / fixture.name
    shutil.copytree(fixture, folder)
    (tmp_path / ".cline/data/sessions/sessions.index.json").write_text('{"version": 1, "sessions": {}}')
    (found,) = discover(["cline"], env={"HOME": str(tmp_path)})
    assert found.logs == [folder]
    monkeypatch.setenv("HOME", str(tmp_path))
    db = tmp_path / "s.duckdb"
    result = CliRunner().invoke(app, ["ingest", "--db", str(db), "--harness", "cline"], terminal_width=200)
    assert result.exit_code == 0, result.output
    con = open_store(db, read_only=True)
    runs = con.execute("SELECT format, parent_run_id IS NULL FROM runs ORDER BY run_id").fetchall()
    assert runs == [("cline-sdk", True), ("cline-sdk", False)]  # the lead session and its subagent
    assert con.execute("SELECT count(*) FROM requests").fetchone()[0] == 6
    con.close()


def test_cli_with_no_logs_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    for var in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_DATA_DIR"):
        monkeypatch.delenv(var, raising=False)
    result = CliRunner().invoke(app, ["ingest", "--db", str(tmp_path / "s.duckdb")], terminal_width=200)
    assert result.exit_code == 1
    assert "No agent logs found" in result.output and "cline: none (no ~/.config/Code" in result.output
    bad = CliRunner().invoke(app, ["ingest", "--db", str(tmp_path / "s.duckdb"), "--harness", "aider"])
    assert isinstance(bad.exception, ReplayError) and "--harness aider: not a harness" in str(bad.exception)


def test_watch_replaces_a_grown_session(corpus, tmp_path):
    lines = (corpus / "gemini-cli" / "gemini-vct-init-v040-20260423.jsonl").read_text().splitlines(keepends=True)
    session = tmp_path / "session-1.jsonl"
    session.write_text("".join(lines[:12]))  # three gemini messages so far
    con = open_store(tmp_path / "s.duckdb")
    counts: list[tuple] = []

    def grow(poll: int) -> None:
        counts.append(
            con.execute(
                "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM requests), (SELECT count(*) FROM files)"
            ).fetchone()
        )
        if poll == 1:
            with session.open("a") as fh:
                fh.write("".join(lines[12:]))

    reported = []
    n = watch(con, lambda: [session], interval=0, polls=3, after_poll=grow, report=reported.append)
    assert n == 2 and [o.status for o in reported] == ["ingested", "ingested"]
    assert counts == [(1, 3, 1), (1, 6, 1), (1, 6, 1)]  # grown: still one run, now with all six requests
    assert con.execute("SELECT count(*) FROM items WHERE run_id NOT IN (SELECT run_id FROM runs)").fetchone()[0] == 0


@pytest.mark.parametrize("bad", ["not json\n", json.dumps({"id": "x"}) + "\n"])
def test_watch_keeps_going_past_a_bad_line(tmp_path, bad):
    session = tmp_path / "events.jsonl"
    session.write_text(json.dumps({"type": "session.start", "data": {"sessionId": "s"}}) + "\n" + bad)
    con = open_store(tmp_path / "s.duckdb")
    reported = []
    watch(con, lambda: [session], interval=0, polls=1, report=reported.append)
    assert reported[0].status == "ingested" and reported[0].bad[0].line == 2


def test_cli_watch_reports_each_file_and_stops_on_ctrl_c(corpus, tmp_path, monkeypatch):
    import replay.cli.store_cmds as cmds

    fake_home(corpus, tmp_path / "home")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("GEMINI_DATA_DIR", raising=False)

    def one_poll(con, sources, interval, report=None, max_line_bytes=0):
        watch(con, sources, 0, polls=1, report=report, max_line_bytes=max_line_bytes)
        raise KeyboardInterrupt

    monkeypatch.setattr(cmds, "watch_paths", one_poll)
    result = CliRunner().invoke(
        app,
        ["ingest", "--db", str(tmp_path / "s.duckdb"), "--watch", "--harness", "gemini-cli", "--interval", "0.5"],
        terminal_width=200,
    )
    assert result.exit_code == 0, result.output
    assert "watching every 0.5 s" in result.output and result.output.count("ingested ") == 2
    assert "(gemini-cli): 1 runs, 6 requests" in result.output and result.output.rstrip().endswith("stopped")
