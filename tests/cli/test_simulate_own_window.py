"""`replay simulate` under a run's own policy (``recorded`` or its harness's preset by name) and no ``--window``
replays each request on the window, limit and trigger `replay fidelity` gives it (replay.simulator.own_window): a
Codex turn whose model's ``comp_hash`` changed compacts at its first request, a Claude Code ``/model`` switch takes
the serving model's limit, a Claude Code session past 200,000 ran on the 1M window. A window the user gives holds
for every request, and another policy keeps the budget's window everywhere."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
from typer.testing import CliRunner

from replay.cli import app
from replay.simulator.fidelity import fidelity_frame
from tests.simulator.cc_switch import cc_session, store
from tests.simulator.test_codex_comp_hash import rollout
from tests.simulator.test_request_limits import CASES

CODEX = "rollout-2026-07-13T20-33-00-019f5b77-6b45-77a2-bc54-000000000001.jsonl"


def simulate(db: Path, *args: str) -> tuple[dict, list[int]]:
    """The run row and the requests that summarised of ``replay simulate ARGS`` on the one run in ``db``."""
    result = CliRunner().invoke(app, ["simulate", "--db", str(db), "--format", "json", *args])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)
    con = duckdb.connect(str(db), read_only=True)
    try:
        newest = "(SELECT sim_id FROM simulations ORDER BY created_at DESC LIMIT 1)"
        steps = con.execute(f"SELECT k FROM sim_requests WHERE sim_id = {newest} AND summarised ORDER BY k")
        return row, [k for (k,) in steps.fetchall()]
    finally:
        con.close()


def fidelity_events(con: duckdb.DuckDBPyConnection) -> list[int]:
    """The requests at which fidelity's preset fired, per recorded event."""
    return [r["simulated_request"] for r in fidelity_frame(con, None).to_dicts() if r["kind"] != "run"]


def codex_store(tmp_path: Path) -> Path:
    con = store(tmp_path, rollout(), CODEX, "sessions/2026/07/13")
    con.close()
    return tmp_path / "s.duckdb"


def test_codex_compacts_where_the_comp_hash_changed_as_fidelity_has_it(tmp_path: Path) -> None:
    db = codex_store(tmp_path)
    con = duckdb.connect(str(db))
    assert fidelity_events(con) == [2]  # luna's first request: its hash is not gpt-5.5's
    con.close()
    _, fired = simulate(db, "-p", "codex-rs")
    assert fired == [2]
    # a window the user chooses holds for every request: no prompt here comes near 0.9 of it
    _, fired = simulate(db, "-p", "codex-rs", "--window", "258400")
    assert fired == []


def test_claude_code_model_switch_takes_the_serving_models_limit(tmp_path: Path) -> None:
    version, turns, at, preset = CASES["reserve"]  # Haiku's 8,192 output reserve, then Sonnet's 32,000
    con = store(tmp_path, cc_session(version, turns, at))
    assert fidelity_events(con) == [at]
    con.close()
    db = tmp_path / "s.duckdb"
    _, fired = simulate(db, "-p", preset)
    assert fired == [at]
    # another harness's preset is not the run's own: the budget's window and that preset's limit everywhere
    _, fired = simulate(db, "-p", "codex-rs")
    assert at not in fired


def test_recorded_policy_runs_on_the_1m_window_a_long_session_had(tmp_path: Path) -> None:
    sonnet = "claude-sonnet-4-5-20250929"
    store(tmp_path, cc_session("2.1.20", [(sonnet, 60_000)] * 5, 99)).close()  # 300,000 by the last request
    db = tmp_path / "s.duckdb"
    row, _ = simulate(db, "-p", "recorded")
    assert row["overflow_incidents"] == 0
    row, _ = simulate(db, "-p", "recorded", "--window", "200000")
    assert row["overflow_incidents"] >= 1


def test_show_replays_the_request_as_simulate_does(tmp_path: Path) -> None:
    db = codex_store(tmp_path)
    base = ["show", "019f5b77", "-k", "2", "-p", "codex-rs", "--db", str(db), "--format", "json"]
    views = []
    for extra in ([], ["--window", "258400"]):
        result = CliRunner().invoke(app, [*base, *extra])
        assert result.exit_code == 0, result.output
        views.append(json.loads(result.stdout)["views"][0])
    own, chosen = views
    assert (own["summarised"], own["window"]) == (True, 272_000)  # 258,400 logged at 95% of it
    assert (chosen["summarised"], chosen["window"]) == (False, 258_400)
