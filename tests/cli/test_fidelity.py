"""`replay fidelity`: per run and per recorded context event, the replayed prompt against the recorded one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cli import app

KEYS = {"file", "run_id", "kind", "requests", "median_abs_pct", "p95_abs_pct", "recorded_request",
        "simulated_request", "recorded_after", "simulated_after", "cache_share_recorded", "cache_share_simulated"}


@pytest.fixture(scope="module")
def store(corpus: Path, tmp_path_factory) -> Path:
    from replay.ingest import ingest
    from replay.store import open_store

    db = tmp_path_factory.mktemp("fid") / "f.duckdb"
    con = open_store(db)
    ingest(con, [corpus / "claude-code" / "ccl-sample-37f83ec9.jsonl",
                 corpus / "claude-code" / "ccb-android-avd-opus-c6455dae.jsonl",
                 corpus / "claude-code" / "ccs-livecd-gen-compact-e1ffaf02.jsonl"])
    con.close()
    return db


def test_fidelity_reports_runs_and_events(store: Path) -> None:
    result = CliRunner().invoke(app, ["fidelity", "--db", str(store), "-t", "claude-legacy", "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert all(KEYS <= set(r) for r in rows)
    runs = {r["file"]: r for r in rows if r["kind"] == "run" and r["requests"] > 10}
    assert set(runs) == {"ccl-sample-37f83ec9.jsonl", "ccb-android-avd-opus-c6455dae.jsonl",
                         "ccs-livecd-gen-compact-e1ffaf02.jsonl"}
    for r in runs.values():  # the prompt per request, and scored out of sample too
        assert r["median_abs_pct"] <= 3 and r["p95_abs_pct"] <= 10, r
        assert r["oos_median_abs_pct"] is not None and r["oos_median_abs_pct"] <= 3, r
        assert abs(r["cache_share_simulated"] - r["cache_share_recorded"]) <= 0.05, r
    events = [r for r in rows if r["kind"] == "compaction"]
    assert len(events) == 1
    ev = events[0]
    assert ev["file"] == "ccs-livecd-gen-compact-e1ffaf02.jsonl"
    assert ev["simulated_request"] is not None and abs(ev["simulated_request"] - ev["recorded_request"]) <= 1, ev
    assert abs(ev["simulated_after"] - ev["recorded_after"]) <= 0.10 * ev["recorded_after"], ev


def test_fidelity_strict_fails_on_a_missed_target(store: Path) -> None:
    """chars/4 estimates of a Claude run miss 3% somewhere; --strict turns that into exit 1."""
    plain = CliRunner().invoke(app, ["fidelity", "--db", str(store), "--format", "json"])
    assert plain.exit_code == 0, plain.output
    missed = [r for r in json.loads(plain.stdout) if r["within"] is False]
    strict = CliRunner().invoke(app, ["fidelity", "--db", str(store), "--format", "json", "--strict"])
    assert strict.exit_code == (1 if missed else 0), strict.output


def test_fidelity_on_a_store_without_usage_says_so(tmp_path: Path) -> None:
    from replay.store import open_store

    open_store(tmp_path / "e.duckdb").close()
    result = CliRunner().invoke(app, ["fidelity", "--db", str(tmp_path / "e.duckdb")])
    assert result.exit_code != 0 and "no run with recorded prompt usage" in str(result.exception or result.output)


def test_fidelity_names_the_preset_chosen_from_the_log(tmp_path: Path) -> None:
    """A Gemini CLI session with a chat compression note: the run and its event rows name the preset and window
    chosen from the log (the CLI's threshold share of the model's token limit)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from readers.gemini_fixture import write_json

    from replay.ingest import ingest
    from replay.store import open_store

    path, _, facts = write_json(tmp_path / "session-g.json")
    db = tmp_path / "g.duckdb"
    con = open_store(db)
    ingest(con, [path])
    con.close()
    result = CliRunner().invoke(app, ["fidelity", "--db", str(db), "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert {r["preset"] for r in rows} == {"gemini-cli@1048576"}
    (run,) = [r for r in rows if r["kind"] == "run"]
    (event,) = [r for r in rows if r["kind"] == "compaction"]
    assert run["median_abs_pct"] <= 3 and run["p95_abs_pct"] <= 10, run
    assert event["recorded_request"] == facts["compressed_at"] and event["simulated_request"] is None  # 2% of 1M
