"""Ingest memory: a record past the record limit is quarantined with its place (not read whole), the rest of its
file ingests; rows inserted batch by batch give exactly the rows of one batch per table."""

from __future__ import annotations

import json
import shutil

import pytest
from typer.testing import CliRunner

from replay.cli import app
from replay.errors import ReplayError
from replay.ingest import expand_paths, ingest
from replay.ingest import parse as ingest_parse
from replay.ingest.parse import Parsed, batches
from replay.store import open_store
from tests.store_dump import dump_store


def _session_with_big_result(corpus, tmp_path, n_bytes: int):
    """A real Claude Code session whose first tool result is ``n_bytes`` of text: (file, that line's number)."""
    src = corpus / "claude-code" / "cc-fixture-agentsessions-small.jsonl"
    lines = src.read_text().splitlines()
    for i, line in enumerate(lines):
        obj = json.loads(line)
        content = obj.get("message", {}).get("content") if obj.get("type") == "user" else None
        blocks = (
            [c for c in content if isinstance(c, dict) and c.get("type") == "tool_result"]
            if isinstance(content, list)
            else []
        )
        if blocks:
            blocks[0]["content"] = "line [x] of output\n" * (n_bytes // 19)
            lines[i] = json.dumps(obj)
            f = tmp_path / "big.jsonl"
            f.write_text("\n".join(lines) + "\n")
            return src, f, i + 1
    raise AssertionError("no tool result in the fixture")


def test_line_over_record_limit_is_quarantined_and_rest_ingests(corpus, tmp_path):
    _, big, line = _session_with_big_result(corpus, tmp_path, 3_000_000)
    con = open_store(tmp_path / "s.duckdb")
    [out] = ingest(con, [big], max_line_bytes=2_000_000)
    assert out.status == "ingested" and out.items > 10
    rows = con.execute("SELECT path, line, reason, length(raw) FROM quarantine").fetchall()
    assert len(rows) == 1
    path, qline, reason, raw_len = rows[0]
    assert (path, qline) == (str(big), line)
    assert "over the 1.907 MB record limit" in reason and "--max-record-mb" in reason and raw_len <= 2000
    # every other line is read: the same rows as the file with that line left blank
    blank = tmp_path / "blank" / "big.jsonl"
    blank.parent.mkdir()
    blank.write_bytes(
        b"\n".join(b"" if n == line else raw for n, raw in enumerate(big.read_bytes().split(b"\n"), start=1))
    )
    expected = open_store(tmp_path / "p.duckdb")
    ingest(expected, [blank])
    assert _items(con) == _items(expected) and len(_items(con)) == out.items


def _items(con) -> list[tuple]:
    """Every item column, the run named without the file's hash."""
    cols = [
        r[0]
        for r in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'items' AND column_name <> 'run_id'"
        ).fetchall()
    ]
    return con.execute(
        f"SELECT regexp_replace(run_id, '^[^/]*', '') AS r, {', '.join(cols)} FROM items ORDER BY r, seq"
    ).fetchall()


def test_line_under_record_limit_is_ingested_whole(corpus, tmp_path):
    _, big, _ = _session_with_big_result(corpus, tmp_path, 3_000_000)
    con = open_store(tmp_path / "s.duckdb")
    [out] = ingest(con, [big], max_line_bytes=4_000_000)
    assert out.status == "ingested" and not out.bad
    assert con.execute("SELECT max(chars) FROM items").fetchone()[0] >= 3_000_000 - 19


def test_document_over_record_limit_is_quarantined_unread(corpus, tmp_path):
    src = min((corpus / "swe-agent").glob("*.traj"), key=lambda f: f.stat().st_size)
    (tmp_path / "logs").mkdir()
    shutil.copy(src, tmp_path / "logs" / src.name)
    con = open_store(tmp_path / "s.duckdb")
    outcomes = ingest(con, [tmp_path / "logs"], max_line_bytes=src.stat().st_size - 1)
    assert [o.status for o in outcomes] == ["ingested"] and outcomes[0].runs == 0
    [(line, reason)] = con.execute("SELECT line, reason FROM quarantine").fetchall()
    assert line == 1 and reason.startswith(f"JSON document of {src.stat().st_size:,} bytes is over the")


def test_cli_max_record_mb(corpus, tmp_path):
    _, big, line = _session_with_big_result(corpus, tmp_path, 3_000_000)
    db = tmp_path / "s.duckdb"
    result = CliRunner().invoke(app, ["ingest", str(big), "--db", str(db), "--max-record-mb", "2"])
    assert result.exit_code == 3, result.output
    assert f"{big}:{line}" in result.output.replace("\n", "") and "--max-record-mb" in result.output
    bad = CliRunner().invoke(app, ["ingest", str(big), "--db", str(tmp_path / "t.duckdb"), "--max-record-mb", "0"])
    assert isinstance(bad.exception, ReplayError) and "--max-record-mb 0.0: expected a positive" in str(bad.exception)
    assert not (tmp_path / "t.duckdb").exists()


def test_batched_insert_equals_one_batch(corpus, tmp_path, monkeypatch):
    files = [f for f in expand_paths([corpus]) if f.is_file()][::3]
    whole = open_store(tmp_path / "whole.duckdb")
    ingest(whole, files, workers=1)
    monkeypatch.setattr(ingest_parse, "BATCH_ROWS", 7)
    monkeypatch.setattr(ingest_parse, "BATCH_CHARS", 5_000)
    batched = open_store(tmp_path / "batched.duckdb")
    outcomes = ingest(batched, files, workers=1)
    assert sum(o.items for o in outcomes) > 1000
    assert dump_store(whole) == dump_store(batched)


def test_batches_bound_rows_and_chars():
    items = {c: [None] * 5 for c in ingest_parse.ITEM_SCHEMA}
    items["chars"] = [10, 10, 100, 10, 10]
    items["seq"] = list(range(5))
    parsed = Parsed(path=None, status="ingested", bytes=0, format="x", items=items)  # type: ignore[arg-type]
    got = [(name, t.column("seq").to_pylist()) for name, t in batches(parsed, rows=3, chars=25)]
    assert got == [("items", [0, 1]), ("items", [2]), ("items", [3, 4])]  # a larger item is a batch of its own
    assert items["seq"] == []  # released as batched


@pytest.mark.parametrize("value", [1.5, "3", 2**70])
def test_value_the_store_cannot_hold_fails_the_file(value):
    items = {c: [None] for c in ingest_parse.ITEM_SCHEMA}
    items["step"], items["chars"] = [value], [1]
    parsed = Parsed(path=None, status="ingested", bytes=0, format="x", items=items)  # type: ignore[arg-type]
    with pytest.raises(ReplayError, match="the x reader gave a value the store cannot hold"):
        list(batches(parsed))


def test_ingest_pool_capped_by_cores(monkeypatch):
    from replay.worker_limits import usable_cores

    monkeypatch.setenv("REPLAY_WORKERS", "64")
    assert ingest_parse.default_workers() <= usable_cores()
    monkeypatch.setenv("REPLAY_WORKERS", "-1")
    with pytest.raises(ReplayError, match="REPLAY_WORKERS -1"):
        ingest_parse.default_workers()
