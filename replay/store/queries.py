"""Reusable read queries over the canonical tables, returned as polars frames."""

from __future__ import annotations

import duckdb
import polars as pl

from replay.store import frame, scalar


def runs_table(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    return frame(
        con,
        """
        SELECT r.run_id, r.format, r.model, r.n_requests AS requests,
               count(i.seq) FILTER (WHERE i.kind = 'tool_call') AS tool_calls,
               count(i.seq) AS items,
               coalesce((SELECT bool_or(q.prompt_tokens IS NOT NULL OR q.input_tokens IS NOT NULL)
                         FROM requests q WHERE q.run_id = r.run_id), false) AS recorded_usage
        FROM runs r LEFT JOIN items i USING (run_id)
        GROUP BY ALL ORDER BY r.format, r.run_id""",
    )


def run_items(con: duckdb.DuckDBPyConnection, run_id: str) -> pl.DataFrame:
    return frame(con, "SELECT * FROM items WHERE run_id = ? ORDER BY seq", [run_id])


def has_relation(con: duckdb.DuckDBPyConnection, name: str) -> bool:
    """True when the store has a table or view called ``name`` (an old store opened read-only may not)."""
    return scalar(con.cursor(), "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [name]) > 0
