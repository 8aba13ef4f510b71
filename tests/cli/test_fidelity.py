"""`replay fidelity`: per-run simulated vs recorded cache-read share on real Claude Code logs."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from replay.cli import app


def test_fidelity_reports_each_run(corpus: Path, tmp_path: Path) -> None:
    from replay.ingest import ingest
    from replay.store import open_store

    db = tmp_path / "f.duckdb"
    con = open_store(db)
    ingest(con, [corpus / "claude-code" / "ccl-sample-37f83ec9.jsonl",
                 corpus / "claude-code" / "ccb-android-avd-opus-c6455dae.jsonl"])
    con.close()
    result = CliRunner().invoke(app, ["fidelity", "--db", str(db), "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = {r["file"]: r for r in json.loads(result.stdout)}
    assert set(rows) == {"ccl-sample-37f83ec9.jsonl", "ccb-android-avd-opus-c6455dae.jsonl"}
    assert all(r["within"] for r in rows.values()), rows
    assert rows["ccb-android-avd-opus-c6455dae.jsonl"]["tail"] > 20_000


def test_fidelity_on_a_store_without_usage_says_so(tmp_path: Path) -> None:
    from replay.store import open_store

    open_store(tmp_path / "e.duckdb").close()
    result = CliRunner().invoke(app, ["fidelity", "--db", str(tmp_path / "e.duckdb")])
    assert result.exit_code != 0 and "no run with recorded cache reads" in str(result.exception or result.output)
