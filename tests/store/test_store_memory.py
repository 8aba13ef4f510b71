"""DuckDB's memory limit lowered for a stretch of work on a store file, never raised, and set back after."""

from __future__ import annotations

import duckdb

from replay.store import open_store
from replay.store.memory import bounded_db_memory


def _limit(con: duckdb.DuckDBPyConnection) -> str:
    return con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]


def test_limit_is_lowered_for_the_block_and_restored(tmp_path) -> None:
    con = open_store(tmp_path / "m.duckdb")
    con.execute("SET memory_limit = '2GiB'").fetchall()
    with bounded_db_memory(con, 100):
        assert _limit(con) == "100.0 MiB"
    assert _limit(con) == "2.0 GiB"
    con.execute("SET memory_limit = '50MiB'").fetchall()
    with bounded_db_memory(con, 100):
        assert _limit(con) == "50.0 MiB"  # never raised
    assert _limit(con) == "50.0 MiB"
    con.close()


def test_a_store_in_memory_is_left_alone() -> None:
    con = duckdb.connect()
    before = _limit(con)
    with bounded_db_memory(con, 100):  # its tables live in the buffer pool: no file to spill beside
        assert _limit(con) == before
