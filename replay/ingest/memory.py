"""DuckDB's memory bounded while an ingest writes, so its checkpoints stay small.

A DuckDB checkpoint rewrites the whole row group it appends to, at intervals that double (seen on an ingest: the
file grew 17 -> 47 -> 105 MB in single checkpoints), and holds what it rewrites in memory unless a memory limit makes
it evict: the ingest's peak grew with the store (a row group holds 122,880 rows). While files are written, the store
runs under a memory limit (its automatic checkpoints with it), and what the WAL holds at the end is checkpointed
under it too, so the close has nothing left to rewrite. A checkpoint that runs out of memory invalidates the
database, so the limit is never below what it must hold: the largest record it may rewrite (a 200 MB line needed a
191 MiB block), the indexes and the rows not yet checkpointed. A limit the caller set is left as it is (DuckDB
shows a size rounded, so it could not be set back exactly); DuckDB's default is reset at the end.
(Explicit checkpoints every 16 MB of WAL instead bounded memory as well but left the file 1.5x larger.)
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

import duckdb

from replay.store import scalar
from replay.store.memory import BYTES_PER_CHAR, size_bytes

CHECKPOINT_MEMORY = 128 * 2**20  # past what a checkpoint must hold (see :meth:`IngestMemory.need`)
HELD = ("ART_INDEX", "IN_MEMORY_TABLE")  # duckdb_memory() tags a checkpoint holds (indexes, rows not yet written)
NEAR_CHECKPOINT = 8 * 2**20  # WAL bytes from the threshold at which the limit is refreshed before a file


class IngestMemory:
    """The memory limit of the store ``con`` while an ingest writes to it (see the module docstring)."""

    def __init__(self, con: duckdb.DuckDBPyConnection, wal: str) -> None:
        self.con, self.wal = con, wal
        caller = scalar(con, "SELECT current_setting('memory_limit')")
        self.bounded, self.default = caller == default_limit(), size_bytes(caller)
        self.threshold = size_bytes(scalar(con, "SELECT current_setting('checkpoint_threshold')"))
        self.largest = scalar(con, "SELECT coalesce(max(chars), 0) FROM items")  # characters
        self.set = 0
        self.apply()

    def need(self) -> int:
        """Bytes a checkpoint may use: CHECKPOINT_MEMORY past the largest record, indexes and unwritten rows."""
        held = scalar(
            self.con,
            "SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory() WHERE tag IN "
            f"({', '.join(repr(t) for t in HELD)})",
        )
        return CHECKPOINT_MEMORY + BYTES_PER_CHAR * self.largest + int(held)

    def apply(self) -> None:
        """Set the limit to :meth:`need` (when DuckDB's default is in force)."""
        if not self.bounded:
            return
        need = self.need()
        if need >= self.default:  # a record too large for a bound: DuckDB's default, as without one
            self.restore()
        elif need != self.set:
            self.con.execute(f"SET memory_limit = '{need // 2**10 + 1}KiB'")
            self.set = need

    def before_file(self, largest: int) -> None:
        """Before a file is written (``largest``: its longest item, in characters): the limit raised for a larger
        record, and refreshed (indexes grow) when the file's commit may checkpoint."""
        if largest > self.largest or _size(self.wal) >= self.threshold - NEAR_CHECKPOINT:
            self.largest = max(self.largest, largest)
            self.apply()

    def finish(self) -> None:
        """Checkpoint what the WAL holds, under the limit."""
        if _size(self.wal):
            self.apply()
            self.con.execute("CHECKPOINT")

    def restore(self) -> None:
        if self.set:
            self.con.execute("RESET memory_limit")
            self.set = 0


@cache
def default_limit() -> str:
    """DuckDB's default memory limit as current_setting shows it (a new database takes ~50 ms: read once)."""
    with duckdb.connect() as fresh:
        return scalar(fresh, "SELECT current_setting('memory_limit')")


@contextmanager
def bounded_memory(con: duckdb.DuckDBPyConnection) -> Iterator[IngestMemory | None]:
    """:class:`IngestMemory` for the block, the WAL checkpointed at its end and DuckDB's default limit back; None
    (nothing done) for an in-memory store."""
    path = scalar(con, "SELECT path FROM duckdb_databases() WHERE database_name = current_database()")
    if not path:
        yield None
        return
    memory = IngestMemory(con, path + ".wal")
    try:
        yield memory
        memory.finish()
    finally:
        memory.restore()


def _size(path: str) -> int:
    return os.path.getsize(path) if os.path.exists(path) else 0
