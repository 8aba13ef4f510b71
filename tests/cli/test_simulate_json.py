"""`replay simulate --format json` stays one parseable document when runs warn (unknown model, no prefix)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from replay.cli import app


def test_warnings_go_to_stderr_under_json(corpus: Path, tmp_path: Path) -> None:
    from replay.ingest import ingest
    from replay.store import open_store

    db = tmp_path / "s.duckdb"
    con = open_store(db)
    ingest(con, [corpus / "aider" / "aider-pocketflow-text2sql-horizon-beta.md"])  # a model genai-prices lacks
    con.close()
    result = CliRunner().invoke(app, ["simulate", "--db", str(db), "--format", "json", "--no-store"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert rows and all(r["cost_usd"] is None for r in rows)
    assert "WARNING" in result.stderr and "harness prefix:" in result.stderr
