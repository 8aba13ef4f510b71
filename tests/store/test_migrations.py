"""Every table the package writes is created by a numbered migration (replay.store.schema), none on first use."""

from __future__ import annotations

import re
from pathlib import Path

from replay.store import open_store
from replay.store.schema import MIGRATIONS

ROOT = Path(__file__).resolve().parents[2]
CREATE = re.compile(r"CREATE\s+(?:OR\s+REPLACE\s+)?(?:TEMP\w*\s+)?(?:TABLE|VIEW)\b", re.IGNORECASE)


def test_no_table_is_created_outside_the_migrations() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{text[: m.start()].count(chr(10)) + 1}"
        for path in sorted((ROOT / "replay").rglob("*.py"))
        if path != ROOT / "replay" / "store" / "schema.py"
        for text in [path.read_text(encoding="utf-8")]
        for m in CREATE.finditer(text)
    ]
    assert not found, "tables created outside replay/store/schema.py (add a numbered migration): " + ", ".join(found)


def test_a_new_store_has_the_sweep_and_calibration_tables(tmp_path: Path) -> None:
    con = open_store(tmp_path / "s.duckdb")
    tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    assert {"sweeps", "sweep_results", "calibrations", "calibration_files"} <= tables
    assert con.execute("SELECT max(version) FROM schema_version").fetchone()[0] == len(MIGRATIONS)
