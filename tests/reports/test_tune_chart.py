"""tune's chart: a long title (a tokenizer path, no point passing the gate, none free of overflow) wraps inside the
figure instead of running off its edges."""

from __future__ import annotations

import polars as pl

from replay.reports import plots


def test_a_long_title_stays_inside_the_figure():
    pts = pl.DataFrame(
        {
            "point_id": ["a", "b"],
            "cost_usd": [1.0, 2.0],
            "cache_hit_rate": [0.5, 0.6],
            "summaries_per_100": [1.0, 0.5],
            "repeat_evicted": [3, 2],
            "overflow_incidents": [2, 1],
            "feasible": [False, True],
            "on_front": [False, True],
        }
    )
    rec = pts.row(1, named=True)
    title = (
        "replay tune: seed_a, tokenizer /home/someone/models/a-long-model-name/tokenizer.json:0123456789abcdef, "
        "window 65,536, reserve 8,192; no point passes check's gate"
    )
    ax = plots.tune_front(pts, rec, title, rec, zero_overflow=False)
    fig = ax.figure
    fig.canvas.draw()
    box, text = fig.bbox, fig._suptitle
    extent = text.get_window_extent()
    assert extent.x0 >= box.x0 and extent.x1 <= box.x1, (extent, box)
    assert "no point free of overflow" in text.get_text() and "\n" in text.get_text()
    plots.plt.close(fig)
