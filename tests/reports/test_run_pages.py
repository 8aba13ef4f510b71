"""`replay report` links a request-view page per long run (the pages `replay show --html` writes)."""

from __future__ import annotations

import re
from pathlib import Path

from replay.policies import Budget

ROOT = Path(__file__).resolve().parents[2]


def test_report_links_run_pages(tmp_path: Path) -> None:
    from replay.ingest import ingest
    from replay.reports.build import ReportConfig, write_report
    from replay.reports.run_pages import page_name, write_run_pages
    from replay.simulator.load import load_runs
    from replay.store import open_store

    con = open_store(tmp_path / "s.duckdb")
    ingest(con, [ROOT / "data" / "sample"])
    runs = load_runs(con, None)
    pages = write_run_pages(con, runs, tmp_path / "runs", None, Budget(130_000, 24_576), limit=2)
    longest = sorted(runs, key=lambda r: (-r.n_requests, r.run_id))[:2]
    assert [rid for rid, _ in pages] == [r.run_id for r in longest]
    md = write_report(tmp_path, ReportConfig(), len(runs), pages).read_text()
    page_html = (tmp_path / "report.html").read_text()
    for run, (_, path) in zip(longest, pages, strict=True):
        assert path == tmp_path / "runs" / page_name(run.run_id) and "/" not in path.name
        assert f"[{run.run_id}](runs/{path.name})" in md
        assert f'href="runs/{path.name}"' in page_html
        text = path.read_text()
        assert text.count('<g id="series-') == 2
        assert len(re.findall(r'<tr data-k="\d+">', text)) == run.n_requests


def test_page_names_are_short_distinct_and_plain() -> None:
    """A run id of any length or content gives a file name the file system takes (a 5,000-character id made
    `replay report` stop with a traceback), and ids that differ only in unsafe characters get different pages."""
    from replay.reports.run_pages import page_name

    ids = ["sample-long-1", "a/b", "a_b", "a b", "x" * 5000, "x" * 5000 + "y", "\x1b]0;t\x07<b>\udcff", "..", ".x"]
    names = [page_name(i) for i in ids]
    assert names[0] == "sample-long-1.html" and len(set(names)) == len(ids)
    for name in names:
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*\.html", name) and len(name.encode()) < 120, name
