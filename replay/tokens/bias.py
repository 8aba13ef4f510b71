"""Estimator bias against real counts, by content kind (code, JSON, prose, CJK) and part (tool args vs results).

Images are their own kind: the log holds a placeholder (``[image image/png]``), so the real count is the
placeholder's while an image-aware estimator prices the image; that row is shown with no bias. (Before this
kind existed, the placeholders' brackets made them "JSON", and the flat 1,600-token image cost showed up as a
+86% to +222% cjk_chars4 bias on "JSON text" that had nothing to do with CJK.)
"""

from __future__ import annotations

import duckdb
import polars as pl

from replay.store import frame
from replay.tokens.counting import PAYLOAD_SQL
from replay.tokens.estimators import CJK, IMAGE_PREFIXES, Estimator

CODE_LINE = (
    r"(?m)^(\s{2,}\S|\s*(def|class|import|from|return|if|for|while|function|const|let|var|fn|pub|#include)\b"
    r"|.*[;{}]\s*$)"
)


# An object with a quoted key, or an array of values: not any bracketed text ("[image]", "[Request interrupted]").
JSON_START = r'^\s*(\{\s*("|\})|\[\s*([\[\{"\]\d-]|true|false|null))'


def classify(texts: pl.Series, kinds: pl.Series | None = None) -> pl.Series:
    """image, cjk, json, code or prose for each text (cheap heuristics, vectorised)."""
    s = texts.fill_null("")
    chars = s.str.len_chars().clip(1)
    stripped = s.str.strip_chars()
    lines = s.str.count_matches("\n") + 1
    image = s.str.starts_with(IMAGE_PREFIXES[0]) | s.str.starts_with(IMAGE_PREFIXES[1])
    if kinds is not None:
        image = image | (kinds == "image").fill_null(False)
    df = pl.DataFrame(
        {
            "image": image,
            "cjk": s.str.count_matches(CJK) / chars,
            "json": stripped.str.contains(JSON_START) & (stripped.str.ends_with("}") | stripped.str.ends_with("]")),
            "code": s.str.count_matches(CODE_LINE) / lines,
        }
    )
    return df.select(
        pl.when(pl.col("image"))
        .then(pl.lit("image"))
        .when(pl.col("cjk") > 0.1)
        .then(pl.lit("cjk"))
        .when(pl.col("json"))
        .then(pl.lit("json"))
        .when(pl.col("code") > 0.3)
        .then(pl.lit("code"))
        .otherwise(pl.lit("prose"))
        .alias("content")
    ).to_series()


def estimator_bias(con: duckdb.DuckDBPyConnection, tokenizer_id: str, estimators: list[Estimator]) -> pl.DataFrame:
    """Per estimator, content kind and part: est/real - 1 over distinct counted payloads (tool args apart)."""
    items = frame(
        con,
        f"""
        SELECT i.content_hash, any_value(i.kind) AS kind, any_value({PAYLOAD_SQL}) AS payload,
               any_value(coalesce(i.args, i.text)) AS body, any_value(t.n_tokens) AS n_tokens
        FROM items i JOIN token_counts t ON t.content_hash = i.content_hash AND t.tokenizer_id = ?
        WHERE t.n_tokens > 0 GROUP BY i.content_hash""",
        [tokenizer_id],
    )
    if items.is_empty():
        return pl.DataFrame()
    part = (
        pl.when(pl.col("kind") == "tool_call")
        .then(pl.lit("tool_args"))
        .when(pl.col("kind") == "tool_result")
        .then(pl.lit("tool_result"))
        .otherwise(pl.lit("text"))
    )
    items = items.with_columns(part.alias("part"), classify(items["body"], items["kind"]).alias("content"))
    texts, kinds = items["payload"].to_list(), items["kind"].to_list()
    frames = [
        items.select("part", "content", "n_tokens", pl.col("payload").str.len_chars().alias("chars")).with_columns(
            pl.lit(e.name).alias("estimator"), pl.Series("est", _estimate(e, texts, kinds))
        )
        for e in estimators
    ]
    return (
        pl.concat(frames)
        .group_by("estimator", "part", "content")
        .agg(
            pl.len().alias("items"),
            pl.col("chars").sum(),
            pl.col("n_tokens").sum().alias("real_tokens"),
            pl.col("est").sum().alias("est_tokens"),
        )
        .with_columns(
            pl.when(pl.col("content") != "image").then(pl.col("est_tokens") / pl.col("real_tokens") - 1).alias("bias")
        )
        .sort("estimator", "part", "content")
    )


def _estimate(e: Estimator, texts: list[str], kinds: list[str | None]) -> list[int]:
    """Estimates, passing item kinds to estimators that price by kind (an image item is an image)."""
    if hasattr(e, "estimate_kind"):
        return e.estimate_many(texts, kinds)  # type: ignore[call-arg]  # estimate_kind: it takes kinds (CJKChars4)
    return e.estimate_many(texts)
