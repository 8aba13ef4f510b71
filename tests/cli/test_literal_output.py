"""Text from logs and users prints literally: rich markup in data is neither interpreted nor a crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from replay.cli import app
from replay.cli.common import console, run_app
from replay.errors import ReplayError

TEXT = "see [bold]this[/bold] and [/x] or [red]"
LOG = [
    {"type": "run", "format": "replay-canonical/1", "run": "r[/x]", "model": "m[bold]", "harness": "h"},
    {"type": "item", "kind": "user_text", "role": "user", "text": TEXT},
    {"type": "request", "input_tokens": 10, "output_tokens": 2},
    {"type": "[/x]"},
]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("markup")
    (folder / "m.jsonl").write_text("\n".join(json.dumps(r) for r in LOG) + "\n")
    db = folder / "s.duckdb"
    result = CliRunner().invoke(app, ["ingest", str(folder / "m.jsonl"), "--db", str(db)])
    assert result.exit_code == 3, result.output  # 3: a record was quarantined
    return db, result.output


@pytest.fixture(autouse=True)
def wide():
    """A wide console, so table cells are not wrapped mid-word; afterwards the width is free again (not pinned)."""
    saved = console._width
    console.width = 1000
    yield
    console._width = saved


def run(*args: str) -> str:
    result = CliRunner().invoke(app, list(args))
    assert result.exception is None, result.output
    return result.output


def test_ingest_message_keeps_markup_literal(store):
    assert "[/x]" in store[1]


def test_sql_prints_log_text_literally(store):
    out = run("sql", "SELECT text FROM items WHERE kind = 'user_text'", "--db", str(store[0]))
    assert "[bold]this[/bold]" in out and "[/x]" in out and "[red]" in out


def test_runs_prints_names_literally(store):
    out = run("runs", "--db", str(store[0]))
    assert "r[/x]" in out and "m[bold]" in out


def test_quarantine_prints_reason_literally(store):
    out = run("quarantine", "--db", str(store[0]))
    assert "'[/x]'" in out


def test_sql_column_names_literal(store):
    out = run("sql", 'SELECT 1 AS "[/c]"', "--db", str(store[0]))
    assert "[/c]" in out


def test_errors_keep_their_brackets(capsys, monkeypatch):
    tiny = typer.Typer()
    monkeypatch.setattr("sys.argv", ["replay"])

    @tiny.command()
    def fail() -> None:
        raise ReplayError("[sweep] batch: expected an integer, got [/x]")

    with pytest.raises(SystemExit):
        run_app(tiny)
    assert "[sweep] batch: expected an integer, got [/x]" in capsys.readouterr().err


def test_help_keeps_its_brackets():
    out = CliRunner().invoke(app, ["sweep", "--help"], terminal_width=200).output
    assert "[sweep], [fixed], [grid] or [random]" in out
