"""The DuckDB store: one file holds runs, items, requests, quarantine, token counts and results."""

from __future__ import annotations

import gc
import os
from pathlib import Path
from typing import Any

import duckdb

from replay.errors import ReplayError
from replay.store.schema import MIGRATIONS, check_layout, check_version, migrate
from replay.untrusted import path_text

DEFAULT_DB = Path(os.environ.get("REPLAY_DB", "replay.duckdb"))


def _connect(path: Path, read_only: bool, config: dict) -> duckdb.DuckDBPyConnection:
    """``duckdb.connect``; when this process still has the file open with other settings, once more after a garbage
    collection: a finished command's connection that only a reference cycle keeps alive is closed by it."""
    try:
        return duckdb.connect(str(path), read_only=read_only, config=config)
    except duckdb.ConnectionException:
        gc.collect()
        return duckdb.connect(str(path), read_only=read_only, config=config)


def connect(path: Path, read_only: bool, config: dict | None = None) -> duckdb.DuckDBPyConnection:
    """``duckdb.connect`` with the store's own errors (no store, another writer's lock, a connection of this
    process with other settings, a newer schema); the version is checked before anything else runs."""
    if read_only and not path.exists():
        raise ReplayError(f"{path}: no store here; run `replay ingest PATHS --db {path}` first")
    if path.exists() and not path.is_file():  # a folder, a FIFO (opening it would wait forever), a device
        raise ReplayError(f"{path}: not a regular file; give --db a store file (or a new path to create one)")
    try:
        con = _connect(path, read_only, config or {})
    except duckdb.ConnectionException as exc:
        raise ReplayError(
            f"{path}: this process already has the store open with other settings; close that connection first ({exc})"
        ) from exc
    except duckdb.IOException as exc:
        if "lock" in str(exc).lower():
            raise ReplayError(
                f"{path}: another replay process holds this store open for writing; wait for it to finish "
                f"or use another file with --db (detail: {str(exc).splitlines()[0]})"
            ) from exc
        raise ReplayError(f"{path}: cannot open the store: {exc}") from exc
    try:
        if check_version(con, str(path)) == len(MIGRATIONS):
            check_layout(con, path_text(path))
    except ReplayError:
        con.close()
        raise
    return con


def open_store(path: Path | str = DEFAULT_DB, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open (creating and migrating if needed) the store at ``path``."""
    con = connect(Path(path), read_only)
    if not read_only:
        migrate(con)
    return con


def scalar(con: duckdb.DuckDBPyConnection, query: str, params: object = None) -> Any:
    """The first value of the one row ``query`` returns (a count, a setting, an aggregate)."""
    row = con.execute(query, params).fetchone()
    if row is None:
        raise ReplayError(f"the store returned no row for: {' '.join(query.split())[:120]}")
    return row[0]


def frame(con: duckdb.DuckDBPyConnection, query: str, params: list | None = None):
    """Run a query and return a polars DataFrame."""
    import polars as pl

    rel = con.sql(query, params=params) if params else con.sql(query)
    return pl.from_arrow(rel.to_arrow_table()) if rel is not None else pl.DataFrame()
