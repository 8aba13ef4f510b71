"""Codex thread rollback (``thread_rolled_back``): the undone turns leave every prompt after it, by codex-rs's rule."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from replay.model import KINDS, Item, Run
from replay.readers.base import ReadContext
from replay.readers.codex_history import CONTEXT, TURN, message_mark
from replay.readers.codex_rollout import READER as ROLLOUT
from replay.readers.codex_tui import READER as TUI

FIXTURE = Path(__file__).parent / "fixtures" / "codex-rollback.jsonl"


def read(reader, path: Path) -> list:
    return list(reader.read(ReadContext(path=path, file_hash="0" * 32)))


def rollout(tmp_path: Path, lines: list[tuple[str, dict]]) -> Path:
    path = tmp_path / "rollout.jsonl"
    rows = (
        json.dumps({"timestamp": f"2026-01-01T00:00:{k:02d}Z", "type": t, "payload": p})
        for k, (t, p) in enumerate(lines)
    )
    path.write_text("\n".join(rows) + "\n")
    return path


def message(role: str, text: str) -> tuple[str, dict]:
    kind = "output_text" if role == "assistant" else "input_text"
    return "response_item", {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def tokens(total: int, prompt: int) -> tuple[str, dict]:
    last = {"input_tokens": prompt, "cached_input_tokens": 0, "output_tokens": 10, "total_tokens": prompt + 10}
    return "event_msg", {
        "type": "token_count",
        "info": {"total_token_usage": {"total_tokens": total}, "last_token_usage": last},
    }


def rolled_back(turns: object) -> tuple[str, dict]:
    return "event_msg", {"type": "thread_rolled_back", "num_turns": turns}


def dropped(run: Run, k: int = 0) -> list[int]:
    return [q for lo, hi in run.metadata["rollbacks"][k]["drop"] for q in range(lo, hi)]


def test_contextual_messages_are_not_turns() -> None:
    assert message_mark("user", [{"type": "input_text", "text": "fix the bug"}]) == TURN
    for text in (
        "<environment_context>\n  <cwd>/r</cwd>\n</environment_context>",
        "# AGENTS.md instructions for /r\n\n<INSTRUCTIONS>\nbe terse\n</INSTRUCTIONS>",
        "<user_instructions>\nbe terse\n</user_instructions>",
        "<turn_aborted>\nThe user interrupted the previous turn.",
    ):
        assert message_mark("user", [{"type": "input_text", "text": "  " + text}]) == CONTEXT, text
    # a user message that only mentions a tag is the user's: a turn
    assert message_mark("user", [{"type": "input_text", "text": "<environment_context> is what?"}]) == TURN
    assert message_mark("developer", [{"type": "input_text", "text": "<permissions instructions>x"}]) == CONTEXT
    assert message_mark("developer", [{"type": "input_text", "text": "Follow the style guide."}]) is None
    assert message_mark("assistant", [{"type": "output_text", "text": "done"}]) is None


# what the rollback in the fixture undoes: turn 2 and the environment update injected just above its prompt
TURN_2 = ["user_text", "user_text", "reasoning", "tool_call", "tool_result", "reasoning", "tool_call", "tool_result"]
TURN_2 += ["reasoning", "assistant_text"]


def test_rollback_drops_the_last_turn_and_the_context_update_above_it() -> None:
    # hand-written to codex-rs's rollout schema: three injected context messages, turn 1, an environment update and
    # turn 2 (two calls), `thread_rolled_back` with num_turns 1, then turn 3
    records = read(ROLLOUT, FIXTURE)
    (run,) = [r for r in records if isinstance(r, Run)]
    items = {i.seq: i for i in records if isinstance(i, Item)}
    (rollback,) = run.metadata["rollbacks"]
    assert {k: rollback[k] for k in ("step", "line", "turns", "found")} == {
        "step": 5,
        "line": 34,
        "turns": 1,
        "found": 1,
    }
    gone = [items[q] for q in dropped(run)]
    assert [i.kind for i in gone] == TURN_2
    assert gone[0].text.startswith("<environment_context>") and gone[1].text == "Now write tests for every option"
    kept = [i for q, i in items.items() if q not in set(dropped(run))]
    assert [i.text for i in kept if i.kind == "user_text" and not i.text.startswith(("<", "#"))] == [
        "Add a --verbose flag to cli.py",
        "Instead, make --verbose print the config it loaded",
    ]
    assert all(i.step <= 5 for i in gone) and "warnings" not in run.metadata


def test_the_prompt_after_a_rollback_drops_the_undone_turn(tmp_path: Path) -> None:
    """Every policy's prompt (fidelity's recorded replay here) loses the undone items at the first request after
    the rollback; the log's own figure, 3,698 after 4,874, agrees."""
    from replay.ingest import ingest
    from replay.simulator.fidelity import prompt_errors, replay_recorded
    from replay.simulator.load import load_runs
    from replay.store import open_store

    con = open_store(tmp_path / "r.duckdb")
    ingest(con, [FIXTURE])
    (run,) = load_runs(con, None)
    positions = np.flatnonzero(run.gone_at == 5)
    assert [KINDS[k] for k in run.kind[positions]] == TURN_2
    assert (run.gone_at[run.turn == run.turn.max()] == -1).all()  # the turn after the rollback stays
    cols, _ = replay_recorded(run, "none")
    prompt = cols["prompt_tokens"]
    arrived = int(run.tokens[run.step == 5].sum())
    removed = int(run.tokens[positions].sum())
    assert removed > 1000
    assert prompt[5] - prompt[4] == arrived - removed
    err = prompt_errors(cols)
    assert err[5] < 0.03 and err[6] < 0.03, err


def test_more_turns_than_there_are_keeps_what_came_before_the_first(tmp_path: Path) -> None:
    agents = "# AGENTS.md instructions for /r\n\n<INSTRUCTIONS>\nbe terse\n</INSTRUCTIONS>"
    path = rollout(
        tmp_path,
        [
            ("session_meta", {"id": "s", "base_instructions": {"text": "You are Codex"}}),
            message("user", agents),
            message("user", "first"),
            message("assistant", "one"),
            tokens(100, 90),
            message("user", "second"),
            message("assistant", "two"),
            tokens(300, 190),
            rolled_back(5),
            message("user", "again"),
            tokens(400, 60),
        ],
    )
    records = read(ROLLOUT, path)
    (run,) = [r for r in records if isinstance(r, Run)]
    items = {i.seq: i.text for i in records if isinstance(i, Item)}
    (rollback,) = run.metadata["rollbacks"]
    assert (rollback["turns"], rollback["found"], rollback["step"]) == (5, 2, 2)
    assert [items[q] for q in dropped(run)] == ["first", "one", "second", "two"]  # the instructions before stay


def test_rollback_with_no_turn_drops_nothing_and_a_bad_count_is_warned(tmp_path: Path) -> None:
    path = rollout(
        tmp_path,
        [
            ("session_meta", {"id": "s"}),
            message("developer", "<permissions instructions>x</permissions instructions>"),
            rolled_back(1),
            rolled_back("two"),
            message("user", "go"),
            tokens(100, 90),
        ],
    )
    (run,) = [r for r in read(ROLLOUT, path) if isinstance(r, Run)]
    assert run.metadata["rollbacks"] == [{"step": 0, "line": 3, "turns": 1, "found": 0, "drop": []}]
    (warning,) = run.metadata["warnings"]
    assert warning["line"] == 4 and "num_turns 'two'" in warning["message"]


def test_rollback_after_a_compaction_counts_turns_in_the_replacement_history(tmp_path: Path) -> None:
    """The replacement history ends with the summary (a user message: a turn); the reader emits the summary first,
    so the rollback must follow Codex's order, not the reader's: two turns back from "next" is the summary."""
    summary = "PREFIX summary of the work"
    path = rollout(
        tmp_path,
        [
            ("session_meta", {"id": "s", "base_instructions": {"text": "You are Codex"}}),
            message("user", "build it"),
            message("assistant", "built"),
            tokens(100, 90),
            tokens(300, 180),  # the summariser's call
            (
                "compacted",
                {
                    "message": summary,
                    "replacement_history": [message("user", "build it")[1], message("user", summary)[1]],
                },
            ),
            message("user", "next"),
            message("assistant", "done"),
            tokens(400, 60),
            rolled_back(2),
            message("user", "other"),
            tokens(500, 50),
        ],
    )
    records = read(ROLLOUT, path)
    (run,) = [r for r in records if isinstance(r, Run)]
    items = {i.seq: (i.kind, i.text) for i in records if isinstance(i, Item)}
    assert [items[q] for q in dropped(run)] == [("summary", summary), ("user_text", "next"), ("assistant_text", "done")]
    (warning,) = run.metadata["warnings"]
    assert warning["line"] == 10 and "compaction" in warning["message"]


def test_tui_rollback_drops_the_last_task(tmp_path: Path) -> None:
    """The TUI log holds no user prompt: a turn starts at its task_started."""

    stamps = iter(range(60))

    def event(msg: dict) -> dict:
        return {
            "ts": f"2026-01-01T00:00:{next(stamps):02d}Z",  # a line repeated byte for byte is read once
            "dir": "to_tui",
            "kind": "codex_event",
            "payload": {"id": "1", "msg": msg},
        }

    def count(total: int) -> dict:
        last = {"input_tokens": 100, "cached_input_tokens": 0, "output_tokens": 10, "total_tokens": 110}
        return event(
            {"type": "token_count", "info": {"total_token_usage": {"total_tokens": total}, "last_token_usage": last}}
        )

    path = tmp_path / "tui.jsonl"
    records = [
        event({"type": "session_configured", "model": "gpt-5"}),
        event({"type": "task_started"}),
        event({"type": "agent_message", "message": "one"}),
        count(110),
        event({"type": "task_started"}),
        event({"type": "agent_message", "message": "two"}),
        count(220),
        event({"type": "thread_rolled_back", "num_turns": 1}),
        event({"type": "task_started"}),
        event({"type": "agent_message", "message": "three"}),
        count(330),
    ]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    out = read(TUI, path)
    (run,) = [r for r in out if isinstance(r, Run)]
    items = {i.seq: i.text for i in out if isinstance(i, Item)}
    assert [items[q] for q in dropped(run)] == ["two"] and run.metadata["rollbacks"][0]["step"] == 2
