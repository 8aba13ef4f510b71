"""`replay check` for CI: JSON and JUnit output, a markdown that names its setup, cents, failing rules explained,
and uncached tokens compared the same way under every cache model."""

from __future__ import annotations

import json
import re
from pathlib import Path
from xml.etree import ElementTree as ET

import polars as pl
import pytest
from typer.testing import CliRunner

from replay.cli import app

BASE = """[policy]
name = "seed_a"
cache = "auto"
[params]
window = 130000
reserve = 24576
protect_fraction = 0.3333333333
"""
CAND = BASE.replace("protect_fraction = 0.3333333333", "protect = 4000")


@pytest.fixture(scope="module")
def db(sample_store: Path) -> Path:
    return sample_store


@pytest.fixture()
def files(tmp_path: Path) -> tuple[str, str]:
    (tmp_path / "b.toml").write_text(BASE)
    (tmp_path / "c.toml").write_text(CAND)
    return str(tmp_path / "b.toml"), str(tmp_path / "c.toml")


def test_json_and_junit_agree(db, files, tmp_path):
    junit = tmp_path / "check.xml"
    res = CliRunner().invoke(app, ["check", *files, "--db", str(db), "--format", "json", "--junit", str(junit)])
    doc = json.loads(res.stdout)
    assert res.exit_code == (1 if doc["regressed"] else 0)
    assert doc["regressed"], "a 4,000-token protected range should regress the sample against a third of the window"
    failed_metrics = [m["metric"] for m in doc["metrics"] if m["regressed"]]
    suite = ET.parse(junit).getroot()
    failures = [f.get("message") for f in suite.iter("failure")]
    assert int(suite.get("failures")) == len(failures) == len(doc["failures"]) > 0
    assert sorted(failures) == sorted(doc["failures"])
    assert int(suite.get("tests")) == len(doc["metrics"]) + 2 * doc["runs"]  # two gated per-run rules per run
    for m in failed_metrics:
        assert any(line.startswith(f"{m} over all {doc['runs']} runs") for line in doc["failures"])
    assert doc["setup"]["baseline"]["window"] == "130,000" and doc["setup"]["candidate"]["reserve"] == "24,576"


def test_markdown_names_setup_costs_in_cents_and_explains(db, files):
    res = CliRunner().invoke(app, ["check", *files, "--db", str(db)])
    out = res.stdout
    for label in ("policy", "window (tokens)", "reply reserve (tokens)", "token source", "cache model", "price source"):
        assert re.search(rf"^\| {re.escape(label)} \| .+ \| .+ \|$", out, re.M), label
    assert "| token source | estimate:chars/4 | estimate:chars/4 |" in out
    assert re.search(r"^\| cost_usd \| \$\d[\d,]*\.\d\d \| \$\d[\d,]*\.\d\d \| -?\$\d[\d,]*\.\d\d \|", out, re.M)
    assert "### Why it fails" in out
    run_rules = re.findall(
        r"^- (\S+): (overflow_incidents|evicted_failures) (\d+) -> (\d+) \(\+(\d+)\), (.+)$", out, re.M
    )
    for _, _metric, b, c, d, why in run_rules:
        assert int(c) - int(b) == int(d) > 0 and "tolerance 0% per run" in why
    table = re.findall(r"^\| (\S+) \| (overflow_incidents|evicted_failures) \| .* \| regressed \|$", out, re.M)
    assert sorted(table) == sorted((r[0], r[1]) for r in run_rules)


def test_uncached_is_prompt_minus_cached_under_every_cache_model(db):
    """The bug: an Anthropic-cached candidate (every token not read is written) showed ~0 uncached tokens against
    millions for an auto-cached baseline. The gate compares tokens not read from the cache, writes included."""
    from replay.simulator.load import load_runs
    from replay.store import open_store
    from replay.sweeps.gate import compare, simulate_all
    from replay.sweeps.policy_file import load_policy_file

    con = open_store(db, read_only=True)
    runs = load_runs(con, None)
    tmp = Path(db).parent
    (tmp / "anth.toml").write_text(BASE.replace('cache = "auto"', 'cache = "anthropic"'))
    (tmp / "none.toml").write_text(BASE.replace('cache = "auto"', 'cache = "none"'))
    anth = simulate_all(load_policy_file(tmp / "anth.toml"), runs)
    none = simulate_all(load_policy_file(tmp / "none.toml"), runs)
    assert anth["written_tokens"].sum() > 0
    res = compare(none, anth).metrics.filter(pl.col("metric") == "uncached_tokens").row(0, named=True)
    assert res["baseline"] == none["prompt_tokens"].sum()  # nothing cached: every token is uncached
    assert res["candidate"] == anth["prompt_tokens"].sum() - anth["cached_tokens"].sum()
    assert res["candidate"] >= anth["written_tokens"].sum()


def test_bad_format_is_an_error(db, files):
    res = CliRunner().invoke(app, ["check", *files, "--db", str(db), "--format", "yaml"])
    assert res.exit_code != 0 and "choose markdown or json" in str(res.exception)
