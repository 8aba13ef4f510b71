"""Claude Code changes its system prompt or a tool's description while a session runs, from state its transcript
records (replay.simulator.harness_changes): a user turn that starts in another working directory, and (2.1.0 to
2.1.22) a skill file the session writes, which the Skill tool's description lists. Anthropic's cache then keeps only
what precedes the change. A session written the way Claude Code 2.1.22 writes its transcript: each simulated request
reads what the log's does, and no loss is left unexplained. Fails on f816d46 (no such change modelled)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from replay.ingest import ingest
from replay.policies import Budget, make_policy
from replay.simulator.cache_kept import cache_kept
from replay.simulator.cache_losses import unexplained_losses
from replay.simulator.harness_changes import SKILL_FILE, _changes_listing, lists_skills
from replay.simulator.load import load_runs
from replay.simulator.run import simulate_run
from replay.simulator.run_start import with_start
from replay.store import open_store
from tests.simulator.corpus_runs import one_run

SID = "7b0e3c1d-5a2f-4e8b-9c61-2d4f6a8b0c13"
WARM = 16_000  # the shared prefix (tools and the system prompt's first block) other sessions keep warm
SKILL = "/home/dev/.claude/skills/deploy/SKILL.md"


def _session(path: Path, version: str) -> Path:
    """Turn 1 in /home/dev/app ends after a ``cd`` into a worktree; turn 2 starts there (request 2 reads only the
    warm prefix), writes a new skill at 10:01:06 (request 3, sent with its result, reads all; request 4, sent with
    the next result 5.5 s later, reads only the warm prefix on 2.1.22) and reads on (request 5)."""
    lines: list[dict] = []

    def add(kind: str, cwd: str, ts: str, message: dict, **extra) -> None:
        n = len(lines) + 1
        lines.append(
            {
                "parentUuid": f"30000000-0000-4000-8000-{n - 1:012d}" if n > 1 else None,
                "isSidechain": False,
                "userType": "external",
                "cwd": cwd,
                "sessionId": SID,
                "version": version,
                "gitBranch": "main",
                "type": kind,
                "message": message,
                "uuid": f"30000000-0000-4000-8000-{n:012d}",
                "timestamp": f"2026-01-31T10:{ts}Z",
                **extra,
            }
        )

    def respond(k: int, cwd: str, ts: str, content: list[dict], read: int, write: int) -> None:
        usage = {
            "input_tokens": 3,
            "cache_creation_input_tokens": write,
            "cache_read_input_tokens": read,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": write},
            "output_tokens": 60,
        }
        message = {
            "model": "claude-opus-4-5-20251101",
            "id": f"msg_01Harness{k:015d}",
            "type": "message",
            "role": "assistant",
            "content": content,
            "stop_reason": "tool_use" if content[-1]["type"] == "tool_use" else "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }
        add("assistant", cwd, ts, message, requestId=f"req_011CHarness{k:013d}")

    def result(k: int, cwd: str, ts: str, text: str) -> None:
        block = {"tool_use_id": f"toolu_01Harness{k:013d}", "type": "tool_result", "content": text}
        add("user", cwd, ts, {"role": "user", "content": [block]})

    def call(k: int, name: str, args: dict) -> list[dict]:
        return [{"type": "tool_use", "id": f"toolu_01Harness{k:013d}", "name": name, "input": args}]

    app, tree = "/home/dev/app", "/home/dev/app-deploy"
    body = "\n".join(f"line {i}: deploy step {i} of the release checklist" for i in range(80))
    add("user", app, "00:00.000", {"role": "user", "content": "Make a worktree for the deploy work."})
    respond(0, app, "00:05.000", call(0, "Bash", {"command": f"git worktree add {tree} && cd {tree}"}), WARM, 14_000)
    result(0, tree, "00:06.000", "Preparing worktree (new branch 'deploy')")
    respond(1, tree, "00:09.000", [{"type": "text", "text": "The worktree is ready."}], 30_003, 300)
    add("user", tree, "01:00.000", {"role": "user", "content": "Write a deploy skill from the checklist."})
    skill = f"---\nname: deploy\ndescription: Release checklist for the app\n---\n\n{body}\n"
    respond(2, tree, "01:05.000", call(2, "Write", {"file_path": SKILL, "content": skill}), WARM, 14_700)
    result(2, tree, "01:06.000", f"File created successfully at: {SKILL}")
    respond(3, tree, "01:06.050", call(3, "Read", {"file_path": f"{tree}/RELEASE.md"}), 30_703, 1_200)
    result(3, tree, "01:11.500", body)
    respond(4, tree, "01:12.000", call(4, "Read", {"file_path": f"{tree}/deploy.sh"}), WARM, 16_900)
    result(4, tree, "01:12.500", body)
    respond(5, tree, "01:15.000", [{"type": "text", "text": "Done."}], 32_903, 1_100)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _run(tmp_path: Path, version: str):
    db = tmp_path / f"{version}.duckdb"
    con = open_store(db)
    ingest(con, [_session(tmp_path / f"{SID}.jsonl", version)])
    (run,) = load_runs(con)
    con.close()
    return run


def test_a_new_working_directory_and_a_new_skill_keep_only_the_warm_prefix(tmp_path: Path) -> None:
    run = _run(tmp_path, "2.1.22")
    assert np.flatnonzero(run.harness_changes).tolist() == [2, 4]
    assert run.system_tokens == WARM and run.rec_cache_read[[2, 4]].tolist() == [WARM, WARM]
    cols, _ = simulate_run(run, make_policy("recorded"), None, Budget(200_000))
    assert [int(cols["cached_tokens"][k]) for k in (2, 4)] == [WARM, WARM]
    assert cols["cached_tokens"][3] > WARM and cols["cached_tokens"][5] > WARM  # sent too soon / after: read on
    assert len(unexplained_losses(run).requests) == 0


def test_from_2_1_53_a_new_working_directory_keeps_the_prompt(tmp_path: Path) -> None:
    """Claude Code 2.1.53 on computes the system prompt's environment section once a session (cli.js 2.1.53: the
    memoised ``env_info_simple`` section): the turn started in the worktree changes no cached prefix. 2.1.52 still
    rebuilds it for each turn (the sectioned path behind ``tengu_vinteuil_phrase``, off by default)."""
    assert np.flatnonzero(_run(tmp_path, "2.1.52").harness_changes).tolist() == [2]
    run = _run(tmp_path, "2.1.53")
    assert not run.harness_changes.any()
    assert unexplained_losses(run).requests.tolist() == [2, 4]  # the session's reads now have no cause in the log


def test_from_2_1_23_the_skill_listing_is_an_attachment(tmp_path: Path) -> None:
    """Claude Code 2.1.23 on appends the listing to the conversation (a ``skill_listing`` attachment): the new skill
    changes no cached prefix, and request 4's loss (had the log shown one) has no cause the log gives."""
    run = _run(tmp_path, "2.1.27")
    assert np.flatnonzero(run.harness_changes).tolist() == [2]
    assert unexplained_losses(run).requests.tolist() == [4]


def _reads(path: Path, sid: str, version: str, cwd: str, calls: list[tuple[str, str, str, int]]) -> Path:
    """A session of one turn in ``cwd``: per request, (the tool's file, its response's time, its result's time, the
    cache read the log records); a Write when the file is a SKILL.md, else a Read."""
    lines: list[dict] = []

    def add(kind: str, ts: str, message: dict, **extra) -> None:
        n = len(lines) + 1
        parent = f"40000000-0000-4000-8000-{sid[:4]}{n - 1:08d}" if n > 1 else None
        lines.append(
            {
                "parentUuid": parent,
                "isSidechain": False,
                "userType": "external",
                "cwd": cwd,
                "sessionId": sid,
                "version": version,
                "type": kind,
                "message": message,
                "uuid": f"40000000-0000-4000-8000-{sid[:4]}{n:08d}",
                "timestamp": f"2026-01-31T10:{ts}Z",
                **extra,
            }
        )

    add("user", "00:00.000", {"role": "user", "content": "Tidy the lint setup."})
    for k, (file, asked, done, read) in enumerate(calls):
        write = file.endswith("SKILL.md")
        args = {"file_path": file, "content": "---\nname: lint\ndescription: Lint rules\n---\n"} if write else {}
        tool = {"type": "tool_use", "id": f"toolu_01{sid[:4]}{k:016d}", "name": "Write" if write else "Read"}
        usage = {"input_tokens": 3, "cache_creation_input_tokens": 500, "cache_read_input_tokens": read}
        usage |= {"output_tokens": 40}
        message = {"model": "claude-opus-4-5-20251101", "id": f"msg_01{sid[:4]}{k:018d}", "type": "message"}
        message |= {"role": "assistant", "content": [tool | {"input": args or {"file_path": file}}], "usage": usage}
        add("assistant", asked, message, requestId=f"req_011C{sid[:4]}{k:016d}")
        result = {"tool_use_id": tool["id"], "type": "tool_result", "content": f"{file}: ok\n" * 40}
        add("user", done, {"role": "user", "content": [result]})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_a_skill_another_session_writes_changes_the_listing(tmp_path: Path) -> None:
    """Session A (2.1.22, /home/dev/app) sends a request every 10 s; session B (2.1.27, /home/dev/tools) writes a
    skill in the user's ~/.claude/skills (result at 10:00:14) and one in its own project's .claude/skills (10:00:24).
    A's Claude Code watches the first folder, not the second: its request sent at 10:00:20 reads only the warm
    prefix, as its log would show, and the one at 10:00:30 reads on."""
    app, tools = "/home/dev/app", "/home/dev/tools"
    a = [
        (f"{app}/f{k}.py", f"00:{10 * k + 5:02d}.000", f"00:{10 * k + 10:02d}.000", r)
        for k, r in enumerate([WARM, 30_000, WARM, 31_000])
    ]
    b = [
        (f"{tools}/setup.cfg", "00:05.000", "00:06.000", WARM),
        ("/home/dev/.claude/skills/lint/SKILL.md", "00:12.000", "00:14.000", 30_000),
        (f"{tools}/.claude/skills/fmt/SKILL.md", "00:22.000", "00:24.000", 30_600),
    ]
    db = tmp_path / "two.duckdb"
    con = open_store(db)
    ingest(con, [_reads(tmp_path / "a.jsonl", "aaaa1111-0000-4000-8000-000000000001", "2.1.22", app, a)])
    ingest(con, [_reads(tmp_path / "b.jsonl", "bbbb2222-0000-4000-8000-000000000002", "2.1.27", tools, b)])
    runs = {r.run_id.split("-")[0]: r for r in load_runs(con)}
    con.close()
    assert np.flatnonzero(runs["a"].harness_changes).tolist() == [2]
    assert not runs["b"].harness_changes.any()  # 2.1.27: the listing is an attachment


@pytest.mark.parametrize(
    ("version", "listed"), [("2.0.76", False), ("2.1.0", True), ("2.1.22", True), ("2.1.23", False), (None, False)]
)
def test_versions_that_list_skills_in_the_tool_description(version: str | None, listed: bool) -> None:
    assert lists_skills({"cc_version": version}) is listed


def test_a_turn_in_another_directory_reads_only_the_system_prompt(claude_code_runs):
    """ccl-sample-37f83ec9 (Claude Code 1.0.51): the turn of request 58 starts in .../claude-code-log/test, where the
    turn before started in .../claude-code-log; 6 s after a request that left 76k cached, request 58 reads 10,671
    tokens, the system prompt breakpoint. Modelled, the replay reads the same and the run's recorded-policy cost
    meets its bill (-7.9% on f816d46, when the loss was named in ``bill_gap`` with no cause)."""
    run = one_run(claude_code_runs, "ccl-sample-37f83ec9")
    assert np.flatnonzero(run.harness_changes).tolist() == [58]
    assert run.rec_cache_read[58] == run.system_tokens == 10_671
    cols, row = simulate_run(run, make_policy("recorded"), None, Budget(200_000))
    assert cols["cached_tokens"][58] == 10_671
    assert abs(row["billed_cost_usd"] / row["recorded_cost_usd"] - 1) <= 0.01, row
    assert row["bill_gap"] == ""


def test_the_cwd_change_explains_a_loss_it_bounds(claude_code_runs):
    """cc-jason-webtech-48244adb (2.1.19), request 149: the turn starts in packages/app-vsaas-portal after turns in
    the repository's root, and reads 29,257 of the 73,149 tokens held: no longer an unexplained loss. The rule
    bounds the read there by the 10,359-token system breakpoint; the server kept more (Claude Code 2.1.23 on may
    cache the static part of its system prompt apart, behind a feature gate the log does not record), which the
    replay meets as the log shows it (replay.simulator.server_cache)."""
    run = one_run(claude_code_runs, "cc-jason-webtech-48244adb")
    assert np.flatnonzero(run.harness_changes).tolist() == [149]
    assert 149 not in unexplained_losses(run).requests.tolist()
    bounded = with_start(replace(run, server_read=np.zeros(0, np.int64)), "anthropic")
    assert bounded.cache_caps[149] == run.system_tokens == 10_359
    assert cache_kept(bounded).past_change.tolist() == [149]
    cols, _ = simulate_run(bounded, make_policy("recorded"), None, Budget(200_000))
    assert cols["cached_tokens"][149] == 10_359
    cols, _ = simulate_run(run, make_policy("recorded"), None, Budget(200_000))
    assert run.cache_caps[149] == -1 and cols["cached_tokens"][149] == run.rec_cache_read[149] == 29_257


@pytest.mark.parametrize(
    ("tool", "args", "changes"),
    [
        ("Write", '{"file_path":"x","content":"body"}', True),
        ("mcp__acp__Write", None, True),  # Zed's ACP adapter writes the file itself
        ("Edit", '{"old_string":"description: old","new_string":"description: new"}', True),
        ("Edit", '{"old_string":"---\\nname: a\\n","new_string":"---\\nname: b\\n"}', True),
        ("Edit", '{"old_string":"step 1","new_string":"step one"}', False),  # the body: the listing stays
        ("Read", None, False),
    ],
)
def test_which_calls_change_the_listing(tool: str, args: str | None, changes: bool) -> None:
    assert _changes_listing(tool, args) is changes


@pytest.mark.parametrize(
    ("path", "listed"),
    [
        ("/home/dev/.claude/skills/deploy/SKILL.md", True),
        ("/home/dev/app/.claude/commands/review.md", True),
        ("/home/dev/app/.claude/commands/team/review.md", True),
        ("/home/dev/.claude/skills/deploy/reference.md", False),  # a skill's other files: not its listing
        ("/home/dev/.claude/skills/loose.md", False),  # not a skill folder
        ("/home/dev/.claude/plans/plan.md", False),
    ],
)
def test_skill_definition_files(path: str, listed: bool) -> None:
    assert bool(SKILL_FILE.search(path)) is listed
