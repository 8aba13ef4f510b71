"""Renderers: each takes a frame from replay.reports.extract and returns the matplotlib Axes it drew on."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path
from typing import cast

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import polars as pl  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from replay.untrusted import for_chart  # noqa: E402


def _axes(ax: Axes | None, size: tuple[float, float] = (8, 4.5)) -> Axes:
    return ax if ax is not None else plt.figure(figsize=size, layout="constrained").add_subplot()


def token_label(token_source: str) -> str:
    """'real count, tekken_240911' for a real tokenizer's counts (arrays' token_source 'real:ID'), 'partly
    estimated, ...' for 'mixed:ID+chars/4', 'estimate, chars/4' otherwise."""
    kind, _, name = (token_source or "").partition(":")
    if kind == "real" and name:
        return f"real count, {name.split(':')[0]}"
    if kind == "mixed" and name:
        return f"partly estimated, {name.split(':')[0]} + chars/4"
    return f"estimate, {name or 'chars/4'}"


def prompt_over_run(
    series: pl.DataFrame,
    window: int,
    reserve: int = 0,
    threshold: int | None = None,
    run_id: str = "",
    ax: Axes | None = None,
    token_source: str = "",
) -> Axes:
    """Prompt tokens per request, one line per policy; window, usable limit, summary threshold and summaries marked.
    The y label says whether the tokens are a real count (and which tokenizer) or an estimate."""
    ax = _axes(ax)
    for i, (label,) in enumerate(series.select("policy").unique(maintain_order=True).iter_rows()):
        df = series.filter(pl.col("policy") == label)
        line = ax.plot(df["k"], df["prompt_tokens"], label=label, lw=1.4, color=f"C{i}")[0]
        s = df.filter(pl.col("summarised"))
        if s.height:
            ax.scatter(
                s["k"], s["prompt_tokens"], marker="v", color=line.get_color(), zorder=3, label=f"{label}: summary"
            )
    ax.axhline(window, color="black", lw=1, label=f"window {window:,}")
    if reserve:
        ax.axhline(window - reserve, color="black", ls="--", lw=1, label=f"window - reply reserve {window - reserve:,}")
    if threshold:
        ax.axhline(
            threshold,
            color="grey",
            ls=":",
            lw=1.2,
            label=f"summary threshold {threshold:,} (on the policy's own estimate)",
        )
    ax.set(
        title=f"Prompt tokens over a run{': ' + for_chart(run_id) if run_id else ''}",
        xlabel="request number",
        ylabel=f"prompt tokens ({token_label(token_source)})",
    )
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v / 1000:,.0f}k"))
    ax.legend(fontsize=8, loc="upper left")
    return ax


def run_page_chart(
    series: list[tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
    window: int,
    reserve: int,
    token_source: str,
) -> Axes:
    """The run page's chart: prompt tokens per request, one line per policy (name, prompt per request, and per
    request whether it summarised, rewrote or overflowed); summaries as triangles, rewrites as ticks, overflows as
    red crosses; the window and window - reserve dashed."""
    ax = _axes(None, (10, 3.8))
    for i, (name, prompt, summarised, rewritten, overflow) in enumerate(series):
        color = f"C{i}"
        k = np.arange(len(prompt))
        ax.plot(k, prompt, color=color, lw=1.4, label=for_chart(name), gid=f"series-{i}")
        marks = (
            (summarised, "^", color, "summary"),
            (rewritten & ~summarised, "|", color, "rewrite"),
            (overflow, "x", "#d00", "overflow"),
        )
        for on, marker, c, what in marks:
            if on.any():
                ax.scatter(k[on], prompt[on], marker=marker, color=c, s=30, zorder=3, gid=f"{what}-{i}")
    ax.axhline(window, color="#888", ls="--", lw=1, label=f"window {window:,}")
    if reserve:
        ax.axhline(window - reserve, color="#888", ls=":", lw=1, label=f"window - reserve {window - reserve:,}")
    ax.set(xlabel="request", ylabel=f"prompt tokens ({token_label(token_source)})")
    ax.set_xlim(-0.5, max(len(s[1]) for s in series) - 0.5)
    ax.set_ylim(0, None)
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v / 1000:,.0f}k"))
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    return ax


def inline_svg(ax: Axes) -> tuple[str, tuple[float, float, float, float]]:
    """The Axes' figure as an ``<svg>`` element to put in a page (no XML prolog), and where its x axis lies: the
    SVG x of the axis' left and right ends and the data values there, so a script can map a click to data."""
    fig = cast(Figure, ax.figure)
    fig.set_dpi(72)  # matplotlib's SVG is in points: at 72 dpi display pixels are SVG units
    fig.canvas.draw()
    lo, hi = ax.get_xlim()
    x0 = float(ax.transData.transform((lo, 0))[0])
    x1 = float(ax.transData.transform((hi, 0))[0])
    buf = io.StringIO()
    fig.savefig(buf, format="svg")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :], (x0, x1, float(lo), float(hi))


def curve(
    df: pl.DataFrame,
    x: str,
    y: str,
    title: str,
    xlabel: str,
    ylabel: str,
    marks: dict[str, float] | None = None,
    ax: Axes | None = None,
    percent: bool = False,
) -> Axes:
    """One swept parameter against one metric, with named reference values marked."""
    ax = _axes(ax)
    yv = df[y].to_numpy() * (100 if percent else 1)
    ax.plot(df[x], yv, marker="o", lw=1.6, label=ylabel)
    for i, (name, value) in enumerate((marks or {}).items()):
        ax.axvline(value, color=f"C{i + 1}", ls="--", lw=1, label=name)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel + (" (%)" if percent else ""))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return ax


def composition_area(comp: pl.DataFrame, policy: str, ax: Axes | None = None) -> Axes:
    """Stacked tokens by item kind per request."""
    ax = _axes(ax)
    wide = comp.pivot(on="kind", index="k", values="tokens").sort("k")
    kinds = [c for c in wide.columns if c != "k"]
    ax.stackplot(wide["k"], *[wide[k].to_numpy() for k in kinds], labels=kinds, alpha=0.85)
    ax.set(title=f"Window composition by kind under {policy}", xlabel="request number", ylabel="prompt tokens")
    ax.legend(fontsize=8, loc="upper left", ncols=2)
    return ax


def repeat_histogram(reads: pl.DataFrame, ax: Axes | None = None) -> Axes:
    """How many (run, resource) pairs were read n times."""
    ax = _axes(ax)
    counts = reads["reads"].to_numpy()
    bins = np.arange(1, max(int(counts.max()) if len(counts) else 1, 1) + 2) - 0.5
    ax.hist(counts, bins=bins.tolist(), color="C0", edgecolor="white", label="resources (per run)")
    if len(counts):
        top = reads.row(0, named=True)
        ax.annotate(
            f"max {top['reads']} reads: {str(top['resource'])[-40:]}",
            xy=(top["reads"], 1),
            xytext=(0.45, 0.8),
            textcoords="axes fraction",
            fontsize=8,
            arrowprops={"arrowstyle": "->"},
        )
    ax.set(
        title="Repeat reads: reads per resource in a run",
        xlabel="reads of one resource in one run",
        ylabel="number of (run, resource) pairs",
        yscale="log",
    )
    ax.legend(fontsize=8)
    return ax


def knob_text(row: dict, knobs: list[str]) -> str:
    """'protect=12k, summary_at=80k': each label names its knob; token counts in k, fractions as is."""
    parts = []
    for k in knobs:
        v = row[k]
        if isinstance(v, float) and abs(v) <= 1:
            parts.append(f"{k}={v:.3g}")
        elif isinstance(v, (int, float)) and abs(v) >= 1000:
            parts.append(f"{k}={v / 1000:,.3g}k")
        else:
            parts.append(f"{k}={v}")
    return ", ".join(parts)


def pareto(
    points: pl.DataFrame,
    x: str,
    y: str,
    mask: np.ndarray,
    xlabel: str,
    ylabel: str,
    label_param: str | list[str] | None = None,
    ax: Axes | None = None,
) -> Axes:
    """All points, the non-dominated ones joined as the front; each front point labelled knob=value for the
    swept knob(s) ``label_param``."""
    ax = _axes(ax)
    ax.scatter(points[x], points[y], color="lightgrey", edgecolor="grey", label="sweep points")
    front = points.filter(pl.Series(mask)).sort(x)
    knobs = [label_param] if isinstance(label_param, str) else list(label_param or [])
    knobs = [k for k in knobs if k in front.columns]
    ax.plot(
        front[x],
        front[y],
        "o-",
        color="C3",
        label=f"Pareto front (labels: {', '.join(knobs)})" if knobs else "Pareto front",
    )
    if knobs:  # points that tie on both axes share one label: each knob's values joined by "/"
        for (px, py), grp in front.group_by([x, y], maintain_order=True):
            rows = list(grp.iter_rows(named=True))
            parts = []
            for k in knobs:
                values = dict.fromkeys(knob_text(r, [k]).split("=", 1)[1] for r in rows)
                parts.append(f"{k}={'/'.join(values)}")
            ax.annotate(", ".join(parts), (px, py), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.set(title=f"Pareto front: {ylabel} vs {xlabel}", xlabel=xlabel, ylabel=ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return ax


TITLE_CHARS = 110  # characters per line of a 12-inch chart's title at 11 pt


def tune_front(
    points: pl.DataFrame,
    recommended: dict,
    title: str,
    defaults: dict | None = None,
    zero_overflow: bool = True,
    knobs: list[str] | None = None,
    cost_label: str = "all runs",
) -> Axes:
    """`replay tune`'s chart: two views of the four objectives; overflowing, feasible and front points told apart,
    the recommended point starred and the policy's defaults marked. Returns the left Axes (save() takes it)."""
    banded = "pressured_share" in points.columns and bool(knobs)
    fig, axes = plt.subplots(1, 3 if banded else 2, figsize=(18 if banded else 12, 5.2), layout="constrained")
    left, right = axes[0], axes[1]
    if banded:
        behaviour_band(points, knobs or [], axes[2])
    views = (
        (left, "cost_usd", "cache_hit_rate", f"cost (USD, {cost_label})", "cache hit rate (% of prompt tokens)"),
        (
            right,
            "summaries_per_100",
            "repeat_evicted",
            "summaries per 100 requests",
            "evicted repeat reads (count over the corpus)",
        ),
    )
    feasible = points["feasible"] if "feasible" in points.columns else pl.Series([True] * points.height)
    on_front = points["on_front"] if "on_front" in points.columns else pl.Series([False] * points.height)
    groups = (
        (
            points.filter(~feasible),
            dict(marker="x", color="#d62728", alpha=0.45, s=22),
            "overflows (excluded)" if zero_overflow else "more overflow than the best (excluded)",
        ),
        (
            points.filter(feasible & ~on_front),
            dict(marker="o", color="lightgrey", edgecolor="grey", s=26),
            "zero overflow" if zero_overflow else "fewest overflow",
        ),
        (points.filter(on_front), dict(marker="o", color="C0", edgecolor="black", s=40), "Pareto front"),
    )
    for ax, x, y, xlabel, ylabel in views:
        scale = 100 if y == "cache_hit_rate" else 1
        for df, style, label in groups:
            if df.height:
                ax.scatter(df[x], df[y] * scale, label=f"{label} ({df.height})", zorder=2, **style)
        if defaults:
            ax.scatter(
                [defaults[x]],
                [defaults[y] * scale],
                marker="D",
                color="black",
                s=50,
                zorder=3,
                label=f"policy defaults ({int(defaults['overflow_incidents']):,} overflow incidents)",
            )
        ax.scatter(
            [recommended[x]],
            [recommended[y] * scale],
            marker="*",
            s=320,
            color="gold",
            edgecolor="black",
            zorder=4,
            label=f"recommended ({int(recommended['overflow_incidents']):,} overflow incidents)",
        )
        ax.annotate(
            "recommended",
            (recommended[x], recommended[y] * scale),
            xytext=(8, 8),
            textcoords="offset points",
            fontsize=8,
            fontweight="bold",
        )
        ax.set(xlabel=xlabel, ylabel=ylabel)
        ax.grid(alpha=0.3)
    left.set_title("cost vs cache hit (better: up and left)", fontsize=10)
    right.set_title("summaries vs evicted repeat reads (better: down and left)", fontsize=10)
    left.legend(fontsize=8, loc="best")
    knobs_here = [k for k in knobs or [] if recommended.get(k) is not None]
    what = (
        knob_text(recommended, knobs_here)
        if knobs_here
        else "the policy's defaults"
        if recommended.get("point_id") == "defaults"
        else str(recommended.get("point_id"))
    )
    fig.supxlabel(f"recommended: {what}", fontsize=9)
    full = title + ("" if zero_overflow else "; no point free of overflow")
    fig.suptitle(textwrap.fill(full, TITLE_CHARS), fontsize=11)  # whole at any length: wrapped, never clipped
    return left


WINDOW_KNOBS = ("keep_last", "n", "max_events", "max_size")


def behaviour_band(points: pl.DataFrame, knobs: list[str], ax: Axes, under: float = 0.01) -> None:
    """Tune's third panel: per setting of the window knob (else the first swept knob), the turn band (summed turns
    over the recorded turns: low end the recorded run, not a bound; high end every pressured request tipping a loop
    to the cap) shaded, the pressured share of requests, and the smallest setting whose share is under ``under``."""
    knob = next((k for k in WINDOW_KNOBS if k in knobs), knobs[0])
    agg = [pl.col("pressured_share").max(), pl.col("recorded_turns").max()]
    have = [c for c in ("turns_lo", "turns_hi") if c in points.columns and points[c].null_count() < points.height]
    by = points.group_by(knob).agg(*agg, *(pl.col(c).min() if c.endswith("lo") else pl.col(c).max() for c in have))
    by = by.sort(knob)
    x = by[knob].to_list()
    twin = ax.twinx() if have else ax
    if have:
        base = np.maximum(by["recorded_turns"].to_numpy(), 1)
        lo, hi = by["turns_lo"].to_numpy() / base, by["turns_hi"].to_numpy() / base
        ax.fill_between(
            x, lo, hi, color="C1", alpha=0.25, step="mid", label="turn band (low end: recorded, not a bound)"
        )
        ax.set_ylabel("turns / recorded turns (band, uncalibrated)")
    share = by["pressured_share"].to_numpy() * 100
    twin.plot(x, share, marker="o", color="C3", label="pressured requests (%)")
    twin.set_ylabel("pressured requests (% of requests)")
    below = [int(v) if float(v).is_integer() else v for v, s in zip(x, share, strict=True) if s < under * 100]
    if below:
        ax.axvline(below[0], color="black", ls="--", lw=1)
        ax.annotate(
            f"pressured < {under:.0%} from {knob} = {below[0]}",
            (below[0], 0.95),
            xycoords=("data", "axes fraction"),
            xytext=(4, 0),
            textcoords="offset points",
            fontsize=8,
        )
    else:
        ax.annotate(
            f"no swept {knob} brings pressured requests under {under:.0%}",
            (0.02, 0.95),
            xycoords="axes fraction",
            fontsize=8,
        )
    ax.set_xlabel(knob)
    ax.set_title("behaviour: turn band and working-set pressure", fontsize=10)
    ax.grid(alpha=0.3)
    handles = [h for a in {ax, twin} for h in a.get_legend_handles_labels()[0]]
    if handles:
        ax.legend(handles=handles, fontsize=8, loc="center right")


def save(ax: Axes, out_dir: Path, name: str) -> list[Path]:
    """Save the Axes' figure as PNG and SVG; close it."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{name}.png", out_dir / f"{name}.svg"]
    fig = cast(Figure, ax.figure)  # every chart here is drawn on a top-level Figure (plt.subplots)
    fig.savefig(paths[0], dpi=130)
    fig.savefig(paths[1])
    plt.close(fig)
    return paths
