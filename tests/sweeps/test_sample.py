"""The synthetic sample generator: deterministic, ingestible, long enough to cross thresholds."""

from __future__ import annotations

from pathlib import Path

from replay.sample import generate

ROOT = Path(__file__).resolve().parents[2]


def test_generator_matches_committed_sample(tmp_path: Path) -> None:
    for path in generate(tmp_path):
        assert path.read_bytes() == (ROOT / "data" / "sample" / path.name).read_bytes()


def test_sample_ingests_and_crosses_130k(tmp_path: Path) -> None:
    from replay.ingest import ingest
    from replay.store import open_store

    con = open_store(tmp_path / "s.duckdb")
    ingest(con, [ROOT / "data" / "sample"])
    assert con.execute("SELECT count(*) FROM quarantine").fetchone()[0] == 0
    peak = con.execute("SELECT max(input_tokens + cache_read + cache_write) FROM requests").fetchone()[0]
    assert peak > 130_000
    repeats = con.execute("""SELECT max(n) FROM (SELECT run_id, resource, count(*) n FROM items
                         WHERE kind = 'tool_call' AND access = 'read' GROUP BY ALL)""").fetchone()[0]
    assert repeats >= 10
