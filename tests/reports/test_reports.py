"""Chart data extraction, renderers returning Axes, the report and `replay demo`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
from matplotlib.axes import Axes

from replay.reports import extract, plots


def test_pareto_mask_keeps_only_non_dominated() -> None:
    df = pl.DataFrame({"cost": [1.0, 2.0, 3.0, 2.5], "evicted": [10.0, 5.0, 1.0, 6.0]})
    assert extract.pareto_mask(df, ["cost", "evicted"]).tolist() == [True, True, True, False]


def test_param_curve_recomputes_ratios_from_sums() -> None:
    frame = pl.DataFrame(
        {
            "param_x": [1, 1, 2],
            "prompt_tokens": [100, 300, 100],
            "cached_tokens": [50, 150, 0],
            "summaries": [1, 1, 0],
            "requests": [10, 10, 10],
            "error": [None, None, None],
        }
    )
    out = extract.param_curve(frame, "x", ["cache_hit_rate", "summaries_per_100"])
    assert out.rows() == [(1, 0.5, 10.0), (2, 0.0, 0.0)]


def test_renderers_return_labelled_axes(tmp_path: Path) -> None:
    series = pl.DataFrame(
        {
            "policy": ["a"] * 3,
            "k": [0, 1, 2],
            "prompt_tokens": [10, 20, 5],
            "summarised": [False, False, True],
            "overflow": [False] * 3,
        }
    )
    ax = plots.prompt_over_run(series, 30, 5, threshold=15)
    assert isinstance(ax, Axes) and ax.get_xlabel() and ax.get_ylabel() and ax.get_title()
    assert ax.get_legend() is not None
    paths = plots.save(ax, tmp_path, "p")
    assert all(p.exists() and p.stat().st_size > 1000 for p in paths)
    reads = pl.DataFrame({"run_id": ["r", "r"], "resource": ["a.py", "b.py"], "reads": [55, 1]})
    assert isinstance(plots.repeat_histogram(reads), Axes)
    pts = pl.DataFrame({"c": [1.0, 2.0], "e": [2.0, 1.0], "t": [1, 2]})
    assert isinstance(plots.pareto(pts, "c", "e", np.array([True, True]), "cost", "evicted", "t"), Axes)


def test_demo_writes_report_with_counterfactual_note(demo_run) -> None:
    res, out = demo_run  # `replay demo`, run once per session (tests/conftest.py; tests/test_readme.py runs it too)
    assert res.exit_code == 0, res.output
    # every slow step is named before it starts and timed after it (stderr is part of the output here)
    for label in ("ingesting", "counting tokens", "compiling the simulator", "sweeping", "report: sweep pareto"):
        assert f"{label}" in res.output and res.output.count(label) >= 2, (label, res.output)
    md = (out / "report.md").read_text()
    assert "counterfactual" in md and "not solve rates" in md
    for name in (
        "prompt_over_run",
        "tail_cap",
        "reclaim_floor",
        "margin",
        "window_composition",
        "repeat_reads",
        "pareto",
    ):
        assert (out / "charts" / f"{name}.png").exists() and (out / "charts" / f"{name}.svg").exists()
        assert f"charts/{name}" in md
    page = (out / "report.html").read_text()
    assert "<img" in page and "<table>" in page and "|---|" not in page  # tables rendered, not raw markdown
    assert list(out.glob("sweep-*.parquet"))
    # every markdown table starts on its own line (a table glued to a sentence does not render)
    lines = md.splitlines()
    assert all(
        lines[i - 1] == "" for i, line in enumerate(lines) if line.startswith("| ") and not lines[i - 1].startswith("|")
    )
    assert "Tokens: real count, tekken_240911." in md  # the demo counts with tekken and says so
    # the demo exercises the emergency margin: sample-dense-1 overflows under small margins, not under 50%
    section = md.split("## Overflow incidents vs margin")[1].split("## ")[0]
    rows = {
        line.split(" | ")[0].strip("| "): int(line.split(" | ")[1])
        for line in section.splitlines()
        if line.startswith("| 0")
    }
    assert rows["0"] > 0 and rows["0.5"] == 0 and rows["0.2"] > rows["0.5"]


def test_labels_say_real_count_or_estimate_and_which_tokenizer() -> None:
    assert plots.token_label("real:tekken_240911:3b41") == "real count, tekken_240911"
    assert plots.token_label("estimate:chars/4") == "estimate, chars/4"
    assert plots.token_label("mixed:o200k:ab+chars/4") == "partly estimated, o200k + chars/4"
    series = pl.DataFrame(
        {
            "policy": ["a"] * 2,
            "k": [0, 1],
            "prompt_tokens": [10, 20],
            "summarised": [False] * 2,
            "overflow": [False] * 2,
        }
    )
    assert "estimate, chars/4" in plots.prompt_over_run(series, 30, token_source="estimate:chars/4").get_ylabel()
    ax = plots.prompt_over_run(series, 30, token_source="real:tekken_240911:3b41")
    assert ax.get_ylabel() == "prompt tokens (real count, tekken_240911)"


def test_pareto_labels_name_the_knobs() -> None:
    pts = pl.DataFrame({"c": [1.0, 2.0], "e": [2.0, 1.0], "protect": [4000, 12000], "summary_at": [60000, 80000]})
    ax = plots.pareto(pts, "c", "e", np.array([True, True]), "cost", "evicted", ["protect", "summary_at"])
    texts = sorted(t.get_text() for t in ax.texts)
    assert texts == ["protect=12k, summary_at=80k", "protect=4k, summary_at=60k"]
    assert "labels: protect, summary_at" in [t.get_text() for t in ax.get_legend().get_texts()][1]
    tied = pl.DataFrame({"c": [1.0, 1.0], "e": [2.0, 2.0], "protect": [4000, 4000], "summary_at": [80000, 95000]})
    ax = plots.pareto(tied, "c", "e", np.array([True, True]), "cost", "evicted", ["protect", "summary_at"])
    assert [t.get_text() for t in ax.texts] == ["protect=4k, summary_at=80k/95k"]  # one label, not two overlaid


def test_markdown_tables_become_html_tables() -> None:
    from replay.reports.build import _table, md_html

    table = _table(pl.DataFrame({"margin": [0.0, 0.5], "overflow_incidents": [37, 0]}))
    out = md_html("Seed A decides on chars/4 estimates.\n\n" + table)
    assert out.startswith("<p>Seed A decides") and "<th>margin</th>" in out and "<table>" in out
    assert "<td>37</td>" in out and "|" not in out
    assert "&lt;b&gt;" in md_html("a <b>raw</b> tag")  # HTML in the text is shown, never interpreted
