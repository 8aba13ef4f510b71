"""One self-contained HTML page per run: prompt size over requests for each policy (a matplotlib chart, inline SVG)
with summaries, rewrites and overflows marked, and each request's view on click (embedded JSON and one script
allowed by hash, nothing loaded from anywhere). The page is the jinja2 template ``templates/run_page.html.j2``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from markupsafe import Markup

from replay.reports.plots import inline_svg, run_page_chart
from replay.reports.show import ShownView
from replay.reports.templating import environment, inline_script
from replay.untrusted import script_json


def page_data(series: list[list[ShownView]]) -> dict:
    """The page's JSON: each item's kind, tool, text and tokens once; per policy and request the segments
    (first and last position, form, tokens, cache status; a run of neighbouring items sent whole with one cache
    status is one row; kind and text only where the form replaces the item's own)."""
    first = series[0][-1]
    items: dict[int, list] = {}
    policies = []
    for views in series:
        reqs = []
        for v in views:
            rows: list[list] = []
            for r in v.rows:
                if r.form in ("original", "prefix") and r.first >= 0:
                    items.setdefault(r.first, [r.kind, r.tool, r.text[:100], r.tokens])
                    last = rows[-1] if rows else None
                    if (
                        r.form == "original"
                        and last is not None
                        and last[2] == "original"
                        and last[4] == r.cache
                        and last[1] == r.first - 1
                    ):
                        last[1], last[3] = r.first, last[3] + r.tokens
                    else:
                        rows.append([r.first, r.last, r.form, r.tokens, r.cache])
                else:
                    rows.append([r.first, r.last, r.form, r.tokens, r.cache, r.kind, r.text[:100]])
            reqs.append(
                {
                    "k": v.k,
                    "step": v.step,
                    "prompt": v.prompt_tokens,
                    "cached": v.cached,
                    "written": v.written,
                    "uncached": v.uncached,
                    "overflow": v.overflow,
                    "summarised": v.summarised,
                    "rewritten": v.rewritten,
                    "emergency": v.emergency,
                    "rows": rows,
                }
            )
        policies.append({"name": views[0].policy, "requests": reqs})
    return {
        "run_id": first.run_id,
        "window": first.window,
        "reserve": first.reserve,
        "token_source": first.token_source,
        "prompt_source": first.prompt_source,
        "cache_model": first.cache_model,
        "items": {str(p): v for p, v in items.items()},
        "policies": policies,
    }


def chart(series: list[list[ShownView]]) -> tuple[Markup, tuple[float, float, float, float]]:
    """The chart as inline SVG and its x axis (SVG x of both ends, request numbers there) for the click script."""
    first = series[0][0]
    lines = [
        (
            views[0].policy,
            np.array([v.prompt_tokens for v in views], dtype=np.int64),
            np.array([v.summarised for v in views], dtype=bool),
            np.array([v.rewritten for v in views], dtype=bool),
            np.array([v.overflow for v in views], dtype=bool),
        )
        for views in series
    ]
    svg, axis = inline_svg(run_page_chart(lines, first.window, first.reserve, first.token_source))
    return Markup(svg), axis  # matplotlib escapes every text it writes into the SVG


def totals(views: list[ShownView]) -> dict:
    """One policy's counts over the run, for the page's summary line."""
    return {
        "policy": views[0].policy,
        "overflows": sum(v.overflow for v in views),
        "summaries": sum(v.summarised for v in views),
        "rewrites": sum(v.rewritten and not v.summarised for v in views),
    }


def render_page(series: list[list[ShownView]]) -> str:
    """The whole page as a string (no external resources)."""
    if not series or not series[0]:
        raise ValueError("render_page needs at least one policy's views of at least one request")
    svg, axis = chart(series)
    data = page_data(series)
    script, script_hash = inline_script("run_page.js")
    return (
        environment()
        .get_template("run_page.html.j2")
        .render(
            run=data,
            series=series,
            totals=[totals(v) for v in series],
            chart=svg,
            axis=axis,
            data=Markup(script_json(data)),
            script=script,
            script_hash=script_hash,
        )
    )


def write_page(path: Path, series: list[list[ShownView]]) -> Path:
    """Write the run's page to ``path`` (folders created)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_page(series), encoding="utf-8")
    return path
