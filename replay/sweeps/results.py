"""Sweep results in DuckDB: one tidy table keyed by (sweep_id, point_id, run_id), param_<name> columns.

Columns are added as new parameters and metrics appear. A batch of points is one transaction, so a
killed sweep leaves whole points only, and a resumed one skips them.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import duckdb
import polars as pl

from replay.errors import ReplayError

KEY_COLUMNS = ("sweep_id", "point_id", "run_id")


def query_frame(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> pl.DataFrame:
    """A query as a polars frame, safe after an execute() whose result was not drained."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        table = con.execute(sql, params or []).to_arrow_table()
        if table is None:
            raise ReplayError(f"the store returned no result set for: {' '.join(sql.split())[:120]}")
        return cast(pl.DataFrame, pl.from_arrow(table))  # a Table converts to a DataFrame (an Array to a Series)


def register_sweep(
    con: duckdb.DuckDBPyConnection,
    sweep_id: str,
    name: str,
    policy: str,
    spec: dict[str, Any],
    n_points: int,
    n_runs: int,
) -> None:
    con.execute(
        """INSERT INTO sweeps VALUES (?, ?, ?, ?, ?, ?, ?, NULL)
                   ON CONFLICT (sweep_id) DO UPDATE SET n_points = excluded.n_points, n_runs = excluded.n_runs""",
        [
            sweep_id,
            name,
            policy,
            json.dumps(spec, sort_keys=True, default=str),
            n_points,
            n_runs,
            datetime.now(UTC).replace(tzinfo=None),
        ],
    )


def _sql_type(dtype: pl.DataType) -> str:
    if dtype == pl.Boolean:
        return "BOOLEAN"
    if dtype.is_numeric() or dtype == pl.Null:
        return "DOUBLE"
    return "VARCHAR"


def _add_columns(con: duckdb.DuckDBPyConnection, frame: pl.DataFrame, known: set[str]) -> None:
    """Add the frame's new columns to sweep_results; ``known`` caches the table's columns between batches."""
    if known.issuperset(frame.columns):
        return
    known |= {
        r[0]
        for r in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'sweep_results'"
        ).fetchall()
    }
    for name in sorted(set(frame.columns) - known):
        con.execute(f'ALTER TABLE sweep_results ADD COLUMN "{name}" {_sql_type(frame.schema[name])}')
        known.add(name)


Rows = dict[str, Any] | list[dict[str, Any]] | pl.DataFrame  # columns, row dicts, or a frame


def batch_frame(points: list[Rows]) -> pl.DataFrame:
    """One frame of the run rows of several points: the compiled kernels' columns built in one constructor per
    set of columns, the reference path's row dicts in one more, any frames concatenated to them."""
    from replay.sweeps.point_rows import columns_frame

    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    rows: list[dict[str, Any]] = []
    frames = []
    for p in points:
        if isinstance(p, pl.DataFrame):
            frames.append(p)
        elif isinstance(p, list):
            rows += p
        else:
            groups.setdefault(tuple(p), []).append(p)
    frames += [columns_frame(group) for group in groups.values()]
    if rows:
        frames.append(pl.DataFrame(rows, infer_schema_length=None))
    return frames[0] if len(frames) == 1 else pl.concat(frames, how="diagonal_relaxed")


def error_count(rows: Rows) -> int:
    """Rows of one point that carry an error."""
    if isinstance(rows, pl.DataFrame):
        return int(rows["error"].is_not_null().sum())
    if isinstance(rows, list):
        return sum(r.get("error") is not None for r in rows)
    return sum(e is not None for e in rows["error"])


def commit_batch(con: duckdb.DuckDBPyConnection, points: list[Rows], known: set[str] | None = None) -> None:
    """Insert the rows of whole points in one transaction, one Arrow insert (``known``: the table's columns, if
    already read)."""
    if not points:
        return
    frame = batch_frame(points).with_columns(pl.lit(datetime.now(UTC).replace(tzinfo=None)).alias("computed_at"))
    _add_columns(con, frame, set() if known is None else known)
    con.execute("BEGIN")
    try:
        con.register("_batch", frame.rechunk().to_arrow())
        con.execute("INSERT INTO sweep_results BY NAME SELECT * FROM _batch")
        con.execute("COMMIT")
    except duckdb.Error as exc:
        con.execute("ROLLBACK")
        raise ReplayError(
            f"cannot store sweep results ({exc}); a parameter changed type between sweeps? "
            "rename it or use another --db"
        ) from exc
    finally:
        con.unregister("_batch")


def finish(con: duckdb.DuckDBPyConnection, sweep_id: str) -> None:
    con.execute(
        "UPDATE sweeps SET finished_at = ? WHERE sweep_id = ?", [datetime.now(UTC).replace(tzinfo=None), sweep_id]
    )


def sweep_columns(con: duckdb.DuckDBPyConnection, sweep_id: str) -> list[str]:
    """The columns of sweep_results this sweep fills (the keys and ``error`` always), in table order."""
    cols = [
        r[0]
        for r in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = "
            "'sweep_results' ORDER BY ordinal_position"
        ).fetchall()
    ]
    counts = con.execute(
        f"SELECT {', '.join(f'count({quote(c)})' for c in cols)} FROM sweep_results WHERE sweep_id = ?", [sweep_id]
    ).fetchone()
    return [c for c, n in zip(cols, counts or (), strict=True) if n or c in KEY_COLUMNS or c == "error"]


def quote(name: str) -> str:
    """A column name as a SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


def _rows_sql(con: duckdb.DuckDBPyConnection, sweep_id: str) -> str:
    cols = ", ".join(quote(c) for c in sweep_columns(con, sweep_id))
    return f"SELECT {cols} FROM sweep_results WHERE sweep_id = ? ORDER BY point_id, run_id"


def sweep_frame(con: duckdb.DuckDBPyConnection, sweep_id: str) -> pl.DataFrame:
    """This sweep's rows, without the columns only other sweeps use."""
    return query_frame(con, _rows_sql(con, sweep_id), [sweep_id])


def export_parquet(con: duckdb.DuckDBPyConnection, sweep_id: str, path: Path) -> Path:
    """The rows of ``sweep_frame`` written by DuckDB straight to Parquet: the sweep is never held in memory
    (DuckDB sorts out of core past its memory limit)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    con.execute(
        f"COPY ({_rows_sql(con, sweep_id)}) TO '{str(path).replace(chr(39), chr(39) * 2)}' (FORMAT parquet)", [sweep_id]
    )
    return path
