"""Load runs from the store into RunArrays, with real token counts when the tokenizer has counted them."""

from __future__ import annotations

import duckdb

from replay.errors import ReplayError
from replay.simulator.arrays import ESTIMATE_LABEL, RunArrays, build

_ITEMS = """
SELECT i.step, i.kind, i.chars, t.n_tokens AS tokens, i.tool_name, i.call_id, i.resource, i.access,
       i.is_error, i.ts, i.turn,
       length(i.text) - length(replace(i.text, chr(10), '')) + 1 AS lines
FROM items i LEFT JOIN token_counts t ON t.content_hash = i.content_hash AND t.tokenizer_id = ?
WHERE i.run_id = ? ORDER BY i.seq"""
_REQS = """SELECT step, ts, prompt_tokens, input_tokens, cache_read, cache_write
FROM requests WHERE run_id = ? ORDER BY step"""


def _dicts(con: duckdb.DuckDBPyConnection, sql: str, params: list) -> list[dict]:
    cur = con.execute(sql, params)
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row, strict=False)) for row in cur.fetchall()]


def token_source(items: list[dict], tokenizer_id: str | None) -> str:
    """'real:ID' when every item has a real count, the estimate label when none, else 'mixed:ID+chars/4'."""
    have = sum(it["tokens"] is not None for it in items)
    if tokenizer_id is None or have == 0:
        return ESTIMATE_LABEL
    return f"real:{tokenizer_id}" if have == len(items) else f"mixed:{tokenizer_id}+chars/4"


def load_run(con: duckdb.DuckDBPyConnection, run_id: str, tokenizer_id: str | None = None) -> RunArrays:
    """One run's arrays; tokens from token_counts for ``tokenizer_id`` when present, else chars/4."""
    items = _dicts(con, _ITEMS, [tokenizer_id or "", run_id])
    reqs = _dicts(con, _REQS, [run_id])
    if not items and not reqs:
        raise ReplayError(f"run {run_id!r} not in the store; see `replay runs`")
    model = con.execute("SELECT model FROM runs WHERE run_id = ?", [run_id]).fetchone()
    return build(run_id, items, reqs, token_source(items, tokenizer_id), model[0] if model else None)


def run_ids(con: duckdb.DuckDBPyConnection, pattern: str | None = None) -> list[str]:
    """Run ids with at least one request, optionally filtered by a LIKE pattern on run_id or source path."""
    sql = "SELECT run_id FROM runs WHERE n_requests > 0"
    params: list = []
    if pattern:
        sql += " AND (run_id LIKE ? OR source_path LIKE ?)"
        params = [pattern, pattern]
    return [r[0] for r in con.execute(sql + " ORDER BY run_id", params).fetchall()]


def load_runs(con: duckdb.DuckDBPyConnection, tokenizer_id: str | None = None,
              pattern: str | None = None) -> list[RunArrays]:
    return [load_run(con, rid, tokenizer_id) for rid in run_ids(con, pattern)]
