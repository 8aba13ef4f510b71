"""`simulate` stores each run's ``bill_gap`` (why a replay of the log's own policy cannot match the recorded bill) in
``sim_runs`` (store migration 9), so `replay sql` sees what `simulate` printed."""

from __future__ import annotations

import json

import duckdb
from typer.testing import CliRunner

from replay.cli import app
from replay.store import open_store
from replay.store.schema import MIGRATIONS

SMALL = "claude-code/cc-fixture-agentsessions-small.jsonl"  # compactions whose summariser calls the log lacks
PLAIN = "claude-code/ccl-deep-manifest-agent-c8d9b115.jsonl"  # a sub-agent whose bill a replay can match


def test_replay_sql_sees_the_bill_gap_simulate_printed(corpus, tmp_path):
    db = tmp_path / "s.duckdb"
    con = open_store(db)
    from replay.ingest import ingest

    ingest(con, [corpus / SMALL, corpus / PLAIN])
    con.close()
    runner = CliRunner()
    sim = runner.invoke(app, ["simulate", "-p", "recorded", "--db", str(db), "--format", "json"])
    assert sim.exit_code == 0, sim.output
    printed = {r["run_id"]: r["bill_gap"] for r in json.loads(sim.stdout)}
    sql = runner.invoke(app, ["sql", "SELECT run_id, bill_gap FROM sim_runs", "--db", str(db), "--format", "json"])
    assert sql.exit_code == 0, sql.output
    stored = {r["run_id"]: r["bill_gap"] for r in json.loads(sql.stdout)}
    assert stored == printed
    assert [gap for run, gap in stored.items() if run.startswith("ccl-deep")] == [""]  # "", not NULL
    query = "SELECT run_id, summaries, summary_cost_usd AS s, unbilled_summary_cost_usd AS u FROM sim_runs"
    sql = runner.invoke(app, ["sql", query, "--db", str(db), "--format", "json"])
    # the fixture's compactions log no summariser usage: their simulated calls are apart (store migration 14)
    rows = json.loads(sql.stdout)
    assert sum(r["summaries"] > 0 for r in rows) == 2  # the fixture's main run and a sidechain
    assert all(r["u"] == r["s"] for r in rows)  # a sidechain that names no model has no price: None for both


def test_rows_stored_before_migration_9_read_null(tmp_path):
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE schema_version (version INTEGER)")
    for version, step in enumerate(MIGRATIONS[:8], start=1):
        step(con)
        con.execute("INSERT INTO schema_version VALUES (?)", [version])
    con.execute("INSERT INTO sim_runs (sim_id, run_id) VALUES ('s', 'r')")
    con.close()
    con = open_store(path)
    assert con.execute("SELECT max(version) FROM schema_version").fetchone()[0] == len(MIGRATIONS) >= 9
    assert con.execute("SELECT bill_gap FROM sim_runs").fetchall() == [(None,)]
    con.close()
