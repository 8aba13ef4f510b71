"""DuckDB settings changed for a stretch of work and restored after it; DuckDB's memory limit lowered so the blocks
it reads and writes are evicted (and big sorts spill to disk) instead of growing the process to DuckDB's default
of 80% of RAM."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import duckdb

BYTES_PER_CHAR = 8  # a record's characters as UTF-8 (up to 4 bytes each), twice: room for a copy
UNITS = {
    "bytes": 1,
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
    "TiB": 2**40,
}


@contextmanager
def db_setting(con: duckdb.DuckDBPyConnection, name: str, value: str | int) -> Iterator[None]:
    """DuckDB's setting ``name`` at ``value`` for the duration, the caller's value back after it."""
    before = con.execute("SELECT current_setting(?)", [name]).fetchall()[0][0]
    con.execute(f"SET {name} = '{value}'").fetchall()
    try:
        yield
    finally:
        con.execute(f"SET {name} = '{before}'").fetchall()


@contextmanager
def bounded_db_memory(con: duckdb.DuckDBPyConnection, mb: int) -> Iterator[None]:
    """Lower DuckDB's memory_limit to ``mb`` for the duration (never raise it; a store in memory, which has no file
    to spill beside, is left alone); bigger work spills to disk."""
    before = con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]
    on_disk = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchall()
    if not (on_disk and on_disk[0][0]) or not mb * 2**20 < size_bytes(before) < float("inf"):
        yield
        return
    with db_setting(con, "memory_limit", f"{mb}MiB"):
        yield


def size_bytes(size: str) -> float:
    """A size as DuckDB writes one ('18.8 GiB', '512 bytes') in bytes; infinite when not read (nothing lowered)."""
    found = re.fullmatch(r"\s*([\d.]+)\s*([A-Za-z]+)\s*", size)
    return float(found[1]) * UNITS[found[2]] if found and found[2] in UNITS else float("inf")
