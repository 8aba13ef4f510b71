"""Fit counted prompts to recorded usage per run: recorded ≈ overhead + scale * reconstructed."""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np
import polars as pl

from replay.store import frame
from replay.tokens.counting import count_items
from replay.tokens.template import Overhead, template_overhead
from replay.tokens.tokenizer import CountingTokenizer

MIN_FIT = 3  # requests needed to fit a scale; fewer fit only the overhead (scale 1)


@dataclass(frozen=True)
class Fit:
    overhead: float
    scale: float


def reconstruct(items: pl.DataFrame, steps: np.ndarray, overhead: Overhead) -> np.ndarray:
    """Prompt tokens at each request step: items with step <= s since the latest summary, plus template cost."""
    items = items.sort("seq")
    step = items["step"].to_numpy()
    seq = items["seq"].to_numpy()
    cost = items["n_tokens"].fill_null(0).to_numpy() + np.array([overhead.for_role(r) for r in items["role"]])
    summary = (items["kind"] == "summary").to_numpy()
    out = np.empty(len(steps), dtype=np.float64)
    for i, s in enumerate(steps):
        visible = step <= s
        sums = visible & summary
        if sums.any():
            visible &= seq >= seq[sums].max()
        out[i] = cost[visible].sum() + overhead.fixed
    return out


def fit(recon: np.ndarray, recorded: np.ndarray) -> Fit:
    """Least squares recorded ≈ a + b * recon; with too few or constant points, b = 1 and a = mean residual."""
    if len(recon) >= MIN_FIT and np.ptp(recon) > 0:
        b, a = np.polyfit(recon, recorded, 1)
        if b > 0:
            return Fit(float(a), float(b))
    return Fit(float(np.mean(recorded - recon)) if len(recon) else 0.0, 1.0)


def _usage(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    return frame(con, """
        SELECT q.run_id, q.step, q.prompt_tokens, r.source_path
        FROM requests q JOIN runs r USING (run_id)
        WHERE q.prompt_tokens IS NOT NULL AND q.prompt_tokens > 0 ORDER BY q.run_id, q.step""")


def calibrate(con: duckdb.DuckDBPyConnection, tok: CountingTokenizer, progress: bool = False,
              store: bool = True) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per-request fitted predictions and per-run fits (stored in `calibrations`); counts tokens first."""
    count_items(con, tok, progress=progress)
    overhead = template_overhead(tok)
    usage = _usage(con)
    items = frame(con, """
        SELECT i.run_id, i.seq, i.step, i.role, i.kind, i.chars, t.n_tokens FROM items i
        LEFT JOIN token_counts t ON t.content_hash = i.content_hash AND t.tokenizer_id = ?
        WHERE i.run_id IN (SELECT DISTINCT run_id FROM requests WHERE prompt_tokens > 0)""", [tok.tokenizer_id])
    by_run = items.partition_by("run_id", as_dict=True) if len(items) else {}
    per_request, per_run = [], []
    for (run_id,), req in usage.partition_by("run_id", as_dict=True).items():
        run_items = by_run.get((run_id,))
        if run_items is None:
            continue
        steps, recorded = req["step"].to_numpy(), req["prompt_tokens"].to_numpy().astype(np.float64)
        recon = reconstruct(run_items, steps, overhead)
        f = fit(recon, recorded)
        pred = f.overhead + f.scale * recon
        err, raw = np.abs(pred - recorded) / recorded, np.abs(recon - recorded) / recorded
        chars4 = _chars4(run_items, steps)
        per_request.append(pl.DataFrame({
            "run_id": run_id, "source_path": req["source_path"], "step": steps, "recorded": recorded,
            "reconstructed": recon, "predicted": pred, "err": err, "raw_err": raw, "chars4": chars4}))
        per_run.append({"tokenizer_id": tok.tokenizer_id, "run_id": run_id, "source_path": req["source_path"][0],
                        "n_requests": len(steps), "overhead": f.overhead, "scale": f.scale,
                        "per_message_tokens": overhead.for_role("user"), "median_err": float(np.median(err)),
                        "p95_err": float(np.quantile(err, 0.95)), "raw_median_err": float(np.median(raw))})
    requests = pl.concat(per_request) if per_request else pl.DataFrame()
    runs = pl.DataFrame(per_run)
    if store and len(runs):
        _store(con, runs)
    return requests, runs


def _chars4(items: pl.DataFrame, steps: np.ndarray) -> np.ndarray:
    """The chars/4 estimate of each prompt (no summary handling, no overhead): what a naive policy would see."""
    items = items.sort("seq")
    step, chars = items["step"].to_numpy(), items["chars"].fill_null(0).to_numpy()
    return np.array([chars[step <= s].sum() / 4 for s in steps])


def _store(con: duckdb.DuckDBPyConnection, runs: pl.DataFrame) -> None:
    table = runs.with_columns(pl.lit(None, pl.Datetime).alias("calibrated_at")).to_arrow()
    con.register("_calib", table)
    con.execute("INSERT OR REPLACE INTO calibrations SELECT tokenizer_id, run_id, source_path, n_requests, overhead, "
                "scale, per_message_tokens, median_err, p95_err, raw_median_err, now() FROM _calib").fetchall()
    con.unregister("_calib")


def error_by_file(requests: pl.DataFrame) -> pl.DataFrame:
    """Error distribution per file: median and p95 of |err|/recorded, before and after the fit."""
    if requests.is_empty():
        return pl.DataFrame()
    return (requests.group_by("source_path").agg(
        pl.col("run_id").n_unique().alias("runs"), pl.len().alias("requests"),
        pl.col("err").median().alias("median_err"), pl.col("err").quantile(0.95).alias("p95_err"),
        pl.col("raw_err").median().alias("raw_median_err"),
        (pl.col("chars4") / pl.col("recorded")).median().alias("chars4_over_recorded"))
        .with_columns(pl.col("source_path").str.split("/").list.last().alias("file"))
        .drop("source_path").select("file", pl.exclude("file")).sort("file"))
