"""What a sum of cost covers: how many runs are priced, which models are not, and how to price them.

A run whose model has no price has an unknown cost, never 0; a sum of cost is over the priced runs only, and every
table, chart and report that shows one says so with :func:`CostCover.label` and :func:`CostCover.lines`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import polars as pl

PRICE_HOW = "price them with --prices FILE or --price input=USD --price output=USD (per million tokens)"
NO_MODEL = "no model named"


@dataclass(frozen=True)
class CostCover:
    """Runs counted, runs priced, and the unpriced runs per model (label -> runs)."""

    total: int
    priced: int
    unpriced: dict[str, int] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return self.priced == self.total

    def label(self) -> str:
        """Short, for a chart axis or a column title: ``all 106 runs`` or ``88 of 106 runs priced``."""
        if self.complete:
            return f"all {self.total:,} runs"
        return f"{self.priced:,} of {self.total:,} runs priced"

    def lines(self, how: str = PRICE_HOW) -> list[str]:
        """Nothing when every run is priced; else what the cost covers, the unpriced models, and ``how`` to price
        them."""
        if self.complete:
            return []
        models = ", ".join(f"{m} ({n})" for m, n in sorted(self.unpriced.items(), key=lambda kv: (-kv[1], kv[0])))
        return [f"cost covers {self.priced:,} of {self.total:,} runs; no price for the runs of {models}: {how}"]


def _unknown(cost: object) -> bool:
    return cost is None or (isinstance(cost, float) and math.isnan(cost))


def cover_of(runs: Iterable[tuple[str | None, object]]) -> CostCover:
    """From (model, cost) per run: a cost that is None or NaN is unpriced."""
    total, missing = 0, Counter[str]()
    for model, cost in runs:
        total += 1
        if _unknown(cost):
            missing[model or NO_MODEL] += 1
    return CostCover(total, total - sum(missing.values()), dict(missing))


def cover_of_frame(df: pl.DataFrame, cost: str = "cost_usd", model: str = "model") -> CostCover:
    """:func:`cover_of` over a frame with one row per run (``model`` may be absent: the runs are then unnamed)."""
    models = df[model].to_list() if model in df.columns else [None] * df.height
    return cover_of(zip(models, df[cost].to_list(), strict=True))


def unknown_cost(cost: str = "cost_usd") -> pl.Expr:
    """True for a row whose cost is unknown (null or NaN)."""
    return pl.col(cost).is_null() | pl.col(cost).cast(pl.Float64).is_nan()


def cover_of_rows(df: pl.DataFrame) -> CostCover:
    """From rows of (run_id, model, cost_usd), several per run (a sweep's points): a run is priced when its cost
    is known in every row."""
    if "cost_usd" not in df.columns or not df.height:
        return CostCover(0, 0)
    model = pl.col("model").first() if "model" in df.columns else pl.lit(None, pl.String)
    runs = df.group_by("run_id").agg(model.alias("model"), unknown_cost().any().alias("unknown"))
    return cover_of((m, None if u else 0.0) for m, u in runs.select("model", "unknown").iter_rows())
