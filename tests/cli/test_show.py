"""`replay show`: a request's prompt segment by segment under a policy, its difference to another, the HTML page."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from replay.cli import app
from replay.errors import ReplayError
from tests.headless import CHROMIUM, FLAGS, Browser

CLAUDE = "claude-code/ccs-livecd-gen-155c3456.jsonl"
SWE = "swe-agent/swea-lgetter-sympy__sympy-16792.traj"
RUN = "ccs-livecd-gen-155c3456-de705619"
BUDGET = ["--window", "130000", "--reserve", "24576"]


@pytest.fixture(scope="module")
def db(corpus, tmp_path_factory) -> Path:
    from replay.ingest import ingest
    from replay.store import open_store

    path = tmp_path_factory.mktemp("show") / "s.duckdb"
    con = open_store(path)
    ingest(con, [corpus / CLAUDE, corpus / SWE])
    con.close()
    return path


def invoke(*args: str, width: int = 80):
    res = CliRunner().invoke(app, list(args), env={"COLUMNS": str(width)}, catch_exceptions=False)
    return res


def test_seed_a_vs_full_table_fits_80_columns(db):
    res = invoke("show", RUN, "-k", "124", "-p", "seed_a", "--vs", "full", *BUDGET, "--db", str(db))
    assert res.exit_code == 0, res.output
    out = res.output
    assert max(len(line) for line in out.splitlines()) <= 80
    assert re.search(r"^\s+0 prefix\s+system\s+[\d,]+ cached", out, re.M)  # the harness prefix, first and cached
    assert re.search(r"^\s*1-\d+ dropped\s+\d+ items", out, re.M)  # seed A's summarised range, collapsed
    assert re.search(r"^\s+- summary\s+summary\s+[\d,]+", out, re.M)  # its summary segment
    assert "difference at request 124: seed_a vs full" in out
    assert re.search(r"summary\s+summary\s+[\d,]+\s+absent\s+0\s+-[\d,]+", out)
    assert "OVERFLOW" in out  # the full history overflows 130k - 24,576 there


def test_json_matches_the_simulator(db):
    """Per request, show's prompt, cached and written tokens are the simulator's; segments add up to the prompt."""
    from replay.policies import Budget, make_policy
    from replay.simulator.load import load_runs
    from replay.simulator.run import simulate_run
    from replay.store import open_store

    con = open_store(db, read_only=True)
    run = next(r for r in load_runs(con, None, RUN) if r.run_id == RUN)
    cols, _ = simulate_run(run, make_policy("seed_a"), None, Budget(130_000, 24_576))
    con.close()
    for k in (0, 60, 124):
        res = invoke(
            "show", RUN, "-k", str(k), "-p", "seed_a", "--vs", "full", *BUDGET, "--db", str(db), "--format", "json"
        )
        doc = json.loads(res.output)
        a, b = doc["views"]
        assert (a["prompt_tokens"], a["cached"], a["written"]) == (
            cols["prompt_tokens"][k],
            cols["cached_tokens"][k],
            cols["written_tokens"][k],
        )
        assert sum(r["tokens"] for r in a["rows"]) == a["prompt_tokens"]
        assert sum(d["delta"] for d in doc["diff"]) == b["prompt_tokens"] - a["prompt_tokens"]
        assert sum(r["tokens"] for r in a["rows"] if r["cache"] == "cached") <= a["cached"]


def test_placeholder_wording_and_cache_status(db):
    """SWE-agent's last-n masking shows its own wording with the output's line count."""
    res = invoke(
        "show", "sympy-16792", "-k", "-1", "-p", "swe-agent-last-n", "--db", str(db), "--cache", "anthropic", width=120
    )
    assert res.exit_code == 0, res.output
    assert re.search(
        r"placeholder\s+tool_result\S*\s+[\d,]+\s+(cached|written|uncached)\s+Old environment "
        r"output: \(\d+ lines omitted\)",
        res.output,
    )
    assert re.search(r"\s(written|uncached)\s", res.output)
    assert "policy swe-agent-last-n" in res.output  # the preset's name, not its class's


def test_errors_name_the_problem(db):
    res = CliRunner().invoke(app, ["show", "no-such-run", "--db", str(db)])
    assert isinstance(res.exception, ReplayError) and "no run matches 'no-such-run'" in str(res.exception)
    res = CliRunner().invoke(app, ["show", "ccs-livecd", "--db", str(db)])
    assert "matches 6 runs" in str(res.exception)
    res = CliRunner().invoke(app, ["show", RUN, "-k", "500", "--db", str(db)])
    assert "has 125 requests" in str(res.exception)
    res = CliRunner().invoke(app, ["show", RUN, "-p", "seed_a", "--vs", "seed_a", "--db", str(db)])
    assert "the same policy and knobs" in str(res.exception)


@pytest.fixture(scope="module")
def page(db, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("page") / "run.html"
    res = invoke("show", RUN, "-p", "seed_a", "--vs", "full", *BUDGET, "--db", str(db), "--html", str(path))
    assert res.exit_code == 0, res.output
    return path


def test_page_is_self_contained(page):
    text = page.read_text()
    assert text.count('<g id="series-') == 2  # one matplotlib line per policy
    assert len(re.findall(r'<tr data-k="\d+">', text)) == 125
    assert '<g id="summary-0"' in text and '<g id="overflow-1"' in text  # seed_a summarises, full overflows
    assert not re.search(r"(src|href)=['\"]https?:", text)  # nothing fetched
    data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', text, re.S)[1])
    assert [p["name"] for p in data["policies"]] == ["seed_a", "full"]
    overflows = [r["overflow"] for r in data["policies"][1]["requests"]]
    assert any(overflows) and np.count_nonzero(overflows) == text.count("OVERFLOW</td>") - sum(
        r["overflow"] for r in data["policies"][0]["requests"]
    )


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_page_renders_in_headless_chromium(page, db, tmp_path):
    flags = [*FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(
        [CHROMIUM, *flags, "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HOME": str(tmp_path)},
    ).stdout
    assert '<div id="chart"' in dom and dom.count('<g id="series-') == 2
    # the script ran: the last request's views are built as tables, one per policy
    assert dom.count('class="segments"') == 2
    assert "seed_a - request 124 (step 124)" in dom and "full - request 124 (step 124)" in dom
    # one table row per segment, as `show` lists them (plus each table's header row)
    doc = json.loads(
        invoke(
            "show", RUN, "-k", "124", "-p", "seed_a", "--vs", "full", *BUDGET, "--db", str(db), "--format", "json"
        ).output
    )
    rows = sum(len(v["rows"]) for v in doc["views"])
    assert dom.count('<tr class="f-') == rows
    shot = tmp_path / "page.png"
    subprocess.run(
        [CHROMIUM, *flags, f"--screenshot={shot}", "--window-size=1200,1400", page.as_uri()],
        capture_output=True,
        timeout=120,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert shot.exists() and shot.stat().st_size > 10_000
    keep = os.environ.get("REPLAY_SCREENSHOT")
    if keep:
        shutil.copy(shot, keep)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_a_click_on_the_chart_shows_that_request(page, tmp_path):
    """The chart is matplotlib's (real axes with tick labels); a click at request k's x opens request k's view."""
    b = Browser(tmp_path / "profile")
    try:
        b.load(page.as_uri())
        assert b.errors == []
        ticks = b.evaluate("Array.from(document.querySelectorAll('#chart svg g[id^=xtick_]')).length")
        assert ticks >= 4
        for k in (0, 40, 124):
            b.evaluate(
                f"""(() => {{ const c = document.getElementById('chart'), svg = c.querySelector('svg');
                const a = c.dataset, k = {k};
                const f = (k - Number(a.k0)) / (Number(a.k1) - Number(a.k0));
                const x = Number(a.x0) + f * (Number(a.x1) - Number(a.x0));
                const p = svg.createSVGPoint(); p.x = x; p.y = 100;
                const s = p.matrixTransform(svg.getScreenCTM());
                svg.dispatchEvent(new MouseEvent('click', {{clientX: s.x, clientY: s.y, bubbles: true}})); }})()"""
            )
            assert b.evaluate("document.querySelector('#view h3').textContent").startswith(f"seed_a - request {k} ")
            assert b.evaluate("document.querySelector('#requests tr.sel').dataset.k") == str(k)
    finally:
        b.close()


@pytest.mark.parametrize(
    "policy,form,wording",
    [
        (
            ["seed_c", "--set", "spill_tokens=500"],
            "spilled",
            r"\[Output truncated to a preview; full output at <spill file>\] preview: .",
        ),
        (["seed_b"], "omitted", r"\[Output of [A-Za-z]\w* call toolu_\w+ omitted\]"),
        (
            ["seed_a", "--set", "summary_at=400000", "--set", "protect=5000"],
            "placeholder",
            r"\[Old tool output of [A-Za-z]\w* call toolu_\w+ replaced; first/last characters kept\] .",
        ),
    ],
)
def test_each_form_shows_its_policys_wording(db, policy, form, wording):
    res = invoke("show", RUN, "-k", "120", "-p", *policy, *BUDGET, "--db", str(db), width=240)
    assert res.exit_code == 0, res.output
    rows = [line for line in res.output.splitlines() if re.match(rf"^\s*\d+ {form}\s", line)]
    assert rows and all(re.search(wording, line) for line in rows), rows[:3]
