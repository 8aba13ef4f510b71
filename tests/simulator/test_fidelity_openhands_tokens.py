"""OpenHands V1 condensing on tokens (LLMSummarizingCondenser.max_tokens, software-agent-sdk 3bd0250ab, 2025-12-23):
the openhands-v1 preset takes the limit from the log's condenser settings and fires where the SDK did.

The fixture (``tests/readers/openhands_v1_fixture.py``) condenses at requests 7 and 11, both times past 32,000 tokens
of the view with 16 and 19 events of the 240 max_size allows; before the token trigger the preset never fired there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from replay.ingest import ingest
from replay.simulator.fidelity import fidelity_frame
from replay.simulator.harness_preset import harness_preset
from replay.store import open_store
from tests.readers import openhands_v1_fixture as fixture


def fidelity_rows(root: Path, **options) -> list[dict]:
    """``fidelity`` rows (o200k counts) of the fixture conversation written under ``root`` with ``options``."""
    from replay.tokens.counting import count_items
    from replay.tokens.loading import load_tokenizer

    tok = load_tokenizer("o200k")
    fixture.write(root / "bench", tok.count, **options)
    con = open_store(root / "s.duckdb")
    ingest(con, [root / "bench"])
    count_items(con, tok)
    rows = fidelity_frame(con, tok.tokenizer_id).to_dicts()
    con.close()
    return rows


@pytest.fixture(scope="module")
def scored(tmp_path_factory) -> list[dict]:
    return fidelity_rows(tmp_path_factory.mktemp("ohv1"))


def test_preset_condenses_on_tokens_where_the_sdk_did(scored: list[dict]) -> None:
    events = [r for r in scored if r["kind"] != "run"]
    assert [r["recorded_request"] for r in events] == [7, 11]
    for r in events:
        assert r["kind"] == "condensation" and r["preset"].startswith("openhands-v1@") and r["reason"] is None, r
        assert abs(r["simulated_request"] - r["recorded_request"]) <= 3, r  # never fired by events alone
        assert abs(r["simulated_after"] - r["recorded_after"]) / r["recorded_after"] <= 0.10, r
        assert r["within"] is True


def test_token_limit_comes_from_the_log_and_none_is_no_limit() -> None:
    settings = {"kind": "LLMSummarizingCondenser", "max_size": 240, "keep_first": 2}
    with_limit = harness_preset("openhands-v1", {"condenser": {**settings, "max_tokens": 32_000}})
    assert with_limit is not None and with_limit[2] == {"max_size": 240, "keep_first": 2, "max_tokens": 32_000}
    for older in (settings, {**settings, "max_tokens": None}):  # before 3bd0250ab no field; null: no limit
        chosen = harness_preset("openhands-v1", {"condenser": older})
        assert chosen is not None and "max_tokens" not in chosen[2]


def test_condensation_the_agent_requested_is_replayed_as_recorded(tmp_path: Path) -> None:
    """The model refused request 6 for its context window: the agent wrote a CondensationRequest and the condenser
    kept len(view) // 2 - keep_first - 1 = 4 newest events. The log cannot say the request was not the user's, so
    the event is not scored against the preset (no token limit here; 240 events never reached); the recorded
    policy replays it."""
    rows = fidelity_rows(tmp_path, max_tokens=None, window_error_at=6, steps=9)
    (event,) = [r for r in rows if r["kind"] != "run"]
    assert event["recorded_request"] == 6 and event["within"] is None
    assert event["reason"] == "manual, not a threshold: replayed as recorded"
    assert event["simulated_request"] is None  # the preset never condensed
    assert abs(event["replayed_after"] - event["recorded_after"]) / event["recorded_after"] < 0.01
