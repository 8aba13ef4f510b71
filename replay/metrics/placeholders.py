"""Placeholder wording: does a wording make the agent call again what it replaced? (SPEC 4, "Placeholder wording")

Measured, never assumed, from runs whose logs show placeholders (the ``placeholders`` view, filled by readers
that see what each request sent). Per wording:

- an *event* is one output shown as that wording, at the first request that showed it (later requests that
  show the same placeholder again are the same event). ``prompt`` events (the harness replaced the output in
  the request, e.g. SWE-agent's "Old environment output: (N lines omitted)") are watched from the calls that
  request produced; ``clip`` events (the output was cut where it was made, e.g. "<response clipped>") from
  the calls after the output;
- a *re-call*: one of the next ``k`` tool calls repeats the call the placeholder names, i.e. touches the same
  resource with the same access (replay.readers.tool_targets: normalised file, command or URL), or has the same
  tool and identical arguments. Events with no later call (the run ended) are not counted;
- the rate with a Wilson 95% interval. A wording with no event has no row (no rate);
- the baseline: the same re-call rate for outputs that were *not* replaced at the same age (requests since
  the output was appended; the ages the wording's events had), in runs of the same formats by default, so a
  reader can see whether the wording itself induces re-calls.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import duckdb
import numpy as np
import polars as pl

from replay.store import frame

DEFAULT_K = 3
Z95 = 1.959963984540054
COLUMNS = [
    "wording",
    "origin",
    "events",
    "recalls",
    "rate",
    "ci_low",
    "ci_high",
    "ages",
    "runs",
    "base_events",
    "base_recalls",
    "base_rate",
    "base_ci_low",
    "base_ci_high",
]
SCOPES = ("format", "all")


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion; (nan, nan) when n is 0."""
    if n <= 0:
        return math.nan, math.nan
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    return lo, 1.0 if successes == n else min(1.0, centre + half)


@dataclass
class _Run:
    """One run's items as arrays: enough to find the next calls after a point and compare them."""

    steps: np.ndarray  # step of each item, in seq order
    call_seq: np.ndarray  # seq of each tool call, ascending
    call_res: np.ndarray  # resource+access key id per call (-1 none)
    call_args: np.ndarray  # tool+arguments key id per call
    result_seq: np.ndarray  # tool results with a known call
    result_res: np.ndarray
    result_args: np.ndarray
    n_requests: int
    format: str

    def boundary(self, seq: np.ndarray, request: np.ndarray, origin_clip: np.ndarray) -> np.ndarray:
        """Last item seq before the calls that can react: the output itself (clip) or request's history (prompt)."""
        end = np.searchsorted(self.steps, request, side="right") - 1
        return np.where(origin_clip, seq, np.maximum(end, seq))

    def recalled(self, bound: np.ndarray, res: np.ndarray, args: np.ndarray, k: int) -> np.ndarray:
        """1 re-called, 0 not, -1 no later call; for each point ``bound`` with the named call's keys."""
        out = np.full(len(bound), -1, dtype=np.int8)
        start = np.searchsorted(self.call_seq, bound, side="right")
        n = len(self.call_seq)
        for j, p in enumerate(start):
            if p >= n:
                continue
            w = slice(p, min(p + k, n))
            same_args = bool((self.call_args[w] == args[j]).any())
            out[j] = int(same_args or (res[j] >= 0 and bool((self.call_res[w] == res[j]).any())))
        return out


def _load(con: duckdb.DuckDBPyConnection) -> tuple[dict[str, _Run], pl.DataFrame]:
    con = con.cursor()  # its own result set: an unfinished fetch on the caller's connection does not block us
    items = frame(
        con,
        """
        SELECT i.run_id, i.seq, i.step, i.kind, i.tool_name, i.call_id, i.args, i.resource, i.access
        FROM items i JOIN runs r USING (run_id) WHERE r.n_requests > 0 ORDER BY i.run_id, i.seq""",
    )
    runs = frame(con, "SELECT run_id, format, n_requests FROM runs WHERE n_requests > 0")
    events = frame(con, "SELECT run_id, step, seq, wording, origin FROM placeholders")
    res_ids: dict[str, int] = {}
    args_ids: dict[str, int] = {}
    meta = {r["run_id"]: r for r in runs.iter_rows(named=True)}
    out: dict[str, _Run] = {}
    for (run_id,), df in items.group_by(["run_id"], maintain_order=True):
        kind = df["kind"].to_numpy()
        res_key = [None if r is None else f"{a}:{r}" for r, a in zip(df["resource"], df["access"], strict=True)]
        res = np.array([-1 if r is None else res_ids.setdefault(r, len(res_ids)) for r in res_key], dtype=np.int64)
        arg = np.array(
            [
                args_ids.setdefault(f"{t}\x00{a}", len(args_ids))
                for t, a in zip(df["tool_name"], df["args"], strict=True)
            ],
            dtype=np.int64,
        )
        seq = df["seq"].to_numpy()
        is_call = kind == "tool_call"
        last_call: dict[str, int] = {}
        r_seq, r_res, r_args = [], [], []
        for i, (kd, cid) in enumerate(zip(kind, df["call_id"], strict=True)):
            if cid is None:
                continue
            if kd == "tool_call":
                last_call[cid] = i
            elif kd == "tool_result" and cid in last_call:
                c = last_call[cid]
                r_seq.append(seq[i])
                r_res.append(res[c])
                r_args.append(arg[c])
        m = meta[run_id]
        out[run_id] = _Run(
            df["step"].to_numpy(),
            seq[is_call],
            res[is_call],
            arg[is_call],
            np.array(r_seq, dtype=np.int64),
            np.array(r_res, dtype=np.int64),
            np.array(r_args, dtype=np.int64),
            int(m["n_requests"]),
            m["format"],
        )
    return out, events


def placeholder_points(
    con: duckdb.DuckDBPyConnection, k: int = DEFAULT_K, scope: str = "format"
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per-event rows (run_id, seq, wording, origin, request, age, recalled) and baseline rows
    (wording, run_id, seq, request, age, recalled) before aggregation; recalled is -1 when no call followed."""
    if scope not in SCOPES:
        raise ValueError(f"scope {scope!r}: choose one of {', '.join(SCOPES)}")
    runs, shown = _load(con)
    shown = shown.filter(pl.col("run_id").is_in(list(runs)))
    first = (
        shown.group_by(["run_id", "seq", "wording", "origin"])
        .agg(pl.col("step").min().alias("request"))
        .sort(["run_id", "seq", "wording"])
    )
    ev_rows: list[dict] = []
    for (run_id,), df in first.group_by(["run_id"], maintain_order=True):
        run = runs[run_id]
        index = {int(s): j for j, s in enumerate(run.result_seq)}
        known = np.array([int(s) in index for s in df["seq"]], dtype=bool)
        df = df.filter(pl.Series(known))  # outputs whose call is known: the placeholder names that call
        pos = np.array([index[int(s)] for s in df["seq"]], dtype=np.int64)
        if not df.height:
            continue
        seq, request = df["seq"].to_numpy(), df["request"].to_numpy()
        clip = df["origin"].to_numpy() == "clip"
        age = np.where(clip, 0, request - run.steps[seq])
        rec = run.recalled(run.boundary(seq, request, clip), run.result_res[pos], run.result_args[pos], k)
        ev_rows.extend(
            {
                "run_id": run_id,
                "format": run.format,
                "seq": int(s),
                "wording": w,
                "origin": o,
                "request": int(q),
                "age": int(a),
                "recalled": int(r),
            }
            for s, w, o, q, a, r in zip(seq, df["wording"], df["origin"], request, age, rec, strict=True)
        )
    events = pl.DataFrame(
        ev_rows,
        schema={
            "run_id": pl.Utf8,
            "format": pl.Utf8,
            "seq": pl.Int64,
            "wording": pl.Utf8,
            "origin": pl.Utf8,
            "request": pl.Int64,
            "age": pl.Int64,
            "recalled": pl.Int8,
        },
    )
    base = _baseline(runs, shown, events, k, scope)
    return events, base


def _baseline(runs: dict[str, _Run], shown: pl.DataFrame, events: pl.DataFrame, k: int, scope: str) -> pl.DataFrame:
    """Outputs shown whole at the ages a wording's events had, and whether the next k calls re-called them."""
    replaced = {(r, q, s) for r, q, s in shown.select("run_id", "step", "seq").iter_rows()}
    clipped = {(r, s) for r, s in shown.filter(pl.col("origin") == "clip").select("run_id", "seq").iter_rows()}
    rows: list[dict] = []
    groups = events.group_by(["wording", "origin"], maintain_order=True).agg(
        pl.col("age").unique().sort(), pl.col("format").unique()
    )
    for wording, origin, ages, formats in groups.iter_rows():
        is_clip = origin == "clip"
        for run_id, run in runs.items():
            if (scope == "format" and run.format not in formats) or not len(run.result_seq):
                continue
            seq = run.result_seq
            keep = np.array([(run_id, int(s)) not in clipped for s in seq], dtype=bool)
            for age in ages:
                request = run.steps[seq] + age
                ok = keep & (request < run.n_requests)
                ok &= np.array(
                    [(run_id, int(q), int(s)) not in replaced for q, s in zip(request, seq, strict=True)], dtype=bool
                )
                if not ok.any():
                    continue
                s, q = seq[ok], request[ok]
                rec = run.recalled(
                    run.boundary(s, q, np.full(len(s), is_clip)), run.result_res[ok], run.result_args[ok], k
                )
                rows.extend(
                    {
                        "wording": wording,
                        "origin": origin,
                        "run_id": run_id,
                        "seq": int(a),
                        "request": int(b),
                        "age": int(age),
                        "recalled": int(r),
                    }
                    for a, b, r in zip(s, q, rec, strict=True)
                )
    return pl.DataFrame(
        rows,
        schema={
            "wording": pl.Utf8,
            "origin": pl.Utf8,
            "run_id": pl.Utf8,
            "seq": pl.Int64,
            "request": pl.Int64,
            "age": pl.Int64,
            "recalled": pl.Int8,
        },
    )


def _rates(df: pl.DataFrame, prefix: str = "", keys: tuple[str, ...] = ("wording", "origin")) -> pl.DataFrame:
    agg = (
        df.filter(pl.col("recalled") >= 0)
        .group_by(list(keys))
        .agg(
            pl.len().alias("n"),
            pl.col("recalled").cast(pl.Int64).sum().alias("hits"),
            pl.col("age").unique().sort().cast(pl.Utf8).str.join(",").alias("ages"),
            pl.col("run_id").n_unique().alias("runs"),
        )
    )
    lo_hi = [wilson(h, n) for h, n in zip(agg["hits"], agg["n"], strict=True)]
    return agg.with_columns(
        (pl.col("hits") / pl.col("n")).alias("rate"),
        pl.Series("ci_low", [a for a, _ in lo_hi], dtype=pl.Float64),
        pl.Series("ci_high", [b for _, b in lo_hi], dtype=pl.Float64),
    ).rename(
        {
            "n": f"{prefix}events",
            "hits": f"{prefix}recalls",
            "rate": f"{prefix}rate",
            "ci_low": f"{prefix}ci_low",
            "ci_high": f"{prefix}ci_high",
        }
    )


def recall_rates(
    con: duckdb.DuckDBPyConnection, k: int = DEFAULT_K, scope: str = "format", by_run: bool = False
) -> pl.DataFrame:
    """Per wording: events, re-calls within the next ``k`` calls, rate and Wilson 95% CI, and the baseline.

    The interval treats events as independent; they cluster by run, so ``by_run`` (one row per wording and
    run, with a ``run_id`` column first; the baseline stays per wording) shows whether one run drives a rate."""
    if k < 1:
        raise ValueError("k must be at least 1")
    events, base = placeholder_points(con, k, scope)
    keys = ("wording", "origin", "run_id") if by_run else ("wording", "origin")
    columns = (["run_id"] if by_run else []) + COLUMNS
    main = _rates(events, keys=keys)
    if not main.height:
        return pl.DataFrame(
            schema={c: pl.Utf8 if c in ("wording", "origin", "ages", "run_id") else pl.Float64 for c in columns}
        )
    contrast = _rates(base, "base_").drop("ages", "runs")
    return (
        main.join(contrast, on=["wording", "origin"], how="left")
        .with_columns(pl.col("base_events").fill_null(0), pl.col("base_recalls").fill_null(0))
        .select(columns)
        .sort(
            ["events", "wording"] + (["run_id"] if by_run else []),
            descending=[True, False] + ([False] if by_run else []),
        )
    )
