"""Ingest parsed on a process pool stores exactly what a serial ingest stores, and keeps its guarantees."""

from __future__ import annotations

import shutil

import pytest

from replay.ingest import POOL_MIN_BYTES, expand_paths, ingest
from replay.store import open_store
from tests.store_dump import dump_store


@pytest.fixture(scope="module")
def sample(corpus):
    """Files of several formats (claude-code, codex, aider, cline, openhands, ...) over the pool threshold: one of
    each format, then the largest others until the threshold is passed."""
    files = [f for f in expand_paths([corpus]) if f.is_file()]
    by_format: dict[str, list] = {}
    for f in files:
        by_format.setdefault(f.parent.name, []).append(f)
    picked = [fs[0] for fs in by_format.values()]
    rest = sorted(set(files) - set(picked), key=lambda f: -f.stat().st_size)
    while sum(f.stat().st_size for f in picked) <= POOL_MIN_BYTES:
        picked.append(rest.pop(0))
    assert len(by_format) >= 6
    return picked


def test_pool_equals_serial(sample, tmp_path):
    serial, pooled = open_store(tmp_path / "s.duckdb"), open_store(tmp_path / "p.duckdb")
    a = ingest(serial, sample, workers=1)
    b = ingest(pooled, sample, workers=2)
    assert [(o.path, o.status, o.runs, o.items, o.requests) for o in a] == [
        (o.path, o.status, o.runs, o.items, o.requests) for o in b
    ]
    assert sum(o.items for o in b) > 1000
    assert dump_store(serial) == dump_store(pooled)


def test_pool_idempotent_duplicates_and_quarantine(sample, tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    for f in sample:
        shutil.copy(f, folder / f.name)
    shutil.copy(sample[0], folder / ("copy-" + sample[0].name))  # same content, another path
    (folder / "notes.jsonl").write_text('{"hello": "no known format"}\n')
    con = open_store(tmp_path / "s.duckdb")
    first = {o.path.name: o.status for o in ingest(con, [folder], workers=2)}
    assert first[sample[0].name] == "ingested" and first["copy-" + sample[0].name] == "unchanged"
    assert first["notes.jsonl"] == "unknown"
    assert con.execute("SELECT count(*) FROM quarantine WHERE path LIKE '%notes.jsonl'").fetchone()[0] == 1
    again = ingest(con, [folder], workers=2)
    assert {o.status for o in again if o.path.name != "notes.jsonl"} == {"unchanged"}
    assert con.execute("SELECT count(*) FROM files").fetchone()[0] == len(sample)
    assert con.execute("SELECT count(*) FROM quarantine WHERE path LIKE '%notes.jsonl'").fetchone()[0] == 1
