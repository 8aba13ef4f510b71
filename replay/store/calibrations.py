"""Calibration results written to the store: per run (``calibrations``) and per file (``calibration_files``), the
tables of the numbered migrations (replay.store.schema)."""

from __future__ import annotations

import duckdb
import polars as pl


def store_runs(con: duckdb.DuckDBPyConnection, runs: pl.DataFrame) -> None:
    """The per-run fits, latest calibration per tokenizer and run."""
    table = runs.with_columns(pl.lit(None, pl.Datetime).alias("calibrated_at")).to_arrow()
    con.register("_calib", table)
    con.execute(
        "INSERT OR REPLACE INTO calibrations SELECT tokenizer_id, run_id, source_path, n_requests, overhead, "
        "scale, per_message_tokens, median_err, p95_err, raw_median_err, now() FROM _calib"
    ).fetchall()
    con.unregister("_calib")


def store_files(con: duckdb.DuckDBPyConnection, tokenizer_id: str, by_file: pl.DataFrame) -> None:
    """The per-file table, latest calibration per tokenizer and file."""
    if by_file.is_empty():
        return
    table = by_file.select(
        "file", "runs", "requests", "median_err", "p95_err", "within_target", "unreconstructable"
    ).to_arrow()
    con.register("_calib_files", table)
    con.execute(
        "INSERT OR REPLACE INTO calibration_files SELECT ?, file, runs, requests, median_err, p95_err, "
        "within_target, unreconstructable, now() FROM _calib_files",
        [tokenizer_id],
    ).fetchall()
    con.unregister("_calib_files")
