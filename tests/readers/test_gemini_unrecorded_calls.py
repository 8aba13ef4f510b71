"""Gemini CLI recordings whose writer keeps no tool calls (the JSON layout of the CLI's first chat recordings, as
in a session of 2025-09: ``{id, timestamp, type, content, thoughts, tokens, model}`` gemini messages and no
``toolCalls`` anywhere).

A model request is only sent with new input: a user message, the function responses of the previous response's
calls, a continuation prompt. A gemini message that follows a gemini response with no tool call and no user
message between was therefore sent something the log does not hold, here the calls and their results, and its
prompt grows by them. The reader notes each such request (``unlogged``, ``varies``) and calibration flags the run,
where a fit would otherwise take a token scale of ~10 for what is missing.
"""

from __future__ import annotations

import json
from pathlib import Path

from readers.gemini_fixture import message, read_call

from replay.ingest import ingest
from replay.readers.gemini_cli import UNRECORDED_INPUT
from replay.store import open_store
from replay.tokens.calibrate import fit_usage
from replay.tokens.template import DEFAULT_OVERHEAD

PREFIX = 9_000
OUTPUTS = [3_000, 9_000, 1_500, 12_000, 4_000, 800, 6_000, 2_500, 10_000, 5_000]  # tool output per call, chars


def session(path: Path, record_calls: bool) -> Path:
    """One user turn, one tool call per response, a closing answer; the server counts four characters a token
    over a fixed prefix. ``record_calls``: the gemini messages hold their ``toolCalls`` (the later writers)."""
    history = 0
    text = "Set up the brain system: read the config files and summarise them."
    messages = [message("u0", "user", text)]
    history += len(text)
    for k, size in enumerate([*OUTPUTS, None]):
        reply = f"Reading file {k}." if size is not None else "All files read; the setup is complete."
        tokens = {"input": PREFIX + history // 4, "output": 20, "cached": 0, "thoughts": 0, "tool": 0}
        msg = message(f"g{k}", "gemini", reply, thoughts=[], tokens=tokens, model="gemini-2.5-pro")
        history += len(reply)
        if size is not None:
            call = read_call(f"c{k}", size)
            if record_calls:
                msg["toolCalls"] = [call]
            history += len(json.dumps(call["args"])) + len(json.dumps(call["result"][0]["functionResponse"]))
        messages.append(msg)
    doc = {"sessionId": "s-nocalls", "projectHash": "p" * 64, "startTime": "2025-09-16T20:39:00.000Z"}
    path.write_text(json.dumps({**doc, "lastUpdated": "2025-09-16T21:00:00.000Z", "messages": messages}))
    return path


def calibrated(tmp_path: Path, record_calls: bool) -> tuple[dict, dict]:
    path = session(tmp_path / "session-2025-09-16T20-39-s-nocalls.json", record_calls)
    con = open_store(tmp_path / "store.duckdb")
    ingest(con, [path])
    (metadata,) = con.execute("SELECT metadata FROM runs").fetchall()[0]
    _, runs, _ = fit_usage(con, None, DEFAULT_OVERHEAD)
    (row,) = runs.to_dicts()
    return json.loads(metadata), row


def test_requests_after_a_reply_with_no_recorded_call_are_flagged(tmp_path: Path) -> None:
    metadata, row = calibrated(tmp_path, record_calls=False)
    notes = metadata["unlogged"]
    assert [n["step"] for n in notes] == list(range(1, len(OUTPUTS) + 1))
    assert all(n["reason"] == UNRECORDED_INPUT and n["varies"] for n in notes)
    reason = row["unreconstructable"]
    assert reason.startswith(f"content outside the log: at {len(OUTPUTS)} of {len(OUTPUTS) + 1} requests")
    assert UNRECORDED_INPUT in reason


def test_recorded_calls_are_read_and_within_target(tmp_path: Path) -> None:
    metadata, row = calibrated(tmp_path, record_calls=True)
    assert "unlogged" not in metadata and row["unreconstructable"] == ""
    assert row["median_err"] < 0.03 and row["p95_err"] < 0.10
