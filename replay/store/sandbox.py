"""A store connection for user SQL: read-only, no file or network access, interruptible, optionally time-bounded."""

from __future__ import annotations

import json
import math
import re
import threading
import time
from pathlib import Path

import duckdb
import polars as pl

from replay.errors import Interrupted, ReplayError
from replay.store import connect

# Settings fixed before the connection opens; lock_configuration stops a query from SETting them back.
SANDBOX_CONFIG: dict[str, str | bool] = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "allow_unsigned_extensions": False,
    "lock_configuration": True,
}


DEFAULT_MEMORY = "2GB"  # a query needing more fails with a message instead of taking the machine


def open_sandboxed(path: Path | str, memory_limit: str = DEFAULT_MEMORY) -> duckdb.DuckDBPyConnection:
    """Open the store at ``path`` read-only with external access (files, URLs, extensions) disabled and DuckDB's
    memory bounded by ``memory_limit`` (no spilling to disk: the limit is the query's whole budget)."""
    if not re.fullmatch(r"\d+(\.\d+)?\s*(KB|MB|GB|TB|KiB|MiB|GiB|TiB)", memory_limit.strip(), re.IGNORECASE):
        raise ReplayError(f"--memory-limit {memory_limit!r}: give a size such as 512MB or 2GB")
    config = dict(SANDBOX_CONFIG) | {"memory_limit": memory_limit.strip(), "temp_directory": ""}
    return connect(Path(path), read_only=True, config=config)


def _explain(exc: duckdb.Error) -> str:
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if isinstance(exc, duckdb.PermissionException) or "configuration has been locked" in str(exc):
        return (
            f"SQL refused: `replay sql` reads only the tables of the store; files, URLs, extensions and "
            f"settings are off ({first})"
        )
    if "read-only mode" in str(exc):
        return f"SQL refused: the store is opened read-only for `replay sql` ({first})"
    if isinstance(exc, duckdb.OutOfMemoryException):
        return f"SQL stopped at the memory limit ({first}); narrow the query, add a LIMIT, or raise --memory-limit"
    return f"SQL failed: {str(exc)}"


def run_query(
    con: duckdb.DuckDBPyConnection, query: str, timeout: float | None = None, limit: int | None = None
) -> pl.DataFrame:
    """Run ``query`` in a worker thread so Ctrl-C (in the main thread) and ``timeout`` seconds can interrupt it;
    ``limit``: fetch at most that many rows plus one (which tells the caller that more were left out)."""
    if timeout is not None and not (math.isfinite(timeout) and timeout > 0):
        raise ReplayError(f"--timeout {timeout}: give a number of seconds > 0")
    box: dict[str, object] = {}
    done = threading.Event()

    def work() -> None:
        try:
            rel = con.sql(query)
            if rel is not None and limit is not None:
                rel = rel.limit(limit + 1)
            box["frame"] = pl.from_arrow(rel.to_arrow_table()) if rel is not None else pl.DataFrame()
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread as is
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=work, name="replay-sql", daemon=True).start()
    try:
        finished = _wait(done, timeout)
    except (KeyboardInterrupt, Interrupted):
        con.interrupt()
        done.wait(5)
        raise ReplayError("SQL interrupted (Ctrl-C); nothing was changed") from None
    if not finished:
        con.interrupt()
        done.wait(5)
        raise ReplayError(f"SQL stopped after --timeout {timeout:g} s; raise --timeout or narrow the query")
    error = box.get("error")
    if isinstance(error, duckdb.Error):
        raise ReplayError(_explain(error)) from error
    if error is not None:
        raise error  # type: ignore[misc]  # box["error"] holds only exceptions the worker caught
    return box["frame"]  # type: ignore[return-value]  # set by the worker when it finished without error


COUNT_SECONDS = 10.0  # the longest spent counting the rows a table left out (past it: "more", uncounted)


def count_rows(con: duckdb.DuckDBPyConnection, query: str, budget: float = COUNT_SECONDS) -> int | None:
    """The number of rows ``query`` returns, counted by DuckDB without fetching them; None when counting takes
    longer than ``budget`` seconds or fails (the caller then says only that more rows were left out)."""
    box: dict[str, object] = {}
    done = threading.Event()

    def work() -> None:
        try:
            sql = _unordered(con, query)
            box["n"] = con.execute(f"SELECT count(*) FROM ({sql})").fetchone()[0]  # type: ignore[index]
        except BaseException as exc:  # noqa: BLE001 - any failure: uncounted
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=work, name="replay-sql-count", daemon=True).start()
    if not _wait(done, max(budget, 0.1)):
        con.interrupt()
        done.wait(5)
        return None
    n = box.get("n")
    return n if isinstance(n, int) else None


def _unordered(con: duckdb.DuckDBPyConnection, query: str) -> str:
    """``query`` without its top-level ORDER BY (DuckDB's own parser rewrites it), so counting its rows does not sort
    them (100 M rows sorted up to the memory limit only to be counted); the query as given when it cannot be."""
    plain = query.strip().rstrip(";")
    try:
        tree = json.loads(con.execute("SELECT json_serialize_sql(?)", [plain]).fetchone()[0])  # type: ignore[index]
        (statement,) = tree["statements"]
        node = statement["node"]
        node["modifiers"] = [m for m in node.get("modifiers", []) if m.get("type") != "ORDER_MODIFIER"]
        return con.execute("SELECT json_deserialize_sql(?)", [json.dumps(tree)]).fetchone()[0]  # type: ignore[index]
    except (duckdb.Error, KeyError, TypeError, ValueError):
        return plain


def _wait(done: threading.Event, timeout: float | None) -> bool:
    """Wait in short slices (so the main thread sees KeyboardInterrupt promptly); False when ``timeout`` passed."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while not done.wait(0.1):
        if deadline is not None and time.monotonic() >= deadline:
            return False
    return True
