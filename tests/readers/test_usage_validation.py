"""Usage numbers are checked where every reader builds its requests; a damaged ingest says so in its exit code."""

from __future__ import annotations

import math
import re

import pytest
from typer.testing import CliRunner

from replay.cli import app
from replay.model import BadRecord, Request, Run
from replay.readers.builder import MAX_TOKENS, RunBuilder, validate_usage

CC = "claude-code/cc-fixture-agentsessions-small.jsonl"


@pytest.mark.parametrize(
    "value", [math.nan, math.inf, -math.inf, -5, 10**30, MAX_TOKENS + 1, 1.5, "12", "x", True, [], {}]
)
def test_implausible_counts_are_refused(value):
    clean, problem = validate_usage({"output_tokens": value, "input_tokens": 3})
    assert problem is not None and "output_tokens" in problem


@pytest.mark.parametrize(("value", "stored"), [(0, 0), (12, 12), (12.0, 12), (None, None), (MAX_TOKENS, MAX_TOKENS)])
def test_plausible_counts_pass_as_ints(value, stored):
    clean, problem = validate_usage({"cache_read": value})
    assert problem is None and clean["cache_read"] == stored and type(clean["cache_read"]) is type(stored)


def test_builder_quarantines_bad_usage_and_keeps_the_request():
    b = RunBuilder(Run(run_id="r", format="t", source_path="p"))
    b.request(line=7, input_tokens=math.nan, output_tokens=4, model="m")
    b.request(line=9, input_tokens=5, output_tokens=4)
    records = list(b)
    bad = [r for r in records if isinstance(r, BadRecord)]
    reqs = [r for r in records if isinstance(r, Request)]
    assert [(x.line, "input_tokens" in x.reason) for x in bad] == [(7, True)]
    assert [(q.step, q.input_tokens, q.output_tokens, q.model) for q in reqs] == [(0, None, None, "m"), (1, 5, 4, None)]


def test_damaged_ingest_exits_3_with_each_bad_line_quarantined(corpus, tmp_path):
    lines = (corpus / CC).read_bytes().splitlines(keepends=True)
    usage_line = next(i for i, ln in enumerate(lines) if re.search(rb'"output_tokens":\d', ln))
    lines[usage_line] = re.sub(rb'"output_tokens":\d+', b'"output_tokens":-5', lines[usage_line], count=1)
    lines[2] = b"[" * 100_000 + b"]" * 100_000 + b"\n"
    lines[4] = lines[4][: len(lines[4]) // 2] + b"\n"
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "damaged.jsonl").write_bytes(b"".join(lines))
    (tmp_path / "logs" / "pristine.jsonl").write_bytes((corpus / CC).read_bytes())
    db = str(tmp_path / "s.duckdb")
    result = CliRunner().invoke(app, ["ingest", str(tmp_path / "logs"), "--db", db])
    assert result.exit_code == 3, result.output
    res = CliRunner().invoke(
        app, ["sql", "SELECT path, line, reason FROM quarantine ORDER BY line", "--db", db, "--format", "csv"]
    )
    assert res.exception is None, res.exception
    out = res.output
    assert [row.split(",")[1] for row in out.splitlines()[1:]] == ["3", "5", str(usage_line + 1)]
    assert "damaged.jsonl" in out and "pristine.jsonl" not in out
    runs = (
        CliRunner()
        .invoke(app, ["sql", "SELECT source_path, n_requests FROM runs ORDER BY 1, 2", "--db", db, "--format", "csv"])
        .output.splitlines()[1:]
    )
    assert len(runs) == 2 * sum("pristine" in r for r in runs)  # each damaged run is still there
    clean = CliRunner().invoke(app, ["ingest", str(corpus / CC), "--db", str(tmp_path / "clean.duckdb")])
    assert clean.exit_code == 0, clean.output
