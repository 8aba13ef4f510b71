"""DuckDB's memory limit lowered for a stretch of work on a store file, so the blocks it reads and writes are
evicted (and big sorts spill to disk) instead of growing the process to DuckDB's default of 80% of RAM."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import duckdb

from replay.ingest_memory import size_bytes


@contextmanager
def bounded_db_memory(con: duckdb.DuckDBPyConnection, mb: int) -> Iterator[None]:
    """Lower DuckDB's memory_limit to ``mb`` for the duration (never raise it; a store in memory, which has no file
    to spill beside, is left alone); bigger work spills to disk."""
    before = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    on_disk = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchall()
    if not (on_disk and on_disk[0][0]) or not mb * 2**20 < size_bytes(before) < float("inf"):
        yield
        return
    con.execute(f"SET memory_limit = '{mb}MiB'").fetchall()
    try:
        yield
    finally:
        con.execute(f"SET memory_limit = '{before}'").fetchall()
