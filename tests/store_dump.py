"""A store's ingested rows as plain lists, for comparing two ingests of the same files."""

from __future__ import annotations

TABLES = {
    "runs": "run_id",
    "items": "run_id, seq",
    "requests": "run_id, step",
    "quarantine": "file_hash, line, reason",
    "files": "file_hash",
}


def dump_store(con) -> dict[str, list]:
    """Every row of the ingest tables in a fixed order, without the columns that record when a row was written."""
    out = {}
    for table, order in TABLES.items():
        cols = [
            r[0]
            for r in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [table]
            ).fetchall()
            if r[0] not in ("ingested_at", "quarantined_at")
        ]
        out[table] = con.execute(f"SELECT {', '.join(cols)} FROM {table} ORDER BY {order}").fetchall()
    return out
