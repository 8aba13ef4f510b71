"""The synthetic sample generator: deterministic, ingestible, long enough to cross thresholds."""

from __future__ import annotations

from pathlib import Path

from replay.synth.sample import generate

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


def test_dense_run_needs_the_emergency_margin(tmp_path: Path) -> None:
    """sample-dense-1's hex dumps make chars/4 under-count the real count by a third or more (so seed A, deciding
    on chars/4, overflows with a 20% margin and not with 50%: the demo's margin chart), and its recorded usage
    counts them at their own density."""
    from replay.ingest import ingest
    from replay.store import open_store
    from replay.sweeps import from_dict, run_sweep
    from replay.sweeps.results import sweep_frame
    from replay.tokens.counting import count_items
    from replay.tokens.loading import load_tokenizer

    con = open_store(tmp_path / "s.duckdb")
    ingest(con, [ROOT / "data" / "sample"])
    tok = load_tokenizer("tekken")
    count_items(con, tok)
    real, chars = con.execute(
        """SELECT sum(t.n_tokens), sum(length(i.text)) FROM items i JOIN token_counts t
        ON t.content_hash = i.content_hash AND t.tokenizer_id = ? WHERE i.run_id LIKE '%dense%'
        AND i.text LIKE '00000000: %'""",
        [tok.tokenizer_id],
    ).fetchone()
    assert real > 3 * chars / 4  # hex dumps: about 1.2 characters per token
    spec = from_dict(
        {
            "sweep": {"policy": "seed_a", "runs": "%dense%", "tokenizer": tok.tokenizer_id},
            "fixed": {"window": 130_000, "reserve": 24_576, "estimator": "chars/4"},
            "grid": {"margin": [0.2, 0.5]},
        }
    )
    frame = sweep_frame(con, run_sweep(con, spec, executor="serial", progress=False).sweep_id)
    over = dict(frame.select("param_margin", "overflow_incidents").iter_rows())
    assert over[0.2] > 0 and over[0.5] == 0
