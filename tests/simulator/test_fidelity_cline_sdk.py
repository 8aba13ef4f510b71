"""Cline 4.1 (SDK) compaction, recorded in the ``<id>.compaction.json`` sidecar, against the automatically chosen
``cline-sdk`` preset: a session written to the writer's schema (tests/readers/cline_sdk_session.py), compacted where
the SDK's own rule compacts it. Before the preset existed these events read "not scored: no preset"."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay.ingest import ingest
from replay.simulator.fidelity import fidelity_frame
from replay.store import open_store
from tests.readers.cline_sdk_session import session


def _event(tmp_path: Path, name: str, **kw) -> tuple[dict, dict]:
    found = session(tmp_path / name, **kw)
    con = open_store(tmp_path / f"{name}.duckdb")
    ingest(con, [tmp_path / name / next((tmp_path / name).iterdir()).name])
    rows = fidelity_frame(con, None).to_dicts()
    (event,) = [r for r in rows if r["kind"] != "run"]
    return event, found


@pytest.fixture(scope="module")
def first(tmp_path_factory) -> tuple[dict, dict]:
    return _event(tmp_path_factory.mktemp("plain"), "plain")


def test_preset_fires_where_the_sdk_compacted(first):
    event, found = first
    assert event["kind"] == "compaction" and event["preset"] == "cline-sdk@200000"
    assert event["recorded_request"] == found["request"] and event["recorded_after"] == found["after"]
    assert event["reason"] is None, event["reason"]
    assert abs(event["simulated_request"] - event["recorded_request"]) <= 3, event
    assert abs(event["simulated_after"] - event["recorded_after"]) <= 0.10 * event["recorded_after"], event
    assert event["within"]


def test_latest_typed_message_and_what_follows_it_stay(first, tmp_path):
    """A follow-up typed 20 calls before the compaction is older than the newest 20,000 estimated tokens: the SDK
    keeps everything from it on, and so does the preset (the prompt after is about twice the plain case's)."""
    plain, found = first
    event, kept = _event(tmp_path, "follow", follow_up=found["request"] - 20)
    assert kept["request"] <= found["request"] and kept["after"] > 1.5 * plain["recorded_after"]
    assert abs(event["simulated_request"] - event["recorded_request"]) <= 3, event
    assert abs(event["simulated_after"] - event["recorded_after"]) <= 0.10 * event["recorded_after"], event
    assert event["within"]


def test_earlier_compaction_not_on_disk(tmp_path):
    """Compacted twice (before requests 71 and 132): the sidecar holds only the second. The first leaves its trace
    in the usage only, so the run is flagged with the request, the prompt fit learns from the requests outside it
    (fitted on all of them the prefix came out at 32,173 tokens instead of about 2,200, and the preset compacted
    every 17-19 requests from request 20), and the preset fires at both, as the SDK did."""
    event, found = _event(tmp_path, "twice", turns=160)
    assert found["requests"] == [71, 132]
    assert event["unreconstructable"].startswith("compactions outside the log") and " 71 " in event["unreconstructable"]
    assert event["recorded_request"] == 132 and event["simulated_request"] == 132, event
    assert abs(event["simulated_after"] - event["recorded_after"]) <= 0.10 * event["recorded_after"], event
    assert event["within"]


def test_long_tool_results_sent_cut_kept_whole(tmp_path):
    """Every fourth result 40,000 characters: the SDK sends it cut to 8,000 (the reader's items, the trigger's
    estimate) but chooses what to keep by the messages as stored, so it keeps fewer of them; counted as sent, the
    preset kept 19,719 tokens after the compaction where the SDK kept 12,275."""
    event, found = _event(tmp_path, "big", big=40_000)
    assert event["recorded_request"] == found["request"] == event["simulated_request"], event
    assert abs(event["simulated_after"] - event["recorded_after"]) <= 0.10 * event["recorded_after"], event
    assert event["within"]
