"""Gemini CLI thoughts: the CLI keeps a response's thought parts out of its history (geminiChat's stream handling
filters them); the server may count the signatures the history keeps in their place, within the turn. The usage
says which: calibration leaves the thoughts out of every prompt when the recorded prompts grew by none of them, and
keeps them within their turn when they grew by them (replay.tokens.usage_metadata.exact_sizes).

The sessions are written in the recording's JSONL layout (a metadata line, message records, a gemini message
appended again once its tool calls finish) with prompts that a server counting four characters a token would
report over a fixed prefix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from readers.gemini_fixture import message, read_call

from replay.ingest import ingest
from replay.store import open_store
from replay.tokens.calibrate import fit_usage
from replay.tokens.template import DEFAULT_OVERHEAD

PREFIX = 7_000
THOUGHTS = [900, 2_400, 300, 3_100, 1_500, 700, 2_800, 400]  # each response's thoughts count
SIZES = [6_000, 2_000, 9_000, 1_200, 4_000, 7_500, 3_000, 5_000]  # each response's tool output, in characters


def session(path: Path, counted: bool) -> Path:
    """Two user turns of four tool-calling responses each, then a closing answer; ``counted``: the server counted
    each earlier response's thoughts of the same turn in the prompt."""
    lines: list[dict] = [
        {"sessionId": "s-thoughts", "projectHash": "p" * 64, "startTime": "2026-04-25T00:00:00.000Z", "kind": "main"}
    ]
    history = 0  # characters the history holds, as the server counts them at four a token
    in_turn = 0  # thoughts of the current turn's earlier responses
    for k, (thoughts, size) in enumerate(zip(THOUGHTS, SIZES, strict=True)):
        if k in (0, 4):
            text = f"Turn {k}: read the next files and report what they hold."
            lines.append(message(f"u{k}", "user", [{"text": text}]))
            history += len(text)
            in_turn = 0
        tokens = {
            "input": PREFIX + history // 4 + (in_turn if counted else 0),
            "output": 20,
            "cached": 0,
            "thoughts": thoughts,
            "tool": 0,
        }
        thought = [{"subject": "Reading", "description": f"next file {k}", "timestamp": "2026-04-25T00:00:01.000Z"}]
        first = message(f"g{k}", "gemini", "", thoughts=thought, tokens=tokens, model="gemini-3-flash-preview")
        call = read_call(f"c{k}", size)
        lines += [first, {**first, "toolCalls": [call]}]  # appended again once the call finished
        history += len(json.dumps(call["args"])) + len(json.dumps(call["result"][0]["functionResponse"]["response"]))
        in_turn += thoughts
    tokens = {"input": PREFIX + history // 4 + (in_turn if counted else 0), "output": 30, "cached": 0, "thoughts": 0}
    lines.append(message("g-end", "gemini", "All files read.", tokens=tokens, model="gemini-3-flash-preview"))
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("counted", [False, True])
def test_calibration_reads_from_the_usage_whether_thoughts_count(tmp_path: Path, counted: bool) -> None:
    path = session(tmp_path / "session-2026-04-25T00-00-thoughts.jsonl", counted)
    con = open_store(tmp_path / "store.duckdb")
    ingest(con, [path])
    (metadata,) = con.execute("SELECT metadata FROM runs").fetchall()[0]
    assert json.loads(metadata)["reasoning_by_signature"] is True
    _, runs, _ = fit_usage(con, None, DEFAULT_OVERHEAD)
    (row,) = runs.to_dicts()
    assert row["reasoning_in_prompt"] is counted
    assert row["median_err"] < 0.01 and row["p95_err"] < 0.02  # in the prompt within the turn on main: 5%+ off
