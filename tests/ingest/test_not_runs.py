"""Harness logs that hold no run: ingest names the file, the line and what is missing, and which file to ingest."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from replay.cli import app


def test_aider_analytics_log_is_refused_with_its_reason(tmp_path: Path) -> None:
    """Aider's ``--analytics-log`` (``aider/analytics.py`` ``Analytics.event``, v0.85.0): one ``{"event",
    "properties", "user_id", "time"}`` a line; ``message_send`` carries ``prompt_tokens``, ``completion_tokens``,
    ``cost`` (``base_coder.py`` ``show_usage_report``) and no message. Synthetic content. Main: "unknown format
    ... convert it to the canonical JSONL format", which it cannot be (no conversation to convert)."""
    events = [
        {"event": "launched", "properties": {"python_version": "3.12.3"}, "user_id": "u1", "time": 1_730_000_000},
        {
            "event": "message_send",
            "properties": {"main_model": "gpt-4o", "prompt_tokens": 2100, "completion_tokens": 50, "cost": 0.01},
            "user_id": "u1",
            "time": 1_730_000_010,
        },
    ]
    path = tmp_path / "analytics.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    res = CliRunner().invoke(
        app, ["ingest", str(path), "--db", str(tmp_path / "s.duckdb")], env={"COLUMNS": "300"}, catch_exceptions=False
    )
    out = " ".join(res.output.split())
    assert res.exit_code == 3
    assert "analytics.jsonl:1: an aider analytics log (--analytics-log)" in out
    assert "none of the conversation" in out and ".aider.chat.history.md" in out
    assert "canonical JSONL" not in out


def test_other_unknown_json_lines_are_still_unknown(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps({"event": "launched", "user_id": "u1"}) + "\n")
    res = CliRunner().invoke(
        app, ["ingest", str(path), "--db", str(tmp_path / "s.duckdb")], env={"COLUMNS": "300"}, catch_exceptions=False
    )
    assert res.exit_code == 3 and "unknown format" in " ".join(res.output.split())
