"""OpenHands V1 minimum progress (LLMSummarizingCondenser.minimum_progress, software-agent-sdk b9c0e1f6a, v1.11.5):
a condensation that would forget fewer than that share of the view's events is not made, and the openhands-v1
preset, which reads the setting from the log's condenser, waits as the SDK did.

The fixture (``tests/readers/openhands_v1_fixture.py``) runs a 20,000-token command output first, then 1,000-token
ones, under max_tokens 32,000: the view passes the limit at request 13, where forgetting the first command and its
output (2 events of 28) would already bring it under half the limit. The SDK of v1.11.5 on skips that (2 < 2.8) until
request 17, where the shortest run to forget holds 4 events of 36; one before v1.11.0 condenses at 13."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay.simulator.harness_preset import harness_preset
from tests.simulator.test_fidelity_openhands_tokens import fidelity_rows

STEPS = 24
OUTPUTS = {k: 20_000 if k == 0 else 1_000 for k in range(STEPS)}


@pytest.mark.parametrize(("progress", "at"), [(0.1, 17), (None, 13)])
def test_preset_waits_for_minimum_progress_as_the_sdk_did(tmp_path: Path, progress: float | None, at: int) -> None:
    rows = fidelity_rows(tmp_path, steps=STEPS, outputs=OUTPUTS, minimum_progress=progress)
    (event,) = [r for r in rows if r["kind"] != "run"]
    assert event["recorded_request"] == at and event["reason"] is None, event
    assert event["simulated_request"] == at, event  # on the request, not just within 3
    assert abs(event["simulated_after"] - event["recorded_after"]) / event["recorded_after"] <= 0.10, event
    assert event["within"] is True


def test_minimum_progress_comes_from_the_log() -> None:
    settings = {"kind": "LLMSummarizingCondenser", "max_size": 80, "keep_first": 4}
    chosen = harness_preset("openhands-v1", {"condenser": {**settings, "minimum_progress": 0.25}})
    assert chosen is not None and chosen[2] == {"max_size": 80, "keep_first": 4, "minimum_progress": 0.25}
    for older in (settings, {**settings, "minimum_progress": 1.5}):  # before v1.11.5 no field; out of range: none
        chosen = harness_preset("openhands-v1", {"condenser": older})
        assert chosen is not None and "minimum_progress" not in chosen[2]
