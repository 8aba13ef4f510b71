"""`replay report`: run the small sweeps the charts need, draw them, write report.md and report.html."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import duckdb
import polars as pl
from markdown_it import MarkdownIt
from markupsafe import Markup

from replay.metrics.coverage import CostCover, cover_of_rows
from replay.policies.base import DEFAULT_WINDOW
from replay.progress import step
from replay.reports import extract, plots
from replay.reports.templating import environment
from replay.run_arrays import RunArrays
from replay.sweeps import from_dict, run_sweep
from replay.sweeps.results import sweep_frame
from replay.untrusted import for_markdown

COUNTERFACTUAL = (
    "Replay is counterfactual: the recorded actions (tool calls, reads, edits) stay fixed and only "
    "the context each policy would have sent is re-simulated. The figures are cost and exposure "
    "(tokens sent, cache hits, repeat reads a policy would have induced, overflow incidents), not "
    "solve rates: a policy that hides evidence may change what an agent does, which replay cannot see."
)


@dataclass
class ReportConfig:
    window: int = DEFAULT_WINDOW
    reserve: int = 24_576
    runs: str | None = None
    tokenizer: str | None = None
    executor: str = "local"
    workers: int = 0
    progress: bool = False  # each slow step named on stderr with its time
    cost_cover: CostCover = field(default_factory=lambda: CostCover(0, 0))  # the runs the costs are over
    sections: list[tuple[str, str, list[Path]]] = field(default_factory=list)  # title, text, charts
    arrays: list[RunArrays] = field(default_factory=list)  # the runs, loaded once by build_report


def _step(cfg: ReportConfig, label: str) -> AbstractContextManager:
    return step(f"report: {label}") if cfg.progress else nullcontext()


def _sweep(con: duckdb.DuckDBPyConnection, cfg: ReportConfig, name: str, grid: dict, fixed: dict) -> pl.DataFrame:
    points = 1
    for values in grid.values():
        points *= len(values)
    with _step(cfg, f"sweep {name} ({points} points x {len(cfg.arrays)} runs)"):
        return _sweep_frame(con, cfg, name, grid, fixed)


def _sweep_frame(con: duckdb.DuckDBPyConnection, cfg: ReportConfig, name: str, grid: dict, fixed: dict) -> pl.DataFrame:
    spec = from_dict(
        {
            "sweep": {
                "policy": "seed_a",
                "name": f"report-{name}",
                "runs": cfg.runs or "",
                "tokenizer": cfg.tokenizer or "",
                "batch": 8,
            },
            "fixed": {"window": cfg.window, "reserve": cfg.reserve, **fixed},
            "grid": grid,
        }
    )
    out = run_sweep(con, spec, executor=cfg.executor, workers=cfg.workers, progress=False, runs=cfg.arrays)
    return sweep_frame(con, out.sweep_id)


def _table(df: pl.DataFrame) -> str:
    """A markdown table; it starts on its own line (a table glued to a sentence does not render)."""
    cols = df.columns
    rows = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in df.iter_rows():
        rows.append("| " + " | ".join(f"{v:,.4g}" if isinstance(v, float) else str(v) for v in r) + " |")
    return "\n".join(rows)


# the policies the prompt-over-run chart compares (label -> policy)
PROMPT_POLICIES = {"full history": "full", "seed A": "seed_a", "auto-compact": "auto_compact"}


def build_report(con: duckdb.DuckDBPyConnection, out_dir: Path, cfg: ReportConfig | None = None) -> Path:
    """Every chart as PNG + SVG under out_dir/charts, and out_dir/report.md + report.html embedding them."""
    from replay.simulator.load import load_runs

    cfg = cfg or ReportConfig()
    with _step(cfg, "loading runs"):
        cfg.arrays = load_runs(con, cfg.tokenizer, cfg.runs)
    charts, w, r = out_dir / "charts", cfg.window, cfg.reserve
    longest = max(cfg.arrays, key=lambda a: a.n_requests)
    policies = {label: (name, {"window": w, "reserve": r}) for label, name in PROMPT_POLICIES.items()}
    with _step(cfg, "prompt over the longest run (compiles the simulator on first use)"):
        series = extract.prompt_series(longest, policies)
    tokens = plots.token_label(longest.token_source)
    ax = plots.prompt_over_run(
        series, w, r, threshold=80_000, run_id=longest.run_id.split("/")[-1], token_source=longest.token_source
    )
    cfg.sections.append(
        (
            "Prompt tokens over the longest run",
            "Each line is the prompt a policy would have sent at "
            f"each request; triangles mark summaries. Tokens: {tokens}.",
            plots.save(ax, charts, "prompt_over_run"),
        )
    )
    comp = extract.composition(series, "seed A")
    ax = plots.composition_area(comp, "seed A")
    ax.set_ylabel(f"prompt tokens ({tokens})")
    cfg.sections.append(
        (
            "Window composition",
            f"Tokens by item kind in seed A's view of the same run ({tokens}).",
            plots.save(ax, charts, "window_composition"),
        )
    )
    tail = extract.param_curve(
        _sweep(
            con,
            cfg,
            "tail",
            {"tail_fraction": [0.03125, 0.0625, 0.125, 0.1875, 0.25]},
            {"summary_at": 40_000, "tail_messages": 10_000},
        ),
        "tail_fraction",
        ["summaries_per_100", "repeat_evicted"],
    )
    ax = plots.curve(
        tail,
        "tail_fraction",
        "summaries_per_100",
        "Summary frequency vs verbatim-tail cap",
        "verbatim tail cap (fraction of the window)",
        "summaries per 100 requests",
        {"1/8 window": 0.125},
    )
    cfg.sections.append(("Summary frequency vs verbatim-tail cap", _table(tail), plots.save(ax, charts, "tail_cap")))
    floor = extract.param_curve(
        _sweep(con, cfg, "floor", {"reclaim_floor": [0.0, 0.03, 0.0625, 0.125, 0.25]}, {}),
        "reclaim_floor",
        ["cache_hit_rate", "repeat_evicted", "cost_usd"],
    )
    ax = plots.curve(
        floor,
        "reclaim_floor",
        "cache_hit_rate",
        "Cache hit rate vs cache-reclaim floor",
        "reclaim floor (fraction of the window)",
        "cache hit rate",
        {"1/8 window": 0.125},
        percent=True,
    )
    cfg.sections.append(("Cache hit rate vs reclaim floor", _table(floor), plots.save(ax, charts, "reclaim_floor")))
    margin = extract.param_curve(
        _sweep(con, cfg, "margin", {"margin": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5]}, {"estimator": "chars/4"}),
        "margin",
        ["overflow_incidents", "emergencies", "near_misses"],
    )
    ax = plots.curve(
        margin,
        "margin",
        "overflow_incidents",
        "Overflow vs emergency margin",
        "safety margin on seed A's chars/4 estimate (fraction)",
        f"overflow incidents ({tokens})",
        {"10%": 0.1, "20%": 0.2},
    )
    cfg.sections.append(
        (
            "Overflow incidents vs margin under estimator error",
            f"Seed A decides on chars/4 estimates; overflow is counted on the prompt the server sees "
            f"({tokens}).\n\n" + _table(margin),
            plots.save(ax, charts, "margin"),
        )
    )
    reads = extract.repeat_reads(con, cfg.runs)
    cfg.sections.append(
        (
            "Repeat reads",
            f"Largest count of reads of one resource in one run: {int(cast(int, reads['reads'].max()) or 0)}.",
            plots.save(plots.repeat_histogram(reads), charts, "repeat_reads"),
        )
    )
    grid = _sweep(
        con, cfg, "pareto", {"protect": [4000, 12000, 24000, 43000], "summary_at": [60_000, 80_000, 95_000]}, {}
    )
    cfg.cost_cover = cover_of_rows(grid)
    points = extract.point_table(grid)
    mask = extract.pareto_mask(points, ["repeat_evicted", "cost_usd"])
    ax = plots.pareto(
        points,
        "cost_usd",
        "repeat_evicted",
        mask,
        f"prompt cost (USD, {cfg.cost_cover.label()})",
        "evicted repeat reads",
        ["protect", "summary_at"],
    )
    cfg.sections.append(
        (
            "Pareto front",
            "Points: protected range (protect, tokens) x summary threshold "
            f"(summary_at, tokens); each front point is labelled with both knobs. Tokens: {tokens}.",
            plots.save(ax, charts, "pareto"),
        )
    )
    from replay.policies import Budget
    from replay.reports.run_pages import write_run_pages

    with _step(cfg, "request views per run"):
        pages = write_run_pages(con, cfg.arrays, out_dir / "runs", cfg.tokenizer, Budget(w, r))
    return write_report(out_dir, cfg, len(cfg.arrays), pages)


def cost_sentence(cover: CostCover) -> str:
    """What every cost in the report is summed over, in a sentence (the unpriced models and how to price them)."""
    if not cover.total:
        return ""
    if cover.complete:
        return f"Costs are over all {cover.total:,} runs (every run priced)."
    return "Costs are over the priced runs only: " + " ".join(cover.lines()) + "."


def md_html(text: str) -> str:
    """Markdown as HTML through markdown-it (CommonMark with tables; raw HTML in the text stays text)."""
    return MarkdownIt("commonmark", {"html": False}).enable("table").render(text)


def write_report(out_dir: Path, cfg: ReportConfig, n_runs: int, pages: list[tuple[str, Path]] | None = None) -> Path:
    """report.md, and report.html rendered from it (one text, two formats)."""
    covers = cost_sentence(cfg.cost_cover)
    md = [
        f"# replay report\n\n{n_runs} runs, window {cfg.window:,}, reply reserve {cfg.reserve:,}. "
        f"{for_markdown(covers)}\n\n> {COUNTERFACTUAL}\n"
    ]
    for title, text, paths in cfg.sections:
        png = paths[0].relative_to(out_dir).as_posix()
        md.append(f"\n## {title}\n\n![{title}]({png})\n\n{text}\n")
    if pages:
        intro = (
            "Request views per run (seed A vs the full history; prompt size over requests, each request's "
            "prompt segment by segment on click; `replay show RUN --html FILE` writes one for any run):"
        )
        md.append(
            f"\n## Request views\n\n{intro}\n\n"
            + "".join(f"- [{for_markdown(rid)}]({path.relative_to(out_dir).as_posix()})\n" for rid, path in pages)
        )
    text = "".join(md)
    (out_dir / "report.md").write_text(text, encoding="utf-8")
    page = environment().get_template("report.html.j2").render(body=Markup(md_html(text)))
    (out_dir / "report.html").write_text(page, encoding="utf-8")
    return out_dir / "report.md"
