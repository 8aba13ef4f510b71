"""`replay runs --compact` for narrow terminals, as ccusage's compact mode: the fewest columns (the run or group,
its requests, its cost), every label and number whole on its line, at 60 and 80 columns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cli import app
from replay.cli.common import UNKNOWN_COST, cell
from replay.ingest import ingest
from replay.store import open_store

FILES = (  # long run ids, sidechains, a run without a price, models of three providers
    "aider/aider-afi-core-gpt4o.md",
    "claude-code/ccl-coderabbit-agent-ea02459f.jsonl",
    "claude-code/cc-fixture-agentsessions-small.jsonl",
    "gemini-cli/gemini-vct-init-v040-20260423.jsonl",
)


@pytest.fixture(scope="module")
def db(corpus, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("compact") / "s.duckdb"
    con = open_store(path)
    ingest(con, [corpus / f for f in FILES])
    con.close()
    return path


def run(*args: str, width: int):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": str(width)})


@pytest.mark.parametrize("width", [60, 80])
@pytest.mark.parametrize("by", ["run", "model", "day"])
def test_compact_keeps_every_label_and_number_whole(db, width, by):
    res = run("runs", "--db", str(db), "--compact", "--by", by, width=width)
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert max(len(line) for line in lines) <= width
    key = "run_id" if by == "run" else by
    rule = next(i for i, line in enumerate(lines) if line.strip().startswith("─"))
    assert lines[rule - 1].split() == [key, "requests", "cost_usd"]  # nothing else, nothing left out
    assert "left out at" not in res.stdout
    rows = json.loads(run("runs", "--db", str(db), "--format", "json", "--by", by, width=width).stdout)
    assert len(rows) >= 3
    shown = table_rows(lines)
    assert len(shown) == len(rows)
    for row, (label, numbers) in zip(rows, shown, strict=True):  # a long label folds; the numbers are whole
        assert label == ("(none)" if row[key] is None else str(row[key]))
        cost = UNKNOWN_COST if row["cost_usd"] is None else cell(row["cost_usd"])
        assert numbers == [cell(row["requests"]), *cost.split()]


def table_rows(lines: list[str]) -> list[tuple[str, list[str]]]:
    """(label, the other cells) per row of the table: a line with one cell continues the label above it."""
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("─"))
    rows: list[tuple[str, list[str]]] = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        first, *rest = line.split()
        if rest:
            rows.append((first, rest))
        else:
            rows[-1] = (rows[-1][0] + first, rows[-1][1])
    return rows


def test_compact_at_80_columns_shows_whole_ids_the_default_table_folds(db):
    """The default table folds a long id at 24 characters; --compact gives it the room the other columns leave."""
    full = run("runs", "--db", str(db), width=80)
    ids = [r["run_id"] for r in json.loads(run("runs", "--db", str(db), "--format", "json", width=80).stdout)]
    longest = max(ids, key=len)
    assert len(longest) > 24 and f" {longest} " not in full.stdout  # folded in the default table
    compact = run("runs", "--db", str(db), "--compact", width=80)
    assert f" {longest} " in compact.stdout


def test_compact_leaves_json_and_csv_whole(db):
    plain = run("runs", "--db", str(db), "--format", "json", width=60).stdout
    assert run("runs", "--db", str(db), "--format", "json", "--compact", width=60).stdout == plain
