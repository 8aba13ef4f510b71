"""(b) Verbatim tail after a summary: 24 messages or an eighth of the window, and how often the summary fires.

Seed policy A's tier 2 summarises the old history and keeps a verbatim tail. Compare a tail of 24 messages
(uncapped), a tail capped at an eighth of the window (no message limit), the seed rule (24 messages capped at an
eighth) and no limit at all, over several windows: summaries per 100 requests, prompt tokens right after a
summary, overflow incidents, evicted repeat reads.

    python analyses/verbatim_tail.py --db replay.duckdb --out out/analyses
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import polars as pl
from common import Context, grouped_bars, parser, pct, save_figure, write_table

NAME = "verbatim_tail"
NO_LIMIT = 100_000  # the knob's upper bound: no message limit in practice


def variant(messages: int, fraction: float) -> str:
    if messages < NO_LIMIT and fraction < 1:
        return "24 messages capped at W/8 (seed)"
    if messages < NO_LIMIT:
        return "24 messages"
    return "W/8 of the window" if fraction < 1 else "no limit"


def main(argv: list[str] | None = None) -> pl.DataFrame:
    args = parser(__doc__.splitlines()[0]).parse_args(argv)
    ctx = Context(args)
    agg = ctx.sweep_windows(NAME, {"tail_messages": [24, NO_LIMIT], "tail_fraction": [0.125, 1.0]})
    df = agg.with_columns(
        pl.struct("tail_messages", "tail_fraction")
        .map_elements(lambda s: variant(int(s["tail_messages"]), float(s["tail_fraction"])), return_dtype=pl.Utf8)
        .alias("variant"),
        pct(pl.col("cache_hit_rate")).alias("cache_hit_pct"),
        (pl.col("tokens_after_summary") / 1000).round(1).alias("k_tokens_after_summary"),
    ).sort(["window", "tail_messages", "tail_fraction"])
    table = df.select(
        pl.col("window").cast(pl.Int64),
        "variant",
        "runs",
        "summaries",
        pl.col("summaries_per_100").round(2),
        pl.col("max_summaries_per_100_run").round(1),
        pl.col("tokens_after_summary").round(0),
        "overflow_incidents",
        "runs_with_overflow",
        "repeat_evicted",
        "cache_hit_pct",
        pl.col("cost_usd").round(2),
    )
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.8), layout="constrained")
    grouped_bars(axes[0], df, "summaries_per_100", "summaries per 100 requests (all runs)")
    grouped_bars(
        axes[1],
        df.with_columns(pl.col("k_tokens_after_summary").fill_null(0)),
        "k_tokens_after_summary",
        "prompt right after a summary (k tokens, mean)",
    )
    grouped_bars(axes[2], df, "overflow_incidents", "overflow incidents (requests lost, all runs)")
    axes[0].legend(title="verbatim tail", fontsize=8)
    fig.suptitle(
        f"Seed A verbatim tail after a summary ({df['runs'].max()} runs, real counts "
        f"{ctx.tokenizer_id.split(':')[0]}; summary at 0.615 x window)",
        fontsize=11,
    )
    save_figure(fig, args.out, NAME)
    write_table(
        table,
        args.out,
        NAME,
        "Verbatim tail: 24 messages vs an eighth of the window",
        "tokens_after_summary: mean real prompt tokens on requests where a summary fired (weighted by "
        "summaries); max_summaries_per_100_run: the worst single run. Seed A defaults otherwise.",
    )
    return table


if __name__ == "__main__":
    main()
