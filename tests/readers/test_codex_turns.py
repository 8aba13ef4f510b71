"""Codex turns start where codex-rs's do (``is_user_turn_boundary``): injected context opens none, so a turn's
encrypted reasoning stays in its prompts across a sub-agent's notification sent in the middle of it."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from replay.ingest import ingest
from replay.model import KINDS, Item, Run
from replay.readers.base import ReadContext
from replay.readers.codex_history import CONTEXT, TURN, message_mark
from replay.readers.codex_rollout import READER as ROLLOUT
from replay.simulator.fidelity import prompt_errors, replay_recorded
from replay.simulator.load import load_runs
from replay.store import open_store

# hand-written to codex-rs's rollout schema: injected context (permissions, AGENTS.md, environment); turn 1 spawns
# a worker and gets its <subagent_notification> before its third request; the user runs `!git status`
# (<user_shell_command>, no model call); turn 2 ("Commit it"). Recorded prompts: the items so far plus the
# reasoning since the last user-turn boundary, as codex-rs's own estimate has the server count it.
FIXTURE = Path(__file__).parent / "fixtures" / "codex-contextual.jsonl"


def read(path: Path) -> tuple[Run, list[Item]]:
    records = list(ROLLOUT.read(ReadContext(path=path, file_hash="0" * 32)))
    (run,) = [r for r in records if isinstance(r, Run)]
    return run, [i for i in records if isinstance(i, Item)]


def user_input(text: str) -> list[dict]:
    return [{"type": "input_text", "text": text}]


def test_injected_messages_and_other_agents_by_codex_rs_rule() -> None:
    notification = '<subagent_notification>\n{"agent_id":"a1","status":"completed"}\n</subagent_notification>'
    shell = "<user_shell_command>\n<command>\nls\n</command>\n</user_shell_command>"
    for text in (notification, shell, "<skill>\n<name>pdf</name>\n</skill>"):
        assert message_mark("user", user_input(text)) == CONTEXT, text
    # an assistant message holding another agent's InterAgentCommunication (protocol.rs) is a boundary
    sent = {"author": "/root/worker", "recipient": "/root", "content": "done", "trigger_turn": False}
    assert message_mark("assistant", [{"type": "output_text", "text": json.dumps(sent)}]) == TURN
    partial = {k: v for k, v in sent.items() if k != "trigger_turn"}
    assert message_mark("assistant", [{"type": "output_text", "text": json.dumps(partial)}]) is None
    assert message_mark("assistant", [{"type": "output_text", "text": "[1, 2]"}]) is None
    two = [{"type": "output_text", "text": json.dumps(sent)}] * 2  # codex-rs reads one part only
    assert message_mark("assistant", two) is None


def test_turns_open_at_prompts_only() -> None:
    _, items = read(FIXTURE)
    users = [(i.text.split("\n")[0][:26], i.turn) for i in items if i.role == "user"]
    assert users == [
        ("# AGENTS.md instructions f", 0),  # the session's context stays before the first turn
        ("<environment_context>", 0),
        ("Split parser.py into a lex", 1),
        ("<subagent_notification>", 1),  # sent in the middle of turn 1: part of it
        ("<user_shell_command>", 2),  # just above turn 2's prompt, no request between: turn 2's
        ("Commit it", 2),
    ]
    assert {i.turn for i in items if i.kind == "reasoning" and i.step <= 3} == {1}


def test_the_turns_reasoning_stays_in_its_prompts_across_a_notification(tmp_path: Path) -> None:
    """The server counts turn 1's encrypted reasoning until turn 2's first request (4), not from the request after
    the notification (2): fidelity's recorded replay agrees with every logged prompt within 3%."""
    con = open_store(tmp_path / "r.duckdb")
    ingest(con, [FIXTURE])
    (run,) = load_runs(con, None)
    reasoning = np.flatnonzero(run.kind == KINDS.index("reasoning"))
    first_turn = reasoning[run.step[reasoning] <= 4]  # what requests 0-3 (turn 1) reasoned, sent from the next
    assert len(first_turn) == 4 and list(run.gone_at[first_turn]) == [4, 4, 4, 4]
    assert (run.gone_at[reasoning[run.step[reasoning] > 4]] == -1).all()
    cols, _ = replay_recorded(run, "none")
    err = prompt_errors(cols)
    assert (err < 0.03).all(), err
    prompt = cols["prompt_tokens"]  # across the notification nothing leaves: the prompt grows by what arrived
    assert prompt[2] - prompt[1] == int(run.tokens[run.step == 2].sum())


def count(total: int, prompt: int) -> tuple[str, dict]:
    last = {"input_tokens": prompt, "output_tokens": 10}
    return "event_msg", {
        "type": "token_count",
        "info": {"total_token_usage": {"total_tokens": total}, "last_token_usage": last},
    }


def test_another_agents_assistant_message_is_input_that_opens_a_turn(tmp_path: Path) -> None:
    sent = {"author": "/root/worker", "recipient": "/root", "content": "lexer done", "trigger_turn": False}
    lines = [
        ("response_item", {"type": "message", "role": "user", "content": user_input("split the parser")}),
        ("response_item", {"type": "reasoning", "summary": [], "encrypted_content": "gAAAA" + "Q" * 40}),
        count(110, 100),
        (
            "response_item",
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": json.dumps(sent)}]},
        ),
        count(250, 130),
    ]
    path = tmp_path / "rollout.jsonl"
    rows = [{"timestamp": f"2026-01-01T00:00:{k:02d}Z", "type": t, "payload": p} for k, (t, p) in enumerate(lines)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _, items = read(path)
    assert [(i.kind, i.step, i.turn) for i in items] == [
        ("user_text", 0, 1),
        ("reasoning", 1, 1),
        ("assistant_text", 1, 2),  # the other agent's message: sent with request 1, in a turn of its own
    ]


def test_a_replacement_historys_context_stays_in_its_turn(tmp_path: Path) -> None:
    """codex-rs puts the summary last in a replacement history: the re-injected context above the next prompt is
    not just above it, so it does not join that prompt's turn (the reader adds the summary first)."""
    env = "<environment_context>\n  <cwd>/r</cwd>\n</environment_context>"
    replacement = [  # the initial context re-injected above the summary
        {"type": "message", "role": "user", "content": user_input("split the parser")},
        {"type": "message", "role": "user", "content": user_input(env)},
        {"type": "message", "role": "user", "content": user_input("SUMMARY: split half done")},
    ]
    lines = [
        ("response_item", {"type": "message", "role": "user", "content": user_input("split the parser")}),
        count(110, 100),
        ("compacted", {"message": "SUMMARY: split half done", "replacement_history": replacement}),
        ("response_item", {"type": "message", "role": "user", "content": user_input("go on")}),
        count(250, 130),
    ]
    path = tmp_path / "rollout.jsonl"
    rows = [{"timestamp": f"2026-01-01T00:00:{k:02d}Z", "type": t, "payload": p} for k, (t, p) in enumerate(lines)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _, items = read(path)
    assert [(i.text[:12], i.turn) for i in items] == [
        ("split the pa", 1),
        ("SUMMARY: spl", 1),
        ("split the pa", 1),
        ("<environment", 1),
        ("go on", 2),
    ]
