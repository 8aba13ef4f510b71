"""(a) Protected recent range: a fixed 12,000 tokens or a third of the window?

Seed policy A never trims its protected recent range. Over several windows, compare the two settings on overflow
incidents, evicted repeat reads (reads of a file whose earlier output the policy had trimmed) and cache hit rate.
Everything else is seed A's defaults, with the summary threshold scaled to the window (80,000 of 130,000).

    python analyses/protected_range.py --db replay.duckdb --out out/analyses
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import polars as pl
from common import Context, grouped_bars, parser, pct, save_figure, write_table

NAME = "protected_range"


def main(argv: list[str] | None = None) -> pl.DataFrame:
    args = parser(__doc__.splitlines()[0]).parse_args(argv)
    ctx = Context(args)
    agg = ctx.sweep_windows(NAME, {"protect": [12_000, 0], "protect_fraction": [0.3333333333]})
    third = pl.col("protect") == 0  # protect 0: the range is protect_fraction of the window
    df = agg.with_columns(
        pl.when(third).then(pl.lit("a third of the window")).otherwise(pl.lit("12,000 tokens")).alias("variant"),
        pl.when(third).then((pl.col("window") / 3).round(0)).otherwise(12_000.0).alias("protected_tokens"),
        pct(pl.col("cache_hit_rate")).alias("cache_hit_pct"),
    ).sort(["window", "protect"], descending=[False, True])
    table = df.select(
        pl.col("window").cast(pl.Int64),
        pl.col("reserve").cast(pl.Int64),
        "variant",
        pl.col("protected_tokens").cast(pl.Int64),
        "runs",
        "overflow_incidents",
        "runs_with_overflow",
        "emergencies",
        "repeat_evicted",
        "repeat_evicted_tokens",
        "cache_hit_pct",
        pl.col("summaries_per_100").round(2),
        pl.col("cost_usd").round(2),
    )
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.6), layout="constrained")
    grouped_bars(axes[0], df, "overflow_incidents", "overflow incidents (requests lost, all runs)")
    grouped_bars(axes[1], df, "repeat_evicted", "evicted repeat reads (count, all runs)")
    grouped_bars(axes[2], df, "cache_hit_pct", "cache hit rate (% of prompt tokens)")
    axes[0].legend(title="protected recent range", fontsize=8)
    fig.suptitle(
        f"Seed A protected range: 12,000 tokens vs a third of the window ({df['runs'].max()} runs, "
        f"real counts {ctx.tokenizer_id.split(':')[0]})",
        fontsize=11,
    )
    save_figure(fig, args.out, NAME)
    write_table(
        table,
        args.out,
        NAME,
        "Protected range: 12,000 tokens vs a third of the window",
        "Seed A defaults otherwise; summary threshold 0.615 x window; reserve per window as listed. "
        "Overflow is judged with real token counts; the policy decides with chars/4.",
    )
    return table


if __name__ == "__main__":
    main()
