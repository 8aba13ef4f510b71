"""replay behaviour: rows printed (table, csv, json) and stored under the policy setting, rerun replaces them."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cli import app

SWE = "swe-agent/swea-lgetter-sympy__sympy-16792.traj"
ARGS = ("behaviour", "--policy", "last_n", "--set", "n=5")


@pytest.fixture(scope="module")
def db(corpus, tmp_path_factory) -> Path:
    from replay.ingest import ingest
    from replay.store import open_store

    path = tmp_path_factory.mktemp("behaviour") / "b.duckdb"
    con = open_store(path)
    ingest(con, [corpus / SWE])
    con.close()
    return path


def invoke(*args: str) -> str:
    res = CliRunner().invoke(app, list(args), env={"COLUMNS": "100"}, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.stdout


def test_rows_in_every_format_and_in_the_store(db) -> None:
    (row,) = json.loads(invoke(*ARGS, "--db", str(db), "--format", "json"))
    assert row["stale_repeats"] >= 48 and abs(row["blind_repeats"] - 42) <= 2 and row["loop_episodes"] == 1
    (ep,) = json.loads(invoke(*ARGS, "--episodes", "--db", str(db), "--format", "json"))
    assert ep["sentence"].startswith("9-view cycle") and "> window 5" in ep["sentence"]
    (cell,) = list(csv.DictReader(io.StringIO(invoke(*ARGS, "--db", str(db), "--format", "csv"))))
    assert int(cell["blind_repeats"]) == row["blind_repeats"]
    assert "blind" in invoke(*ARGS, "--db", str(db))
    invoke("behaviour", "--policy", "last_n", "--set", "n=10", "--db", str(db), "--format", "json")
    from replay.store import open_store

    con = open_store(db, read_only=True)
    stored = con.execute(
        "SELECT json_extract(config, '$.n')::INT, blind_repeats FROM behaviour_runs ORDER BY 1"
    ).fetchall()
    assert [n for n, _ in stored] == [5, 10] and stored[0][1] == row["blind_repeats"] and stored[1][1] <= 3
    assert con.execute("SELECT count(*) FROM behaviour_episodes").fetchone()[0] == 2  # reruns replaced, not added


def test_no_matching_run_says_so(db) -> None:
    res = CliRunner().invoke(app, [*ARGS, "--runs", "%nothing-like-this%", "--db", str(db)])
    assert res.exit_code != 0 and "matches no run" in str(res.exception)
