"""The statistics a synthetic corpus must keep, measured on two stores side by side with a tolerance each.

Shares (format, item kind, tool name, errors, repeat reads, usage present) compare by absolute difference; sizes,
counts, gaps and token figures by relative difference. Tolerances are stated per statistic (TOLERANCE) and listed
in docs/scale.md.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from replay.store import scalar

# "size mean": a mean of heavy-tailed item sizes moves with single items (in the corpus one 36,692-char user text
# is 40% of the mean of Claude Code's later user texts), so it gets a wider band than medians and quantiles.
TOLERANCE = {"share": 0.05, "median": 0.25, "mean": 0.25, "p90": 0.35, "size mean": 0.5}

RUNS = "SELECT * FROM runs WHERE format IN (SELECT unnest($formats))"
ITEMS = f"SELECT i.* FROM items i JOIN ({RUNS}) r USING (run_id)"
REQS = f"SELECT q.* FROM requests q JOIN ({RUNS}) r USING (run_id)"
READS = f"""SELECT run_id, resource, row_number() OVER (PARTITION BY run_id, resource ORDER BY seq) AS nth
            FROM ({ITEMS}) WHERE kind = 'tool_call' AND access = 'read' AND resource IS NOT NULL"""
GAPS = f"""SELECT epoch(TRY_CAST(ts AS TIMESTAMP)
                        - TRY_CAST(lag(ts) OVER (PARTITION BY run_id ORDER BY step) AS TIMESTAMP)) AS gap
           FROM ({REQS})"""
PER_RUN = f"SELECT run_id, count(*) AS n FROM ({REQS}) GROUP BY run_id"

# name -> (kind of statistic, SQL returning one number)
SCALARS: dict[str, tuple[str, str]] = {
    "requests per run (median)": ("median", f"SELECT median(n) FROM ({PER_RUN})"),
    "requests per run (mean)": ("mean", f"SELECT avg(n) FROM ({PER_RUN})"),
    "requests per run (p90)": ("p90", f"SELECT quantile_cont(n, 0.9) FROM ({PER_RUN})"),
    "items per request (mean)": ("mean", f"SELECT (SELECT count(*) FROM ({ITEMS})) / (SELECT count(*) FROM ({REQS}))"),
    "tool result error rate": ("share", f"SELECT avg(is_error::INT) FROM ({ITEMS}) WHERE kind = 'tool_result'"),
    "repeat read share (of reads)": ("share", f"SELECT avg((nth > 1)::INT) FROM ({READS})"),
    "reads of one resource (max per run, mean)": (
        "mean",
        f"""SELECT avg(m) FROM (SELECT run_id, max(nth) AS m
                                                              FROM ({READS}) GROUP BY run_id)""",
    ),
    "request gap seconds (median)": ("median", f"SELECT median(gap) FROM ({GAPS}) WHERE gap >= 0"),
    "request gap seconds (p90)": ("p90", f"SELECT quantile_cont(gap, 0.9) FROM ({GAPS}) WHERE gap >= 0"),
    "requests with usage (share)": ("share", f"SELECT avg((prompt_tokens IS NOT NULL)::INT) FROM ({REQS})"),
    "prompt tokens (median)": ("median", f"SELECT median(prompt_tokens) FROM ({REQS})"),
    "output tokens (median)": ("median", f"SELECT median(output_tokens) FROM ({REQS})"),
    "cache read share of prompt tokens": ("share", f"SELECT sum(cache_read) / sum(prompt_tokens) FROM ({REQS})"),
}
SIZE_KINDS = ("tool_result", "tool_call", "assistant_text", "user_text", "reasoning")


@dataclass(frozen=True)
class Row:
    statistic: str
    kind: str
    source: float | None
    synthetic: float | None

    @property
    def tolerance(self) -> float:
        return TOLERANCE[self.kind]

    @property
    def difference(self) -> float | None:
        if self.source is None or self.synthetic is None:
            return None
        if self.kind == "share":
            return self.synthetic - self.source
        return (self.synthetic - self.source) / self.source if self.source else None

    @property
    def ok(self) -> bool:
        diff = self.difference
        if diff is None:
            return self.source == self.synthetic
        return abs(diff) <= self.tolerance


def _one(con: duckdb.DuckDBPyConnection, sql: str, formats: list[str]) -> float | None:
    value = scalar(con, sql, {"formats": formats})
    return None if value is None else float(value)


def _shares(con: duckdb.DuckDBPyConnection, sql: str, formats: list[str]) -> dict[str, float]:
    return {str(k): float(v) for k, v in con.execute(sql, {"formats": formats}).fetchall()}


def statistics(con: duckdb.DuckDBPyConnection, formats: list[str]) -> dict[str, tuple[str, float | None]]:
    """Every statistic of the runs of ``formats`` in one store: name -> (kind, value)."""
    out: dict[str, tuple[str, float | None]] = {
        name: (kind, _one(con, sql, formats)) for name, (kind, sql) in SCALARS.items()
    }
    for fmt, share in _shares(
        con, f"SELECT format, count(*) / sum(count(*)) OVER () FROM ({RUNS}) GROUP BY 1", formats
    ).items():
        out[f"runs: {fmt} (share)"] = ("share", share)
    for kind, share in _shares(
        con, f"SELECT kind, count(*) / sum(count(*)) OVER () FROM ({ITEMS}) GROUP BY 1", formats
    ).items():
        out[f"items: {kind} (share)"] = ("share", share)
    tools = _shares(
        con,
        f"""SELECT tool_name, count(*) / sum(count(*)) OVER () FROM ({ITEMS})
                             WHERE kind = 'tool_call' GROUP BY 1""",
        formats,
    )
    for tool, share in sorted(tools.items(), key=lambda kv: -kv[1])[:8]:
        out[f"tool calls: {tool} (share)"] = ("share", share)
    for kind in SIZE_KINDS:
        where = f"FROM ({ITEMS}) WHERE kind = '{kind}'"
        out[f"chars {kind} (median)"] = ("median", _one(con, f"SELECT median(chars) {where}", formats))
        out[f"chars {kind} (mean)"] = ("size mean", _one(con, f"SELECT avg(chars) {where}", formats))
        out[f"chars {kind} (p90)"] = ("p90", _one(con, f"SELECT quantile_cont(chars, 0.9) {where}", formats))
    return out


def chars_per_token(con: duckdb.DuckDBPyConnection, formats: list[str], tokenizer_id: str) -> float | None:
    """Characters per token of the items of ``formats`` under a tokenizer already counted in the store."""
    return _one(
        con,
        f"""SELECT sum(i.chars) / sum(t.n_tokens) FROM ({ITEMS}) i JOIN token_counts t
                         ON t.content_hash = i.content_hash AND t.tokenizer_id = '{tokenizer_id}'""",
        formats,
    )


def compare(source: duckdb.DuckDBPyConnection, synthetic: duckdb.DuckDBPyConnection, formats: list[str]) -> list[Row]:
    """One row per statistic found in the source: its value in each store and whether it is within tolerance."""
    src, syn = statistics(source, formats), statistics(synthetic, formats)
    return [Row(name, kind, value, syn.get(name, (kind, 0.0))[1]) for name, (kind, value) in src.items()]
