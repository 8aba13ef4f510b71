"""Pareto fronts over several objectives, each minimised or maximised; pure functions on polars frames."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from replay.errors import ReplayError

Objective = tuple[str, str]  # (column, "min" | "max")


def _matrix(df: pl.DataFrame, objectives: Sequence[Objective]) -> np.ndarray:
    """Objective values as a float matrix where lower is better everywhere; nulls and NaN count as worst."""
    cols = []
    for name, sense in objectives:
        if name not in df.columns:
            raise ReplayError(f"pareto: no column {name!r}; columns are {', '.join(df.columns)}")
        if sense not in ("min", "max"):
            raise ReplayError(f"pareto: objective {name!r} has sense {sense!r}; use 'min' or 'max'")
        v = df[name].cast(pl.Float64).fill_null(np.nan).to_numpy().astype(float)
        v = v if sense == "min" else -v
        cols.append(np.where(np.isnan(v), np.inf, v))
    return np.column_stack(cols) if cols else np.zeros((df.height, 0))


def non_dominated(df: pl.DataFrame, objectives: Sequence[Objective]) -> np.ndarray:
    """Boolean mask: True where no other row is at least as good on every objective and better on one.

    Rows with identical objective values do not dominate each other, so ties are all kept."""
    x = _matrix(df, objectives)
    n = len(x)
    keep = np.ones(n, dtype=bool)
    if n == 0 or x.shape[1] == 0:
        return keep
    for i in range(n):
        no_worse = (x <= x[i]).all(axis=1)
        better = (x < x[i]).any(axis=1)
        keep[i] = not (no_worse & better).any()
    return keep


def pareto_front(df: pl.DataFrame, objectives: Sequence[Objective], column: str = "on_front") -> pl.DataFrame:
    """``df`` with a boolean ``column`` marking its non-dominated rows."""
    return df.with_columns(pl.Series(column, non_dominated(df, objectives), dtype=pl.Boolean))
