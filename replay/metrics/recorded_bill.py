"""The recorded bill of stored runs: every request's recorded usage priced at its own model on its own day
(replay.metrics.bill), then summed per run, per model or per day.

A request's model is the one its log names for it (Claude Code: the assistant message's ``model``), else the run's.
A summariser call the log records beside its requests (replay.metrics.summariser_calls: OpenHands V1's condenser,
a Claude Code compaction fork, a Codex compact task, a Copilot CLI compaction) is billed too, as a row of ``call``
"summariser" at its event's step, priced at its own model (the request's at that step when the log names none) on
the day of the run's request at that step. So is each server-side iteration a response records beyond the request's own
(replay.metrics.server_iterations: Claude Code's advisor calls, the executor's further iterations, an API-side
compaction, a fallback model's): a row of ``call`` "advisor", "iteration" or "compaction" at its request's step and
day, at its own model (the request's when the log names none). A run whose log records usage only for the whole
session (replay.metrics.session_totals: the Copilot CLI 1.0.34's shutdown totals) is billed by those: a row of
``call`` "session" per model at its last request, whose ``covers`` is the requests it counts.
Its counts: uncached input (``input_tokens``, else ``prompt_tokens`` less reads and writes), cache reads, cache
writes split into 5 minute and 1 hour (``cache_write_1h``; writes the log does not split are 5 minute writes, the
API's default), output. A request with neither ``input_tokens`` nor ``prompt_tokens`` has no usage to bill: it is
counted in ``unbilled_requests``, never priced as 0. A sum that includes an unpriced request is NULL, and
``cost_note`` names the model and the reason.
"""

from __future__ import annotations

import json
from datetime import date

import duckdb
import numpy as np
import polars as pl

from replay.metrics.bill import day_of, price_requests
from replay.metrics.prices import DEFAULT_PRICING, Pricing
from replay.metrics.server_iterations import server_calls
from replay.metrics.session_totals import session_totals
from replay.metrics.summariser_calls import recorded_calls
from replay.store import frame

TOKENS = ("input_tokens", "cache_read", "cache_write_5m", "cache_write_1h", "output_tokens")

_SQL = """SELECT q.run_id, q.step, q.ts, r.format AS harness, coalesce(q.model, r.model) AS model, q.input_tokens,
                 q.prompt_tokens,
                 q.cache_read, q.cache_write, q.cache_write_1h, q.output_tokens
          FROM requests q JOIN runs r USING (run_id) {where} ORDER BY q.run_id, q.step"""

# runs whose context events may hold a summariser call's usage, or that record server-side iterations or side calls
# (the rest have no such call to bill)
_EVENTS_SQL = """SELECT run_id, format AS harness, model, metadata FROM runs
                 WHERE (metadata LIKE '%"usage"%' OR metadata LIKE '%"server_iterations"%'
                        OR metadata LIKE '%"side_calls"%' OR metadata LIKE '%"session_totals"%') {where}
                 ORDER BY run_id"""


# a request the log records usage for (the rest are unbilled, never priced as 0)
_HAS_USAGE = pl.col("input_tokens").is_not_null() | pl.col("prompt_tokens").is_not_null()


def request_bill(
    con: duckdb.DuckDBPyConnection, pricing: Pricing = DEFAULT_PRICING, run_ids: list[str] | None = None
) -> pl.DataFrame:
    """One row per stored request and recorded call: day, model, the five counts billed (5 minute and 1 hour
    writes apart), ``billed`` (it has usage), ``covers`` (the run's requests whose usage it bills: 1 for a request
    with usage, a session row's count, else 0), ``cost_usd`` (NaN: unpriced or unbilled) and ``why`` (empty when
    priced)."""
    where, params = ("WHERE q.run_id IN (SELECT unnest(?))", [run_ids]) if run_ids is not None else ("", None)
    q = frame(con, _SQL.format(where=where), params).with_columns(
        pl.lit("request").alias("call"), pl.lit(1, pl.Int64).alias("covers")
    )
    q = pl.concat([q, _call_rows(con, q, run_ids)], how="vertical_relaxed")
    n = q.height
    if not n:
        return _empty()

    def col(name: str) -> np.ndarray:
        return q[name].fill_null(0).to_numpy().astype(np.int64)

    billed = q.select(_HAS_USAGE).to_series().to_numpy()
    read, write = col("cache_read"), col("cache_write")
    w1h = np.minimum(col("cache_write_1h"), write)  # a split larger than the writes cannot be billed twice
    uncached = np.where(
        q["input_tokens"].is_not_null().to_numpy(),
        col("input_tokens"),
        np.maximum(col("prompt_tokens") - read - write, 0),
    )
    models = q["model"].to_list()
    days = [day_of(t) for t in q["ts"].to_list()]
    bill = price_requests(models, days, uncached, read, write - w1h, w1h, col("output_tokens"), pricing)
    why = [bill.unpriced.get(pricing.model or m or "(none)", "") for m in models]
    cost = np.where(billed, bill.total, np.nan)
    covers = np.where(q["call"].to_numpy() == "request", billed, col("covers"))
    return pl.DataFrame(
        {
            "run_id": q["run_id"],
            "step": q["step"],
            "call": q["call"],
            "day": days,
            "harness": q["harness"],
            "model": models,
            "billed": billed,
            "covers": covers,
            "input_tokens": np.where(billed, uncached, 0),
            "cache_read": np.where(billed, read, 0),
            "cache_write_5m": np.where(billed, write - w1h, 0),
            "cache_write_1h": np.where(billed, w1h, 0),
            "output_tokens": np.where(billed, col("output_tokens"), 0),
            "cost_usd": cost,
            "why": [w if b else "" for w, b in zip(why, billed, strict=True)],
            "price_source": [bill.sources.get(pricing.model or m or "(none)", "") for m in models],
        },
        schema_overrides={"day": pl.Date},
    )


def _call_rows(con: duckdb.DuckDBPyConnection, q: pl.DataFrame, run_ids: list[str] | None) -> pl.DataFrame:
    """One row per recorded summariser call and server-side iteration, in the columns of the request query ``q``
    (``call`` "summariser", or the iteration's: replay.metrics.server_iterations): usage as uncached
    ``input_tokens``, the writes in ``cache_write`` with their 1 hour part, the time of the run's request at the
    call's step (its last request before it when none is at or after it); a call the log names no model for is its
    request's. A run's session totals are rows only where none of its requests records usage."""
    where, params = ("AND run_id IN (SELECT unnest(?))", [run_ids]) if run_ids is not None else ("", None)
    times: dict[str, list[tuple[int, str | None]]] = {}
    models: dict[str, dict[int, str | None]] = {}  # run -> step -> the request's model
    for rid, step, ts, model in q.select("run_id", "step", "ts", "model").iter_rows():
        times.setdefault(rid, []).append((step, ts))
        models.setdefault(rid, {})[step] = model
    with_usage = set(q.filter(_HAS_USAGE)["run_id"])
    rows = []
    for rid, harness, model, raw in con.execute(_EVENTS_SQL.format(where=where), params).fetchall():
        metadata = json.loads(raw) if isinstance(raw, str) else raw
        meta = metadata if isinstance(metadata, dict) else {}
        calls, _ = recorded_calls(meta)
        found = [(c.step, "summariser", c.model, c.counts, 0) for c in calls]
        found += [(c.step, c.call, c.model, c.counts, 0) for c in server_calls(meta)]
        if rid not in with_usage and rid in times:
            last = times[rid][-1][0]
            found += [(last, "session", t.model, t.counts, t.requests) for t in session_totals(meta)]
        for step_of, call, own_model, counts, covers in found:
            uncached, read, write_5m, write_1h, output = counts
            steps = times.get(rid, [])
            at = next((ts for step, ts in steps if step >= step_of), steps[-1][1] if steps else None)
            request_model = models.get(rid, {}).get(step_of)
            rows.append(
                {
                    "run_id": rid,
                    "step": step_of,
                    "ts": at,
                    "harness": harness,
                    "model": own_model or request_model or model,
                    "input_tokens": uncached,
                    "prompt_tokens": None,
                    "cache_read": read,
                    "cache_write": write_5m + write_1h,
                    "cache_write_1h": write_1h,
                    "output_tokens": output,
                    "call": call,
                    "covers": covers,
                }
            )
    return pl.DataFrame(rows, schema=q.schema) if rows else q.clear()


def _empty() -> pl.DataFrame:
    return pl.DataFrame(
        schema={
            "run_id": pl.String,
            "step": pl.Int64,
            "call": pl.String,
            "day": pl.Date,
            "harness": pl.String,
            "model": pl.String,
            "billed": pl.Boolean,
            "covers": pl.Int64,
            **dict.fromkeys(TOKENS, pl.Int64),
            "cost_usd": pl.Float64,
            "why": pl.String,
            "price_source": pl.String,
        }
    )


def _sums(df: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Tokens and cost per ``keys``: cost NULL when a billed request is unpriced, or when nothing was billed;
    ``cost_note`` says which (the unpriced models and why, or that the log has no per-request usage)."""
    unpriced = pl.col("billed") & pl.col("cost_usd").is_nan()
    summariser = pl.col("call") == "summariser"
    server = ~pl.col("call").is_in(["request", "summariser", "session"])
    out = df.group_by(keys, maintain_order=True).agg(
        pl.col("run_id").n_unique().alias("runs"),
        (pl.col("call") == "request").sum().alias("requests"),
        pl.col("covers").sum().alias("billed_requests"),
        pl.col("billed").sum().alias("_billed"),
        *[pl.col(t).sum() for t in TOKENS],
        pl.when(pl.col("billed")).then(pl.col("cost_usd")).sum().alias("_cost"),
        summariser.sum().alias("summariser_calls"),
        pl.when(summariser).then(pl.col("cost_usd")).sum().alias("summary_cost_usd"),
        server.sum().alias("server_calls"),
        pl.when(server).then(pl.col("cost_usd")).sum().alias("server_cost_usd"),
        unpriced.sum().alias("unpriced_requests"),
        pl.struct("model", "why").filter(unpriced).unique(maintain_order=True).alias("_why"),
    )
    note = [
        _note(row["_why"], row["unpriced_requests"], row["_billed"])
        for row in out.select("_why", "unpriced_requests", "_billed").iter_rows(named=True)
    ]
    cost = pl.when((pl.col("unpriced_requests") > 0) | (pl.col("_billed") == 0)).then(None).otherwise(pl.col("_cost"))
    return out.with_columns(cost.alias("cost_usd"), pl.Series("cost_note", note, pl.String)).drop(
        "_cost", "_why", "_billed"
    )


def _note(why: list[dict], unpriced: int, billed: int) -> str:
    """Why a row has no cost, in a few words (the reasons in full: :func:`bill_summary`)."""
    if not billed:
        return "no per-request usage"
    if not unpriced:
        return ""
    return "; ".join(f"no price: {w['model']}" if w["model"] else "no model named" for w in why)


def runs_bill(df: pl.DataFrame) -> pl.DataFrame:
    """Per run: requests, billed requests, the five token counts, cost_usd, the recorded summariser calls and their
    cost, the recorded server-side iterations and their cost (both in cost_usd), unpriced_requests, cost_note."""
    return _sums(df, ["run_id"]).drop("runs")


GROUPS = ("model", "harness", "day", "week", "month")  # week: the Monday it starts on; all days in UTC


def grouped_bill(df: pl.DataFrame, by: str) -> pl.DataFrame:
    """Per model, harness (the log's format), day, week or month (UTC; requests without a time under a NULL
    period): runs, requests, tokens, cost."""
    if by not in GROUPS:
        from replay.errors import ReplayError

        raise ReplayError(f"--by {by!r}: choose run (the default), {', '.join(GROUPS)}")
    if by == "week":
        df = df.with_columns(pl.col("day").dt.truncate("1w").alias("week"))
    elif by == "month":
        df = df.with_columns(pl.col("day").dt.strftime("%Y-%m").alias("month"))
    return _sums(df, [by]).sort(by, nulls_last=True)


def within_days(df: pl.DataFrame, since: date | None, until: date | None) -> pl.DataFrame:
    """The requests of a :func:`request_bill` frame from ``since`` to ``until`` (UTC days, both included); a
    request without a time is outside any such range."""
    if since is not None:
        df = df.filter(pl.col("day") >= since)
    if until is not None:
        df = df.filter(pl.col("day") <= until)
    return df


def bill_summary(table: pl.DataFrame, what: str, reasons: dict[str, str]) -> list[str]:
    """Lines under a bill table: the total of the rows with a cost, then the rows left out by note, and the reason
    for each unpriced model (``reasons``: model -> why, from :func:`unpriced_reasons`)."""
    cost = table["cost_usd"]
    priced = table.filter(cost.is_not_null())
    lines = [f"recorded cost of {priced.height} of {table.height} {what}s: ${priced['cost_usd'].sum():,.4f}"]
    left = table.filter(cost.is_null())
    if left.height:
        lines.append(f"left out of the total ({left.height} {what}s; their cost is unknown, not 0):")
        lines += [
            f"  {n} {what}(s): {note or 'no requests'}"
            for note, n in left.group_by("cost_note", maintain_order=True).len().iter_rows()
        ]
        lines += [f"  {model}: {why}" for model, why in sorted(reasons.items())]
        if any(m != "(none)" for m in reasons):
            lines.append("  price a model with --prices FILE or --price input=.. --price output=.. (USD/Mtok)")
    return lines


def unpriced_reasons(df: pl.DataFrame) -> dict[str, str]:
    """model -> why it has no price, over the billed requests of a :func:`request_bill` frame."""
    rows = df.filter(pl.col("billed") & (pl.col("why") != "")).select("model", "why").unique()
    return {m or "(none)": w for m, w in rows.iter_rows()}
