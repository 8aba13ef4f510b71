"""Numbered migrations, applied in order when a store is opened."""

from __future__ import annotations

from collections.abc import Callable

import duckdb


def _v1_canonical(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("""
    CREATE TABLE files (
        file_hash VARCHAR PRIMARY KEY, path VARCHAR, format VARCHAR, bytes BIGINT,
        n_runs INTEGER, n_items INTEGER, n_requests INTEGER, n_bad INTEGER, ingested_at TIMESTAMP);
    CREATE TABLE runs (
        run_id VARCHAR PRIMARY KEY, file_hash VARCHAR, format VARCHAR, source_path VARCHAR,
        model VARCHAR, harness VARCHAR, started_at VARCHAR, parent_run_id VARCHAR,
        n_requests INTEGER, metadata JSON);
    CREATE TABLE items (
        run_id VARCHAR, seq INTEGER, step INTEGER, turn INTEGER, role VARCHAR, kind VARCHAR,
        tool_name VARCHAR, call_id VARCHAR, args VARCHAR, text VARCHAR, is_error BOOLEAN,
        resource VARCHAR, access VARCHAR, content_hash VARCHAR, chars INTEGER, ts VARCHAR,
        line INTEGER, PRIMARY KEY (run_id, seq));
    CREATE TABLE requests (
        run_id VARCHAR, step INTEGER, ts VARCHAR, input_tokens BIGINT, cache_read BIGINT,
        cache_write BIGINT, output_tokens BIGINT, prompt_tokens BIGINT, model VARCHAR, line INTEGER,
        PRIMARY KEY (run_id, step));
    CREATE TABLE quarantine (
        file_hash VARCHAR, path VARCHAR, line INTEGER, reason VARCHAR, raw VARCHAR, quarantined_at TIMESTAMP);
    CREATE TABLE token_counts (
        tokenizer_id VARCHAR, content_hash VARCHAR, n_tokens INTEGER,
        PRIMARY KEY (tokenizer_id, content_hash));
    """)


MIGRATIONS: list[Callable[[duckdb.DuckDBPyConnection], None]] = [_v1_canonical]


def migrate(con: duckdb.DuckDBPyConnection) -> int:
    """Apply pending migrations; return the schema version."""
    con.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER)")
    row = con.execute("SELECT max(version) FROM schema_version").fetchone()
    current = row[0] or 0
    for version, step in enumerate(MIGRATIONS, start=1):
        if version > current:
            con.execute("BEGIN")
            step(con)
            con.execute("INSERT INTO schema_version VALUES (?)", [version])
            con.execute("COMMIT")
    return len(MIGRATIONS)
