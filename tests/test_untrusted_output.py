"""Log content is data: hostile run ids, models, tool names and texts through every kind of output replay writes
(terminal tables, markdown rendered with markdown-it, HTML, JUnit XML, TOML, CSV)."""

from __future__ import annotations

import csv
import io
import json
import re
import tomllib
from pathlib import Path
from xml.etree import ElementTree as ET

import pytest
from markdown_it import MarkdownIt
from typer.testing import CliRunner

from replay.cli import app
from replay.untrusted import (
    for_chart,
    for_csv,
    for_html,
    for_markdown,
    for_terminal,
    for_xml,
    json_text,
    script_json,
    toml_comment,
    toml_string,
)

HOSTILE = [
    "\x1b]52;c;ZXZpbA==\x07",  # OSC 52: write the clipboard
    "\x1b]0;owned\x07",  # OSC 0: window title
    "\x1b]8;;http://evil.example/\x1b\\link\x1b]8;;\x1b\\",  # OSC 8 hyperlink
    "\x1b[2J\x1b[H\x1b[31mred",  # CSI: clear screen, cursor home, colour
    "\x9b31m C1 CSI",  # 8-bit CSI
    "a\rb\x08c\x0bd\x0ce\x00f",
    "abc\u202edcba\u2066x\u2069",  # bidirectional override and isolate
    '<iframe srcdoc="<script>alert(1)</script>">',
    "<!--<script>",
    "</script><script>alert(1)</script>",
    "[click](javascript:alert(1)) ![x](http://evil.example/p.png)",
    "# heading\n## injected | cell | broken",
    '=HYPERLINK("http://evil.example")',
    "+cmd|' /C calc'!A0",
    "@SUM(A1)",
    "-2+3",
    'quote " and back\\slash',
    "\ud800 lone surrogate",
    "\x7f DEL, \u2028 line and \u2029 paragraph separators",
]
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


@pytest.mark.parametrize("text", HOSTILE)
def test_terminal_text_has_no_control_characters(text: str) -> None:
    assert not CONTROL.search(for_terminal(text))
    assert not CONTROL.search(for_chart(text)) and "$" not in for_chart("$x$").replace("\\$", "")


@pytest.mark.parametrize("text", HOSTILE)
def test_markdown_renders_as_plain_text(text: str) -> None:
    md = MarkdownIt("commonmark").enable("table")
    for doc in (f"Run {for_markdown(text)} changed.", f"| run | n |\n|---|---|\n| {for_markdown(text)} | 1 |\n"):
        rendered = md.render(doc)
        assert not re.search(r"<(?!/?(p|table|thead|tbody|tr|th|td)>)", rendered), rendered
        assert "href" not in rendered and "src=" not in rendered and "<h" not in rendered.replace("<thead", "")
    assert "\n" not in for_markdown(text)


@pytest.mark.parametrize("text", HOSTILE)
def test_html_and_script_json_hold_only_text(text: str) -> None:
    escaped = for_html(text)
    assert "<" not in escaped and ">" not in escaped and not CONTROL.search(escaped)
    embedded = script_json({"run_id": text})
    assert "<" not in embedded and ">" not in embedded
    assert json.loads(embedded) == {"run_id": text}


@pytest.mark.parametrize("text", HOSTILE)
def test_json_documents_hold_no_raw_control_and_parse_unchanged(text: str) -> None:
    if "\ud800" in text:  # no JSON encoder writes a lone surrogate raw
        return
    document = json.dumps({"run_id": text, "rows": [text]}, ensure_ascii=False)  # as polars and DuckDB write JSON
    safe = json_text(document)
    assert not CONTROL.search(safe) and json.loads(safe) == json.loads(document)


@pytest.mark.parametrize("text", HOSTILE)
def test_xml_toml_and_csv_parse_whatever_the_text(text: str) -> None:
    root = ET.Element("testsuite", name=for_xml(text))
    ET.SubElement(root, "failure", message=for_xml(text))
    assert ET.fromstring(ET.tostring(root, encoding="unicode")).get("name") == for_xml(text)
    if "\ud800" not in text:  # TOML holds any Unicode scalar value exactly; a lone surrogate is none
        doc = f"{toml_comment(text)}\nx = {toml_string(text)}\n"
        assert tomllib.loads(doc)["x"] == text
    buf = io.StringIO()
    csv.writer(buf).writerow([for_csv(text)])
    cell = next(csv.reader(io.StringIO(buf.getvalue())))[0]
    assert not cell.startswith(("=", "+", "-", "@")) and not CONTROL.search(cell)


HOSTILE_ID = 'sample\x1b]52;c;ZXZpbA==\x07<iframe srcdoc="<script>x</script>">|![i](http://e.example/i.png)\x9b2J\u202e'
HOSTILE_MODEL = "unpriced-model\x1b[2J\x9b6n\u2066"  # no price: named in warnings


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory) -> Path:
    """The bundled sample with one run renamed to a hostile id and a hostile model name."""
    from replay.ingest import ingest
    from replay.store import open_store

    root = Path(__file__).resolve().parents[1]
    folder = tmp_path_factory.mktemp("hostile")
    lines = (root / "data" / "sample" / "sample-long-1.jsonl").read_text().splitlines()
    head = json.loads(lines[0])
    head["run"], head["model"] = HOSTILE_ID, HOSTILE_MODEL
    (folder / "hostile.jsonl").write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    con = open_store(folder / "s.duckdb")
    ingest(con, [folder / "hostile.jsonl"])
    con.close()
    return folder / "s.duckdb"


def test_tables_json_and_csv_from_a_hostile_log(hostile_db: Path) -> None:
    """Tables, CSV and JSON (JSON is read on terminals too: a C1 CSI or a direction override in it acts there)."""
    runner = CliRunner()
    for cmd in (["runs"], ["runs", "--by", "model"], ["runs", "--compact"], ["fidelity"], ["quarantine"]):
        for fmt in ("table", "csv", "json"):
            res = runner.invoke(app, [*cmd, "--format", fmt, "--db", str(hostile_db)])
            assert res.exit_code == 0, res.output
            assert not CONTROL.search(res.stdout.replace("\n", "")), (cmd, fmt)
            if fmt == "json":
                assert isinstance(json.loads(res.stdout), list)
    res = runner.invoke(app, ["sql", "SELECT run_id, model FROM runs", "--format", "json", "--db", str(hostile_db)])
    assert res.exit_code == 0 and not CONTROL.search(res.stdout.replace("\n", ""))
    assert {r["model"] for r in json.loads(res.stdout)} >= {HOSTILE_MODEL}  # the value itself unchanged


def test_notes_warnings_and_errors_show_log_text_inert(capsys: pytest.CaptureFixture[str]) -> None:
    """The lines around the tables (notices, warning blocks, error lines) carry run ids, models and file names."""
    from rich.console import Console

    from replay.cli.common import _error_line, note, warnings_block

    note(f"no price for {HOSTILE_ID}\n# injected line")
    err = capsys.readouterr().err
    assert not CONTROL.search(err.replace("\n", "")) and "\\x0a# injected" in err.replace("\n", "")
    _error_line(f"/logs/{HOSTILE_ID}.jsonl: harness a\n# injected line")  # an error is one line, whatever it names
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and not CONTROL.search(err.replace("\n", "")) and "\\x1b]52" in err
    out = io.StringIO()
    warnings_block([f"cost covers 1 of 2 runs; no price for {HOSTILE_MODEL}"], Console(file=out, width=400))
    assert not CONTROL.search(out.getvalue().replace("\n", "")) and "\\x1b[2J" in out.getvalue()


def test_check_markdown_and_junit_from_a_hostile_log(hostile_db: Path, tmp_path: Path) -> None:
    base = '[policy]\nname = "seed_a"\n[params]\nwindow = 130000\nreserve = 24576\nprotect_fraction = 0.3333333333\n'
    (tmp_path / "b.toml").write_text(base)
    (tmp_path / "c.toml").write_text(base.replace("protect_fraction = 0.3333333333", "protect = 4000"))
    md, junit = tmp_path / "r.md", tmp_path / "r.xml"
    res = CliRunner().invoke(
        app,
        [
            "check",
            str(tmp_path / "b.toml"),
            str(tmp_path / "c.toml"),
            "--db",
            str(hostile_db),
            "--markdown",
            str(md),
            "--junit",
            str(junit),
        ],
    )
    assert res.exit_code in (0, 1), res.output
    assert "\x1b" not in res.stdout
    rendered = MarkdownIt("commonmark").enable("table").render(md.read_text())
    assert "<iframe" not in rendered and "<img" not in rendered and "<script" not in rendered
    assert "&lt;iframe srcdoc" in rendered  # the run id is there, as text
    classes = [c.get("classname") for c in ET.parse(junit).getroot().iter("testcase")]
    assert any("\\x1b]52" in c for c in classes) and not any("\x1b" in c for c in classes)


def test_run_page_from_a_hostile_log(hostile_db: Path, tmp_path: Path) -> None:
    """The run page (jinja2, matplotlib's SVG): the hostile run id is text everywhere, no element comes from it."""
    page = tmp_path / "run.html"
    res = CliRunner().invoke(app, ["show", "iframe", "--db", str(hostile_db), "--html", str(page)])
    assert res.exit_code == 0, res.output
    text = page.read_text()
    assert "<iframe" not in text and text.count("<script") == 2  # the page's JSON and its one script
    assert "&lt;iframe srcdoc" in text and "\x1b" not in text
    data = re.search(r'<script type="application/json" id="data">(.*?)</script>', text, re.S)
    assert data is not None and json.loads(data[1])["run_id"].endswith(HOSTILE_ID)  # the JSON keeps it exactly


def test_tune_lines_and_policy_files_from_a_hostile_log(hostile_db: Path, tmp_path: Path) -> None:
    """tune names runs that still overflow and models it has no price for (summary, warnings, ANSWER) and writes
    them into recommended.toml's header: inert on the terminal, and every policy file parses."""
    from replay.ingest import ingest
    from replay.store import open_store

    db = tmp_path / "s.duckdb"
    db.write_bytes(hostile_db.read_bytes())
    con = open_store(db)  # a priced run beside the hostile one: tune warns that the hostile model has no price
    ingest(con, [Path(__file__).resolve().parents[1] / "data" / "sample" / "sample-short-1.jsonl"])
    con.close()
    args = ["tune", "-t", "o200k", "-p", "seed_a", "--window", "30000", "--reserve", "4096", "--points", "2"]
    res = CliRunner().invoke(app, [*args, "--executor", "serial", "--out", str(tmp_path / "t"), "--db", str(db)])
    assert res.exit_code == 0, res.output
    assert "\\x1b]52" in res.stdout or "\\x1b[2J" in res.stdout  # log text is there, made visible
    assert not CONTROL.search(res.stdout.replace("\n", ""))
    for toml in (tmp_path / "t").glob("*.toml"):
        text = toml.read_text(encoding="utf-8")
        assert tomllib.loads(text) and not CONTROL.search(text.replace("\n", ""))


def test_placeholders_csv_file_from_a_hostile_log(tmp_path: Path) -> None:
    """placeholders --csv FILE (with --by-run, the run id from a hostile file name): a CSV as --format csv writes."""
    from replay.ingest import ingest
    from replay.store import open_store
    from tests.metrics.test_placeholders import PLACEHOLDER_ACTIONS, swe_traj

    db = tmp_path / "s.duckdb"
    con = open_store(db)
    ingest(con, [swe_traj(tmp_path / "=cmd|' \x1b]0;t\x07'!A0.traj", PLACEHOLDER_ACTIONS, keep_last=1)])
    con.close()
    out = tmp_path / "rates.csv"
    res = CliRunner().invoke(app, ["placeholders", "--by-run", "--db", str(db), "--csv", str(out)])
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8"))))
    assert rows and all("cmd|" in r["run_id"] for r in rows)
    for row in rows:
        for cell in row.values():
            assert not cell.startswith(("=", "+", "-", "@")) and not CONTROL.search(cell), cell
