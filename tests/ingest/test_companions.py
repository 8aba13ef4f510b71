"""Files harnesses write beside their logs: skipped and counted when a folder is ingested, an error when named."""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cli import app
from replay.ingest import expand_paths
from replay.ingest.companions import companion_of
from replay.readers import detect

SESSION = "96ef38f0-9d09-45c3-8124-6448c36090ed"
CC_SESSION = "3e89eb15-32e7-43f8-8734-8d47310263ea"
CC = f"projects/-home-u-avd/{CC_SESSION}"  # a Claude Code session folder
CODEX_ROLLOUT = "codex-rollout/codex-pharma-platform-019d20aa.jsonl"


def _ingest(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, ["ingest", *args], env={"COLUMNS": "200"}, catch_exceptions=False)
    return res.exit_code, " ".join(res.output.split())


def _write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.write_bytes if isinstance(content, bytes) else path.write_text)(content)  # type: ignore[operator]


def _log(corpus: Path, root: Path, rel: str, source: str) -> None:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(corpus / source, root / rel)


PREDS = json.dumps({"i1": {"model_name_or_path": "m", "instance_id": "i1", "model_patch": "diff --git a/x b/x\n"}})
STATUSES = "instances_by_exit_status:\n    submitted:\n    - i1\ntotal_cost: 0.1\n"
LOG_LINES = "2026-01-01 10:00:00,000 - INFO - rex-deploy - Starting container\n"

# one batch folder per harness family, in its writer's layout: (logs placed from the corpus, companions, runs)
LAYOUTS: dict[str, tuple[dict[str, str], dict[str, str | bytes], int]] = {
    "mini-swe-agent": (
        {"run/i1/i1.traj.json": "mini-swe-agent/msa-testdata-github_issue.traj.json"},
        {
            "run/preds.json": PREDS,
            "run/exit_statuses_1765012345.6789.yaml": STATUSES,
            "run/minisweagent.log": LOG_LINES,
            "run/i1/submission.tar.gz": gzip.compress(b"workspace\0" * 50),
        },
        1,
    ),
    "swe-agent": (
        {"out/i1/i1.traj": "swe-agent/swea-testdata-gpt4-test-repo-i1.traj"},
        {
            "out/preds.json": PREDS,
            "out/tmppreds.json": PREDS,
            "out/run_batch.log": LOG_LINES,
            "out/run_batch_exit_statuses.yaml": STATUSES,
            "out/run_batch.config.yaml": '"{\\"agent\\": {}}"\n',
            "out/i1/i1.config.yaml": '"{\\"agent\\": {}}"\n',
            "out/i1/config.yaml": '"{\\"agent\\": {}}"\n',
            "out/i1/i1.trace.log": LOG_LINES,
            "out/i1/i1.debug.log": LOG_LINES,
            "out/i1/i1.info.log": LOG_LINES,
            "out/i1/i1.pred": json.dumps({"model_name_or_path": "m", "instance_id": "i1", "model_patch": ""}),
            "out/i1/i1.patch": "diff --git a/x b/x\n+1\n",
        },
        1,
    ),
    "inspect_ai": (
        {"logs/2026-01-01T10-00-00_browser_abc.json": "inspect-ai/inspect-browser-gpt4omini.json"},
        {
            "logs/logs.json": json.dumps({"2026-01-01T10-00-00_browser_abc.json": {"version": 2, "status": "success"}}),
            "logs/listing.json": json.dumps({"2026-01-01T10-00-00_browser_abc.json": {"task": "browser"}}),
            "logs/eval-set.json": json.dumps({"eval_set_id": "x", "tasks": []}),
        },
        1,
    ),
    "openhands-eval": (
        {"out/CodeActAgent/m_maxiter_30/output.jsonl": "openhands/oh-eval-multiswebench-llama4-3inst.jsonl"},
        {
            "out/CodeActAgent/m_maxiter_30/metadata.json": json.dumps(
                {"agent_class": "CodeActAgent", "max_iterations": 30}
            ),
            "out/CodeActAgent/m_maxiter_30/maximum_retries_exceeded.jsonl": json.dumps({"instance_id": "i1"}) + "\n",
            "out/CodeActAgent/m_maxiter_30/infer_logs/instance_i1.log": LOG_LINES,
            "out/CodeActAgent/m_maxiter_30/logs/instance_i2.log": LOG_LINES,
            "out/CodeActAgent/m_maxiter_30/output.swebench.jsonl": json.dumps({"instance_id": "i1", "model_patch": ""})
            + "\n",
        },
        3,
    ),
    "gemini-cli": (
        {"tmp/9da8b3df/chats/session-2026-04-23T12-52-0ab8.jsonl": "gemini-cli/gemini-vct-init-v040-20260423.jsonl"},
        {
            "tmp/9da8b3df/logs.json": json.dumps(
                [{"sessionId": "0ab8", "messageId": 0, "type": "user", "message": "hi", "timestamp": "2026"}]
            ),
            "tmp/9da8b3df/shell_history": "ls\ngit status\n",
            # a restore point before a file edit (/restore): a copy of the conversation, not a run
            "tmp/9da8b3df/checkpoints/2025-09-01T10-00-00_000Z-a.py-replace.json": json.dumps(
                {
                    "history": [{"type": "user", "text": "fix a.py", "id": 1}],
                    "clientHistory": [{"role": "user", "parts": [{"text": "fix a.py"}]}],
                    "toolCall": {"name": "replace", "args": {"file_path": "/p/a.py"}},
                    "commitHash": "abc",
                    "filePath": "/p/a.py",
                },
                indent=2,
            ),
            "tmp/9da8b3df/tool-outputs/session-0ab84937/run_shell_command_abc123_k3j2x.txt": "output\n",
        },
        1,
    ),
    "copilot-cli": (
        {f"session-state/{SESSION}/events.jsonl": "copilot-cli/copilot-vct-events-1.0.34-20260423.jsonl"},
        {
            f"session-state/{SESSION}/workspace.yaml": f"id: {SESSION}\ncwd: /home/u/p\n",
            f"session-state/{SESSION}/plan.md": "# Plan\n- [ ] one\n",
            f"session-state/{SESSION}/autopilot-objective.json": json.dumps({"objective": "x"}),
            f"session-state/{SESSION}/client-metadata.json": json.dumps({"client": "cli"}),
            f"session-state/{SESSION}/session.db": b"SQLite format 3\0" + b"\0" * 200,
            f"session-state/{SESSION}/checkpoints/index.md": "| # | title |\n| 1 | first |\n",
            f"session-state/{SESSION}/checkpoints/001-first-steps.md": "# Checkpoint 1\n",
        },
        1,
    ),
    "codex": (
        {"codex/sessions/2026/03/24/rollout-2026-03-24T16-25-50-019d20aa.jsonl": CODEX_ROLLOUT},
        {
            "codex/history.jsonl": json.dumps({"session_id": "019d20aa", "ts": 1774369550, "text": "hi"}) + "\n",
            "codex/session_index.jsonl": json.dumps({"id": "019d20aa", "thread_name": "x", "updated_at": "2026"})
            + "\n",
            "codex/log/codex-tui.log": "2026-03-24T16:25:50.140Z  INFO codex_core::codex: new session\n",
            "codex/version.json": json.dumps({"latest_version": "0.116.0", "last_checked_at": "2026-03-24T16:00:00Z"}),
            "codex/models_cache.json": json.dumps({"fetched_at": "2026-03-24T16:00:00Z", "models": []}),
            "codex/auth.json": json.dumps({"OPENAI_API_KEY": None}),
            "codex/config.toml": 'model = "gpt-5"\n',
            "codex/state_5.sqlite": b"SQLite format 3\0" + b"\0" * 200,
            "codex/logs_2.sqlite-wal": b"\0" * 64,
        },
        1,
    ),
    "claude-code": (
        {
            "projects/-home-u-p/ef958aa1.jsonl": "claude-code/ccl-worktrees-ef958aa1-main.jsonl",
            "projects/-home-u-p/ef958aa1/subagents/agent-a36efb2a1231c41e2.jsonl": (
                "claude-code/ccl-worktrees-ef958aa1-sub-agent-a36efb2a1231c41e2.jsonl"
            ),
        },
        {
            "projects/-home-u-p/ef958aa1/subagents/agent-a36efb2a1231c41e2.meta.json": json.dumps(
                {"agentType": "general-purpose"}
            )
        },
        2,
    ),
    # Claude Code 2.1.332's session folder (linux-x64 binary, minified): a workflow's agents under
    # subagents/workflows/<run id>/ with their .meta.json, its journal (a log: read), its sidecar and script; a
    # remote agent's metadata; saved tool results (2.1.27 cli.js); 2.1.27's project-level sessions-index.json;
    # auto-memory files (cli.js 2.1.41)
    "claude-code-2.1": (
        {
            f"{CC}/subagents/workflows/wf_4af3c93a-ada/agent-a340795228348a5a6.jsonl": (
                "claude-code/ccb-android-avd-3e89eb15-sub-wf_4af3c93a-ada-agent-a340795228348a5a6.jsonl"
            ),
            f"{CC}/subagents/workflows/wf_9cab1d1d-783/journal.jsonl": (
                "claude-code/ccb-android-avd-3e89eb15-sub-wf_9cab1d1d-783-journal.jsonl"
            ),
        },
        {
            f"{CC}/subagents/workflows/wf_4af3c93a-ada/agent-a340795228348a5a6.meta.json": (
                json.dumps({"agentType": "workflow-subagent"})
            ),
            f"{CC}/subagents/explore/agent-a1b2c3d4e5f60718.meta.json": json.dumps({"agentType": "Explore"}),
            f"{CC}/workflows/wf_4af3c93a-ada.json": json.dumps(
                {"runId": "wf_4af3c93a-ada", "timestamp": "2026-05-01T10:00:00.000Z", "status": "completed"}
            ),
            f"{CC}/workflows/scripts/review-changes-1.js": "export default async () => 1;\n",
            f"{CC}/remote-agents/remote-agent-r1.meta.json": json.dumps(
                {"taskId": "r1", "remoteTaskType": "remote-agent", "title": "review"}
            ),
            f"{CC}/tool-results/toolu_01AbC.txt": "a long build log\n" * 20,
            f"{CC}/tool-results/toolu_01DeF.json": json.dumps([{"type": "text", "text": "a long listing"}]),
            # a saved Bash result holding a diff of a transcript: its context lines parse as Claude Code lines
            f"{CC}/tool-results/toolu_01GhI.txt": "diff --git a/s.jsonl b/s.jsonl\n@@ -1,2 +1,3 @@\n "
            + json.dumps({"type": "user", "sessionId": "s", "message": {"role": "user", "content": "hi"}})
            + "\n",
            # a WebFetch's binary content (2.1.97) beside the saved results; Remote Control's pointer (2.1.80)
            f"{CC}/tool-results/webfetch-1777071708581-0j5rpz.jpg": "\xff\xd8\xff\xe0 JFIF",
            "projects/-home-u-avd/bridge-pointer.json": json.dumps(
                {"sessionId": "session_01A", "environmentId": "env_01B", "source": "repl"}
            ),
            # auto memory (2.1.34 on): the project folder's memory directory
            "projects/-home-u-avd/memory/MEMORY.md": "- [build](build.md): how the AVD image is built\n",
            "projects/-home-u-avd/memory/build.md": "---\ndescription: the build\n---\nRun make.\n",
            f"{CC}/custom-title.json": json.dumps({"customTitle": "avd boot"}),
            f"{CC}/archived.json": json.dumps({"archived": True, "at": "2026-05-01T10:00:00.000Z"}),
            f"{CC}.precompact.json": json.dumps({"version": 7}),
            f"{CC}/mcp-tasks/mcp-task-t1.meta.json": json.dumps({"registryId": "t1"}),
            "projects/-home-u-avd/sessions-index.json": json.dumps(
                {"version": 1, "entries": [], "originalPath": "/home/u/avd"}, indent=2
            ),
        },
        2,
    ),
}


@pytest.mark.parametrize("family", LAYOUTS)
def test_a_batch_folder_ingests_with_its_companions_counted(corpus, tmp_path, family):
    logs, companions, runs = LAYOUTS[family]
    root = tmp_path / "batch"
    for rel, source in logs.items():
        _log(corpus, root, rel, source)
    _write(root, companions)
    code, out = _ingest(str(root), "--db", str(tmp_path / "s.duckdb"))
    assert code == 0, out
    assert "unknown format" not in out
    assert re.search(rf"skipped {len(companions)} files? harnesses write beside their logs", out), out
    assert re.search(rf"{len(logs)} files: {len(logs)} ingested, .*; {runs} runs,", out), out
    assert "0 quarantined" in out


def test_a_cline_task_folder_is_read_whole(corpus, tmp_path):
    task = tmp_path / "tasks" / "1765012345678"
    _log(corpus, task.parent, f"{task.name}/ui_messages.json", "cline/cline-xray-opus46-task_sample.ui_messages.json")
    _write(task, {"task_metadata.json": json.dumps({"files_in_context": []}), "context_history.json": "[]"})
    code, out = _ingest(str(tmp_path / "tasks"), "--db", str(tmp_path / "s.duckdb"))
    assert code == 0, out
    assert "1 files: 1 ingested" in out and "skipped" not in out


def test_a_companion_named_on_the_command_line_is_still_an_error(tmp_path):
    _write(tmp_path, LAYOUTS["mini-swe-agent"][1])
    code, out = _ingest(str(tmp_path / "run" / "preds.json"), "--db", str(tmp_path / "s.duckdb"))
    assert code == 3
    assert "preds.json:0: unknown format" in out and "skipped" not in out


def test_gemini_cli_logs_json_named_says_it_holds_no_run(tmp_path):
    """Gemini CLI before chat recording (0.1.x-0.3.x) left logs.json (Logger.logMessage: the user's prompts only);
    named on the command line it is refused as no run, not as a format to convert."""
    _write(tmp_path, {"tmp/9da8b3df/logs.json": LAYOUTS["gemini-cli"][1]["tmp/9da8b3df/logs.json"]})
    code, out = _ingest(str(tmp_path / "tmp" / "9da8b3df" / "logs.json"), "--db", str(tmp_path / "s.duckdb"))
    flat = " ".join(out.split())
    assert code == 3
    assert "logs.json:0: unknown format: named like inspect_ai/Gemini CLI's logs.json" in flat
    assert "holds no run (no model call or usage" in flat and "not one of" not in flat


def test_a_glob_expands_like_a_folder(corpus, tmp_path):
    logs, companions, _ = LAYOUTS["mini-swe-agent"]
    for rel, source in logs.items():
        _log(corpus, tmp_path, rel, source)
    _write(tmp_path, companions)
    found: list = []
    assert expand_paths([f"{tmp_path}/run/**"], companions=found) == [tmp_path / "run/i1/i1.traj.json"]
    assert len(found) == len(companions)


def test_an_unknown_file_beside_companions_is_still_unknown(corpus, tmp_path):
    logs, companions, _ = LAYOUTS["swe-agent"]
    for rel, source in logs.items():
        _log(corpus, tmp_path, rel, source)
    _write(tmp_path, {**companions, "out/notes.yaml": "a: 1\n", "out/i1/other.patch": "diff\n", "out/i2/i1.log": "x"})
    code, out = _ingest(str(tmp_path / "out"), "--db", str(tmp_path / "s.duckdb"))
    assert code == 3
    assert f"skipped {len(companions)} files" in out
    for name in ("notes.yaml", "other.patch", "i2/i1.log"):
        assert f"{name}:0: unknown format" in out
    assert "4 files: 1 ingested, 0 unchanged, 3 unknown" in out


def test_a_log_under_a_companions_name_is_read(corpus, tmp_path):
    _log(corpus, tmp_path, "run/preds.json", "mini-swe-agent/msa-testdata-github_issue.traj.json")
    _log(corpus, tmp_path, "run/metadata.json", "openhands/oh-runtime-traj-basic.json")
    found: list = []
    assert expand_paths([tmp_path], companions=found) == [tmp_path / "run/metadata.json", tmp_path / "run/preds.json"]
    assert found == []


def test_no_corpus_log_is_a_companion_even_under_a_companions_name(corpus, tmp_path):
    """Each corpus file, as it is and linked under companion names: whatever a reader sniffs is never skipped."""
    checked = 0
    for f in sorted(p for p in corpus.rglob("*") if p.is_file() and p.name != "MANIFEST.md"):
        assert companion_of(f) is None, f
        for i, name in enumerate(("preds.json", "metadata.json", "logs.json", "x/x.patch", "run_batch.log")):
            link = tmp_path / f"{checked}-{i}" / name
            link.parent.mkdir(parents=True)
            link.symlink_to(f)
            if detect(link) is not None:
                assert companion_of(link) is None, (f, name)
        checked += 1
    assert checked >= 300


def test_watch_says_the_companions_once(corpus, tmp_path, monkeypatch):
    import replay.cli.store_cmds as cmds
    from replay.ingest import watch

    logs, companions, _ = LAYOUTS["mini-swe-agent"]
    for rel, source in logs.items():
        _log(corpus, tmp_path, rel, source)
    _write(tmp_path, companions)

    def three_polls(con, sources, interval, report=None, max_line_bytes=0):
        watch(con, sources, 0, polls=3, report=report, max_line_bytes=max_line_bytes)
        raise KeyboardInterrupt

    monkeypatch.setattr(cmds, "watch_paths", three_polls)
    code, out = _ingest(str(tmp_path / "run"), "--db", str(tmp_path / "s.duckdb"), "--watch", "--interval", "0.5")
    assert code == 0, out
    assert out.count("harnesses write beside their logs") == 1
    assert out.count("ingested ") == 1 and "unknown" not in out


def test_a_relative_path_is_matched_by_its_folders_too(tmp_path, monkeypatch):
    _write(tmp_path, {"i1/i1.patch": "diff --git a/x b/x\n", "i1/notes.patch": "diff\n"})
    monkeypatch.chdir(tmp_path / "i1")
    found: list = []
    assert expand_paths(["."], companions=found) == [Path("notes.patch")]
    assert [(p, c.shown) for p, c in found] == [(Path("i1.patch"), "<id>/<id>.patch")]
