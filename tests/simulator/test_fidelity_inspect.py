"""An inspect_ai 0.3.285 log (pooled inputs, a summary compaction; tests/readers/inspect_fixture.py) replays as
recorded: every prompt within 1% under o200k, the compaction at its request (main did not recognise the eval-set
log or the .eval archive; read without eval_set_id, its prompts were empty: 45.9% median, 2,854% p95 off)."""

from __future__ import annotations

import pytest

from replay.ingest import ingest
from replay.simulator.fidelity import fidelity_frame
from replay.store import open_store
from tests.readers import inspect_fixture as F


@pytest.fixture(scope="module")
def rows(tmp_path_factory) -> list[dict]:
    from replay.tokens.counting import count_items
    from replay.tokens.loading import load_tokenizer

    root = tmp_path_factory.mktemp("inspect")
    tok = load_tokenizer("o200k")
    sample = F.long_agent(tok.count)
    (root / "logs").mkdir()
    F.write_json(root / "logs" / "agent.json", [sample], model="openai/gpt-4o")
    F.write_eval(root / "logs" / "agent.eval", [sample], model="openai/gpt-4o")
    con = open_store(root / "s.duckdb")
    ingest(con, [root / "logs"])
    count_items(con, tok)
    out = fidelity_frame(con, tok.tokenizer_id).to_dicts()
    con.close()
    return out


def test_prompts_replay_within_one_percent(rows: list[dict]) -> None:
    runs = [r for r in rows if r["kind"] == "run"]
    assert len(runs) == 2  # the .json log and the .eval archive
    for r in runs:
        assert r["requests"] == 24 and r["median_abs_pct"] <= 1 and r["p95_abs_pct"] <= 1, r


def test_compaction_is_replayed_where_it_was_logged(rows: list[dict]) -> None:
    events = [r for r in rows if r["kind"] != "run"]
    assert len(events) == 2
    for r in events:
        assert r["kind"] == "compaction" and r["recorded_request"] == 14, r
        assert abs(r["replayed_after"] - r["recorded_after"]) / r["recorded_after"] <= 0.01, r
