"""Shared by the analyses: arguments, token counts, one seed-A sweep per window, tables (CSV + markdown), figures.

Each analysis is `python analyses/<name>.py --db STORE --out DIR`; the store must hold ingested runs and is
written to (sweep results, token counts), so a rerun reuses finished sweep points.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # running from a checkout without the package installed
    sys.path.insert(0, str(ROOT))

from replay.sweeps import from_dict, run_sweep  # noqa: E402
from replay.sweeps.results import sweep_frame  # noqa: E402
from replay.sweeps.runner import load_sweep_runs  # noqa: E402
from replay.sweeps.select import aggregate_points  # noqa: E402

# Windows and reply reserves of the write-ups: a 32k model, a 64k model, the seed 130,000/24,576 case, 200k.
WINDOWS = (32_768, 65_536, 130_000, 200_000)
RESERVES = {32_768: 4_096, 65_536: 8_192, 130_000: 24_576, 200_000: 32_000}
SEED_WINDOW, SEED_SUMMARY_AT = 130_000, 80_000


def reserve_for(window: int) -> int:
    return RESERVES.get(window, window // 8)


def summary_at_for(window: int) -> int:
    """Seed A's summary threshold scaled to the window (80,000 of 130,000), so tier 2 can fire in small windows."""
    return int(round(window * SEED_SUMMARY_AT / SEED_WINDOW / 100) * 100)


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--db", type=Path, required=True, help="DuckDB store with ingested runs (written: sweeps, counts)")
    p.add_argument("--out", type=Path, required=True, help="output folder (figure PNG+SVG, table CSV+markdown)")
    p.add_argument("--tokenizer", default="tekken", help="real tokenizer for the counts (built-in name or path)")
    p.add_argument(
        "--tokenizer-id",
        default=None,
        help="use the counts already stored under this tokenizer id (skips loading the tokenizer)",
    )
    p.add_argument("--windows", default=",".join(map(str, WINDOWS)), help="comma-separated context windows")
    p.add_argument("--runs", default=None, help="LIKE pattern on run id or source path")
    p.add_argument("--executor", default="local", help="serial, local (process pool) or ray")
    p.add_argument("--workers", type=int, default=0, help="worker processes (0 = all cores)")
    return p


class Context:
    """The open store, the tokenizer id whose counts the sweeps use, the loaded runs."""

    def __init__(self, args: argparse.Namespace) -> None:
        from replay.store import open_store
        from replay.tokens import count_items, load_tokenizer

        self.args = args
        self.sweeps: dict[int, str] = {}
        self.windows = [int(w) for w in str(args.windows).split(",") if w.strip()]
        self.con = open_store(args.db)
        if args.tokenizer_id:
            have = self.con.execute(
                "SELECT count(*) FROM token_counts WHERE tokenizer_id = ?", [args.tokenizer_id]
            ).fetchone()[0]
            if not have:
                raise SystemExit(
                    f"{args.db}: no token counts for {args.tokenizer_id!r}; run `replay tokens -t NAME "
                    f"--db {args.db}` or pass --tokenizer instead"
                )
            self.tokenizer_id = args.tokenizer_id
        else:
            tok = load_tokenizer(args.tokenizer)
            count_items(self.con, tok)
            self.tokenizer_id = tok.tokenizer_id
        self.runs = load_sweep_runs(self.con, self.spec("probe", {"window": 1000}, {}))
        args.out.mkdir(parents=True, exist_ok=True)

    def spec(self, name: str, fixed: dict[str, Any], grid: dict[str, list[Any]]):
        return from_dict(
            {
                "sweep": {
                    "policy": "seed_a",
                    "name": f"analysis-{name}",
                    "runs": self.args.runs or "",
                    "tokenizer": self.tokenizer_id,
                    "batch": 8,
                },
                "fixed": fixed,
                "grid": grid,
            },
            where=name,
        )

    def sweep_windows(
        self,
        name: str,
        grid: dict[str, list[Any]] | Callable[[int], dict[str, list[Any]]],
        fixed: Callable[[int], dict[str, Any]] = lambda w: {},
    ) -> pl.DataFrame:
        """One sweep per window (seed A, reserve and summary threshold scaled), aggregated per point over runs.

        ``grid`` may depend on the window; ``self.sweeps[window]`` keeps each sweep id (for per-run frames)."""
        frames = []
        for w in self.windows:
            base = {"window": w, "reserve": reserve_for(w), "summary_at": summary_at_for(w)}
            spec = self.spec(name, {**base, **fixed(w)}, grid(w) if callable(grid) else grid)
            self.sweeps[w] = spec.sweep_id
            run_sweep(
                self.con, spec, executor=self.args.executor, workers=self.args.workers, progress=False, runs=self.runs
            )
            frame = sweep_frame(self.con, spec.sweep_id)
            agg = aggregate_points(frame)
            if agg["errors"].sum():
                print(
                    f"warning: {name} window {w}: {agg['errors'].sum()} run simulations failed; see sweep_results "
                    f"where sweep_id = '{spec.sweep_id}'",
                    file=sys.stderr,
                )
            frames.append(agg.join(extra_aggregates(frame), on="point_id", how="left"))
        return pl.concat(frames, how="diagonal_relaxed").sort("window")


def extra_aggregates(frame: pl.DataFrame) -> pl.DataFrame:
    """Per point: summary cadence (tokens right after a summary, weighted by summaries) and the worst run."""
    ok = frame.filter(pl.col("error").is_null())
    if "tokens_after_summary" not in ok.columns:  # no run summarised (sweep_frame drops all-null columns)
        ok = ok.with_columns(pl.lit(None, dtype=pl.Float64).alias("tokens_after_summary"))
    weighted = (pl.col("tokens_after_summary").fill_null(0) * pl.col("summaries")).sum()
    tas = pl.when(pl.col("summaries").sum() > 0).then(weighted / pl.col("summaries").sum()).otherwise(None)
    return ok.group_by("point_id").agg(
        tas.alias("tokens_after_summary"), pl.col("summaries_per_100").max().alias("max_summaries_per_100_run")
    )


def markdown(df: pl.DataFrame) -> str:
    def cell(v: Any) -> str:
        if v is None:
            return ""
        if isinstance(v, float):
            return f"{v:,.0f}" if v.is_integer() and abs(v) >= 1000 else f"{v:,.4g}"
        return f"{v:,}" if isinstance(v, int) else str(v)

    rows = ["| " + " | ".join(df.columns) + " |", "|" + "---|" * len(df.columns)]
    rows += ["| " + " | ".join(cell(v) for v in r) + " |" for r in df.iter_rows()]
    return "\n".join(rows) + "\n"


def write_table(df: pl.DataFrame, out: Path, name: str, title: str, notes: str = "") -> list[Path]:
    """``name``.csv and ``name``.md (a title, the table, notes); prints the markdown."""
    csv, md = out / f"{name}.csv", out / f"{name}.md"
    df.write_csv(csv)
    text = f"# {title}\n\n{markdown(df)}" + (f"\n{notes.strip()}\n" if notes else "")
    md.write_text(text, encoding="utf-8")
    print(text)
    return [csv, md]


def save_figure(fig: plt.Figure, out: Path, name: str) -> list[Path]:
    """``name``.png and ``name``.svg under ``out``, as every replay chart is saved (replay.reports.plots.save)."""
    from replay.reports.plots import save

    return save(fig.axes[0], out, name)


def k(window: int) -> str:
    """130000 -> '130k', 32768 -> '32k' (for labels)."""
    return f"{window // 1000}k"


def pct(x: pl.Expr) -> pl.Expr:
    return (100 * x).round(2)


def grouped_bars(
    ax: plt.Axes, df: pl.DataFrame, y: str, ylabel: str, group: str = "variant", x: str = "window"
) -> None:
    """Bars of ``y`` per window, one colour per ``group`` value, values written on top."""
    xs = sorted(df[x].unique().to_list())
    groups = df[group].unique(maintain_order=True).to_list()
    width = 0.8 / max(len(groups), 1)
    for i, g in enumerate(groups):
        sub = df.filter(pl.col(group) == g)
        vals = [sub.filter(pl.col(x) == v)[y].sum() for v in xs]
        pos = [j + (i - (len(groups) - 1) / 2) * width for j in range(len(xs))]
        bars = ax.bar(pos, vals, width, label=str(g), color=f"C{i}")
        crowded = len(groups) > 3
        ax.bar_label(
            bars,
            labels=[f"{v:,.3g}" for v in vals],
            fontsize=6 if crowded else 7,
            padding=1,
            rotation=90 if crowded else 0,
        )
    ax.set_xticks(range(len(xs)), [f"{k(int(v))}" for v in xs])
    ax.set(xlabel="context window (tokens)", ylabel=ylabel)
    ax.margins(y=0.12)
    ax.grid(axis="y", alpha=0.3)
