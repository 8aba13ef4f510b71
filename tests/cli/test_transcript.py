"""`replay show RUN --transcript`: one self-contained HTML page per run (every item in order, each request with its
tokens, cache reads and writes and cost, a search box), checked in a real headless Chromium: it loads without a
console error, the search box hides what does not match, and log text that looks like markup stays text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cli import app
from replay.ingest import ingest
from replay.metrics.recorded_bill import request_bill
from replay.store import open_store
from tests.headless import CHROMIUM, Browser

AGENT = "claude-code/ccl-coderabbit-agent-ea02459f.jsonl"  # 33 items, 5 requests, Sonnet 4.5
HOSTILE_TEXT = (
    'find <script>window.__pwned=1</script> and <!-- this </pre></section> <img src=x onerror="window.__pwned=2">'
)
HOSTILE_NAME = "x<script>window.__pwned=3;<!--.jsonl"  # the run id is made from the file name
QUERY = "pyproject"


@pytest.fixture(scope="module")
def db(corpus, tmp_path_factory) -> Path:
    """The corpus sub-agent, and a copy of its first 12 lines under a hostile name with a hostile user message."""
    tmp = tmp_path_factory.mktemp("transcript")
    lines = []
    for line in (corpus / AGENT).read_text(encoding="utf-8").splitlines()[:12]:
        obj = json.loads(line)
        msg = obj.get("message")
        if obj.get("type") == "user" and isinstance(msg, dict) and isinstance(msg.get("content"), str):
            msg["content"] = HOSTILE_TEXT
        lines.append(json.dumps(obj))
    (tmp / "logs").mkdir()
    (tmp / "logs" / HOSTILE_NAME).write_text("\n".join(lines) + "\n", encoding="utf-8")
    path = tmp / "s.duckdb"
    con = open_store(path)
    ingest(con, [corpus / AGENT, tmp / "logs"])
    con.close()
    return path


def write(db: Path, spec: str, out: Path) -> Path:
    res = CliRunner().invoke(app, ["show", spec, "--transcript", "--db", str(db), "--out", str(out)])
    assert res.exit_code == 0, res.output
    return out


def run_id(db: Path, like: str) -> str:
    con = open_store(db, read_only=True)
    rid = con.execute("SELECT run_id FROM runs WHERE run_id LIKE ? AND n_requests > 0", [like]).fetchall()
    con.close()
    assert len(rid) == 1, rid
    return rid[0][0]


def test_page_is_self_contained_with_each_request_and_its_cost(db, tmp_path):
    rid = run_id(db, "ccl-coderabbit-agent%")
    html = write(db, "ccl-coderabbit-agent", tmp_path / "t.html").read_text(encoding="utf-8")
    assert not re.search(r"(src|href)\s*=\s*['\"]?(https?:)?//", html)  # nothing fetched from anywhere
    assert "default-src 'none'" in html and html.count("<script") == 1
    con = open_store(db, read_only=True)
    bill = request_bill(con, run_ids=[rid]).sort("step")
    items = con.execute("SELECT count(*) FROM items WHERE run_id = ?", [rid]).fetchall()[0][0]
    con.close()
    assert (items, bill.height) == (33, 5)
    assert html.count('<section class="entry item') == items
    rows = re.findall(r'<tr class="usage">(.*?)</tr>', html)
    assert len(rows) == bill.height
    for row, req in zip(rows, bill.iter_rows(named=True), strict=True):
        cells = re.findall(r"<td>(.*?)</td>", row)
        prompt = req["input_tokens"] + req["cache_read"] + req["cache_write_5m"] + req["cache_write_1h"]
        counts = [prompt, req["input_tokens"], req["cache_read"], req["cache_write_5m"], req["cache_write_1h"]]
        assert cells[:6] == [f"{n:,}" for n in [*counts, req["output_tokens"]]]
        assert cells[6] == f"${req['cost_usd']:,.4f}"


def test_each_request_follows_the_items_it_was_sent_with(db, tmp_path):
    """A request of step s comes after every item of steps up to s and before its reply (the items of step s + 1)."""
    html = write(db, "ccl-coderabbit-agent", tmp_path / "t.html").read_text(encoding="utf-8")
    order = re.findall(r'<section class="entry (item|request)[^"]*"(?: data-k="\d+")?(?: data-step="(\d+)")?', html)
    requests = [(i, int(step)) for i, (what, step) in enumerate(order) if what == "request"]
    assert len(requests) == 5
    for i, s in requests:
        assert all(int(step) <= s for what, step in order[:i] if what == "item" and step)
        assert all(int(step) > s for what, step in order[i + 1 :] if what == "item" and step)


def test_default_file_is_named_after_the_run(db, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["show", "pwned", "--transcript", "--db", str(db)])
    assert res.exit_code == 0, res.output
    (page,) = tmp_path.glob("*.transcript.html")
    assert "<" not in page.name and page.name.startswith("x_script_window.__pwned_3_")


def test_out_without_transcript_is_refused(db, tmp_path):
    res = CliRunner().invoke(app, ["show", "pwned", "--db", str(db), "--out", str(tmp_path / "x.html")])
    assert res.exit_code != 0 and "--transcript" in str(res.exception)


@pytest.fixture()
def browser(tmp_path):
    b = Browser(tmp_path / "profile")
    yield b
    b.close()


ENTRIES = "document.querySelectorAll('#entries > .entry')"
SHOWN = "document.querySelectorAll('#entries > .entry:not([hidden])').length"


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_search_hides_what_does_not_match_in_chromium(db, tmp_path, browser):
    rid = run_id(db, "ccl-coderabbit-agent%")
    page = write(db, "ccl-coderabbit-agent", tmp_path / "t.html")
    con = open_store(db, read_only=True)
    texts = con.execute("SELECT concat_ws(' ', tool_name, args, text) FROM items WHERE run_id = ?", [rid]).fetchall()
    con.close()
    expected = sum(QUERY in (t or "").lower() for (t,) in texts)
    total = len(texts) + 5
    browser.load(page.as_uri())
    assert browser.errors == []
    assert browser.evaluate(f"{ENTRIES}.length") == total == browser.evaluate(SHOWN)
    browser.evaluate("document.getElementById('search').focus()")
    browser.type_text(QUERY.upper())  # case does not matter
    assert 0 < expected < total
    assert browser.evaluate(SHOWN) == expected
    assert browser.evaluate("document.getElementById('count').textContent") == f"{expected} of {total} entries"
    hidden_text = browser.evaluate(
        f"Array.from({ENTRIES}).filter(e => e.hidden).map(e => e.textContent.toLowerCase()).join(' ')"
    )
    assert QUERY not in hidden_text
    browser.evaluate("const b = document.getElementById('search'); b.value = ''; b.dispatchEvent(new Event('input'))")
    assert browser.evaluate(SHOWN) == total
    assert browser.errors == []


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_markup_in_a_run_id_or_item_stays_text_in_chromium(db, tmp_path, browser):
    rid = run_id(db, "x<script>%")
    assert "<script>" in rid and "<!--" in rid
    page = write(db, "pwned", tmp_path / "evil.html")
    browser.load(page.as_uri())
    assert browser.errors == []
    assert browser.evaluate("typeof window.__pwned") == "undefined"  # no script of the log ran
    assert browser.evaluate("document.scripts.length") == 1 and browser.evaluate("document.images.length") == 0
    assert browser.evaluate("document.querySelector('h1').textContent") == rid
    assert browser.evaluate("document.title") == f"transcript: {rid}"
    con = open_store(db, read_only=True)
    items = con.execute("SELECT count(*) FROM items WHERE run_id = ?", [rid]).fetchall()[0][0]
    con.close()
    assert browser.evaluate(f"{ENTRIES}.length") == items + 1  # nothing swallowed by a comment or a closed tag
    shown = browser.evaluate(f"Array.from({ENTRIES}).map(e => (e.querySelector('pre') || {{}}).textContent)")
    assert HOSTILE_TEXT in shown
    browser.evaluate("document.getElementById('search').focus()")
    browser.type_text("<!--")
    assert browser.evaluate(SHOWN) >= 1 and browser.errors == []
