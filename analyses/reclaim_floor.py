"""(d) Cache-reclaim floor against cache hit rate.

Seed policy A commits a tier-1 trimming pass only if it reclaims at least a floor (a fraction of the window,
seed: an eighth); otherwise it undoes the pass, so the cached prefix survives. Sweep the floor over several
windows: cache hit rate (cached / prompt tokens), cost, evicted repeat reads and overflow incidents.

    python analyses/reclaim_floor.py --db replay.duckdb --out out/analyses
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import polars as pl
from common import Context, k, parser, pct, save_figure, write_table

NAME = "reclaim_floor"
FLOORS = [0.0, 0.03125, 0.0625, 0.125, 0.25]


def main(argv: list[str] | None = None) -> pl.DataFrame:
    args = parser(__doc__.splitlines()[0]).parse_args(argv)
    ctx = Context(args)
    df = (
        ctx.sweep_windows(NAME, {"reclaim_floor": FLOORS})
        .with_columns(pct(pl.col("cache_hit_rate")).alias("cache_hit_pct"))
        .sort(["window", "reclaim_floor"])
    )
    table = df.select(
        pl.col("window").cast(pl.Int64),
        pl.col("reclaim_floor").round(4),
        "runs",
        "cache_hit_pct",
        pl.col("cost_usd").round(2),
        "prompt_tokens",
        "cached_tokens",
        "written_tokens",
        "repeat_evicted",
        "overflow_incidents",
        "emergencies",
        pl.col("summaries_per_100").round(2),
    )
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.6), layout="constrained")
    panels = (
        ("cache_hit_pct", "cache hit rate (% of prompt tokens)"),
        ("cost_usd", "cost over the corpus (USD)"),
        ("repeat_evicted", "evicted repeat reads (count, all runs)"),
    )
    for ax, (col, label) in zip(axes, panels, strict=True):
        for i, win in enumerate(ctx.windows):
            sub = df.filter(pl.col("window") == win)
            ax.plot(100 * sub["reclaim_floor"], sub[col], "-o", color=f"C{i}", label=f"window {k(win)}")
        ax.axvline(12.5, color="grey", ls=":", lw=1, label="seed: an eighth")
        ax.set(xlabel="reclaim floor (% of the window a tier-1 pass must free)", ylabel=label)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(
        f"Seed A cache-reclaim floor vs cache hit rate ({df['runs'].max()} runs, real counts "
        f"{ctx.tokenizer_id.split(':')[0]}, Anthropic cache model)",
        fontsize=11,
    )
    save_figure(fig, args.out, NAME)
    write_table(
        table,
        args.out,
        NAME,
        "Cache-reclaim floor vs cache hit rate",
        "Seed A defaults otherwise (summary threshold 0.615 x window). A floor of 0 commits every "
        "tier-1 pass that frees anything, rewriting the prefix (and invalidating the cache after it) often.",
    )
    return table


if __name__ == "__main__":
    main()
