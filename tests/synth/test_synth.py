"""replay synth: generated logs ingest cleanly, are deterministic, and keep the real corpus's statistics."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay.errors import ReplayError
from replay.ingest import ingest
from replay.store import open_store
from replay.synth import generate, learn
from replay.synth.compare import compare
from replay.synth.generate import parse_mix

SEED = 7


@pytest.fixture(scope="module")
def recipe(corpus_db):
    return learn(corpus_db, SEED)


@pytest.fixture(scope="module")
def mixed(corpus_db):
    """The recipe of Claude Code and Codex runs in equal parts (learned once: generate only reads a recipe)."""
    return learn(corpus_db, SEED, mix="claude-code=1,codex-rollout=1")


def _ingested(recipe, runs: int, folder: Path):
    generate(recipe, runs, folder / "logs")
    con = open_store(folder / "s.duckdb")
    ingest(con, [folder / "logs"])
    return con


def test_both_formats_ingest_without_quarantine(mixed, tmp_path):
    con = _ingested(mixed, 12, tmp_path)
    assert con.execute("SELECT count(*) FROM quarantine").fetchone()[0] == 0
    assert con.execute("SELECT count(*) FROM files WHERE n_runs = 1").fetchone()[0] == 12
    formats = dict(con.execute("SELECT format, count(*) FROM runs GROUP BY 1").fetchall())
    assert set(formats) == {"claude-code", "codex-rollout"} and sum(formats.values()) == 12
    empty = con.execute("SELECT count(*) FROM runs WHERE n_requests = 0").fetchone()[0]
    assert empty == 0
    # every call the generator wrote found its result
    orphans = con.execute("""SELECT count(*) FROM items c WHERE kind = 'tool_call' AND NOT EXISTS (
        SELECT 1 FROM items r WHERE r.run_id = c.run_id AND r.kind = 'tool_result' AND r.call_id = c.call_id)""")
    orphans = orphans.fetchone()[0]
    calls = con.execute("SELECT count(*) FROM items WHERE kind = 'tool_call'").fetchone()[0]
    assert orphans <= calls // 20


def test_same_seed_same_bytes(recipe, tmp_path):
    generate(recipe, 4, tmp_path / "a")
    generate(recipe, 4, tmp_path / "b")
    a = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*.jsonl"))
    assert a == sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*.jsonl"))
    assert all((tmp_path / "a" / p).read_bytes() == (tmp_path / "b" / p).read_bytes() for p in a)


def test_same_bytes_whatever_the_workers(mixed, tmp_path):
    """Pool workers run in fresh interpreters (another string hash seed): nothing may depend on set order."""
    both = mixed
    generate(both, 6, tmp_path / "one")
    generate(both, 6, tmp_path / "two", workers=2)
    files = sorted(p.relative_to(tmp_path / "one") for p in (tmp_path / "one").rglob("*.jsonl"))
    assert any(p.parts[0] == "codex-rollout" for p in files)
    assert files == sorted(p.relative_to(tmp_path / "two") for p in (tmp_path / "two").rglob("*.jsonl"))
    assert all((tmp_path / "one" / p).read_bytes() == (tmp_path / "two" / p).read_bytes() for p in files)


def test_statistics_match_the_source(corpus_db, tmp_path):
    """Claude Code runs (43 donors): every statistic within its stated tolerance (replay.synth.compare)."""
    cc = learn(corpus_db, SEED, mix="claude-code=1")
    con = _ingested(cc, 150, tmp_path)
    rows = compare(corpus_db, con, ["claude-code"])
    assert len(rows) > 30
    off = [f"{r.statistic}: {r.source} vs {r.synthetic}" for r in rows if not r.ok]
    assert not off, off


def test_token_density_per_kind(recipe, tmp_path):
    """Filler text counts like the real text of its kind: characters per token within 10%."""
    from replay.synth.filler import Filler, density
    from replay.tokens.loading import load_tokenizer

    tok = load_tokenizer("o200k")
    filler = Filler()
    import random

    rng = random.Random(1)
    for kind in ("tool_result", "tool_call", "assistant_text", "user_text", "reasoning"):
        text = "".join(filler.text(3000, recipe.mixes[kind], rng) for _ in range(20))
        assert density(tok.count_many, text) == pytest.approx(recipe.densities[kind], rel=0.10), kind


@pytest.mark.parametrize(
    "text,message",
    [
        ("foo=1", "format must be one of"),
        ("claude-code=x", "expected FORMAT=WEIGHT"),
        ("claude-code=0", "must be >= 0 and not all 0"),
    ],
)
def test_bad_mix(recipe, text, message):
    with pytest.raises(ReplayError, match=message):
        parse_mix(text, recipe.donors)


def test_store_without_donors(tmp_path):
    con = open_store(tmp_path / "empty.duckdb")
    with pytest.raises(ReplayError, match="no runs of format"):
        learn(con, SEED)
