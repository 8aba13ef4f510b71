"""The DuckDB store: one file holds runs, items, requests, quarantine, token counts and results."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb

from replay.errors import ReplayError
from replay.store.schema import check_version, migrate

DEFAULT_DB = Path(os.environ.get("REPLAY_DB", "replay.duckdb"))


def open_store(path: Path | str = DEFAULT_DB, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open (creating and migrating if needed) the store at ``path``."""
    path = Path(path)
    if read_only and not path.exists():
        raise ReplayError(f"{path}: no store here; run `replay ingest PATHS --db {path}` first")
    try:
        con = duckdb.connect(str(path), read_only=read_only)
    except duckdb.IOException as exc:
        if "lock" in str(exc).lower():
            raise ReplayError(
                f"{path}: another replay process holds this store open for writing; wait for it to finish "
                f"or use another file with --db (detail: {str(exc).splitlines()[0]})") from exc
        raise ReplayError(f"{path}: cannot open the store: {exc}") from exc
    try:
        check_version(con, str(path))
    except ReplayError:
        con.close()
        raise
    if not read_only:
        migrate(con)
    return con


def frame(con: duckdb.DuckDBPyConnection, query: str, params: list | None = None):
    """Run a query and return a polars DataFrame."""
    import polars as pl

    rel = con.sql(query, params=params) if params else con.sql(query)
    return pl.from_arrow(rel.to_arrow_table()) if rel is not None else pl.DataFrame()
