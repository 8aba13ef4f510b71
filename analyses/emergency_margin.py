"""(c) Emergency margin 10% or 20% under the measured estimator error.

Seed policy A checks before every request whether estimate / (1 - margin) + reply reserve exceeds the window (a
margin m covers an estimate short by up to m of the real size), and trims if so. The policy decides with chars/4;
overflow is judged with the real token count (a real tokenizer's counts from the store). Over several windows,
overflow incidents for margins 0, 10%, 20% and 30%, next to the same policy deciding with the real count (no
estimator error), and the measured error: per run, real prompt tokens over the chars/4 estimate the policy used.

    python analyses/emergency_margin.py --db replay.duckdb --out out/analyses
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import polars as pl
from common import Context, k, parser, pct, save_figure, summary_at_for, write_table

from replay.sweeps.results import sweep_frame

NAME = "emergency_margin"
MARGINS = [0.0, 0.1, 0.2, 0.3]


def estimator_error(ctx: Context, window: int) -> pl.DataFrame:
    """Per run: real prompt tokens / the chars/4 estimate the policy used, summed over its requests (seed setting:
    tier 2 at 0.615 x window, margin 20%)."""
    frame = sweep_frame(ctx.con, ctx.sweeps[window]).filter(
        pl.col("error").is_null()
        & (pl.col("param_estimator") == "chars/4")
        & (pl.col("param_margin") == 0.2)
        & (pl.col("param_summary_at") == summary_at_for(window))
    )
    return frame.select(
        "run_id",
        "requests",
        pl.col("prompt_tokens").alias("real"),
        pl.col("est_tokens").alias("est"),
        (pl.col("prompt_tokens") / pl.col("est_tokens")).alias("real_over_est"),
    )


def main(argv: list[str] | None = None) -> pl.DataFrame:
    args = parser(__doc__.splitlines()[0]).parse_args(argv)
    ctx = Context(args)
    agg = ctx.sweep_windows(
        NAME, lambda w: {"margin": MARGINS, "estimator": ["chars/4", "real"], "summary_at": [summary_at_for(w), w]}
    )
    df = agg.with_columns(
        pct(pl.col("cache_hit_rate")).alias("cache_hit_pct"),
        pl.when(pl.col("summary_at") >= pl.col("window"))
        .then(pl.lit("off (emergency only)"))
        .otherwise(pl.lit("at 0.615 x window"))
        .alias("tier2"),
    ).sort(["window", "tier2", "estimator", "margin"])
    err = estimator_error(ctx, max(ctx.windows))
    q = err["real_over_est"]
    error_line = (
        f"Measured estimator error over {err.height} runs (real prompt tokens / chars/4 estimate, summed per "
        f"run): median {q.median():.3f}, p90 {q.quantile(0.9):.3f}, max {q.max():.3f}; runs where chars/4 "
        f"under-counts the real size by more than 10%: {(q > 1 / 0.9).sum()}, by more than 20%: "
        f"{(q > 1 / 0.8).sum()}."
    )
    table = df.select(
        pl.col("window").cast(pl.Int64),
        pl.col("reserve").cast(pl.Int64),
        "tier2",
        "estimator",
        (100 * pl.col("margin")).round(0).cast(pl.Int64).alias("margin_pct"),
        "runs",
        "overflow_incidents",
        "runs_with_overflow",
        "emergencies",
        "near_misses",
        "repeat_evicted",
        "cache_hit_pct",
        pl.col("cost_usd").round(2),
    )
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.8), layout="constrained")
    for ax, tier2 in zip(axes[:2], ("at 0.615 x window", "off (emergency only)"), strict=True):
        for i, win in enumerate(ctx.windows):
            for est, style in (("chars/4", "-o"), ("real", ":s")):
                sub = df.filter(
                    (pl.col("window") == win) & (pl.col("estimator") == est) & (pl.col("tier2") == tier2)
                ).sort("margin")
                ax.plot(
                    100 * sub["margin"],
                    sub["overflow_incidents"],
                    style,
                    color=f"C{i}",
                    label=f"{k(win)}, decides with {est}",
                )
        ax.set(
            xlabel="emergency margin on the estimate (%)",
            ylabel="overflow incidents (requests lost, all runs)",
            title=f"tier-2 summary {tier2}",
        )
        ax.set_xticks([100 * m for m in MARGINS])
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, ncols=2)
    right = axes[2]
    right.hist(q.to_numpy(), bins=20, color="C0", edgecolor="white", label="runs")
    for m, c in ((0.1, "C1"), (0.2, "C3")):
        right.axvline(1 / (1 - m), color=c, ls="--", label=f"covered by a {round(100 * m)}% margin")
    right.set(
        xlabel="real prompt tokens / chars/4 estimate (per run)",
        ylabel="runs",
        title=f"Measured estimator error ({ctx.tokenizer_id.split(':')[0]})",
    )
    right.legend(fontsize=8)
    right.grid(alpha=0.3)
    fig.suptitle(
        f"Seed A emergency margin: 10% vs 20% under the measured chars/4 error ({df['runs'].max()} runs; "
        "the policy decides with its estimator, overflow is judged with real counts)",
        fontsize=11,
    )
    save_figure(fig, args.out, NAME)
    err.sort("real_over_est", descending=True).write_csv(args.out / f"{NAME}_estimator_error.csv")
    write_table(
        table,
        args.out,
        NAME,
        "Emergency margin under the measured estimator error",
        error_line + " Overflow: real prompt + reserve > window. estimator = real is the same policy "
        "deciding with the true count (the error removed). tier2 off: summary threshold = window, so only "
        "the emergency check guards the limit.",
    )
    return table


if __name__ == "__main__":
    main()
