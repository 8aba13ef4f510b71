"""Per-request windows from the log (replay.simulator.request_windows): the Codex window logged for a request's
turn; nothing for a run that does not switch, a model the log does not name or a format whose window is per run."""

from __future__ import annotations

import numpy as np

from replay.simulator.request_windows import logged_window, request_windows

VERSION = "2.1.120"
BIG_MODEL = "claude-opus-4-7"


def test_logged_window_by_line() -> None:
    meta = {"model_context_window": 258_400, "context_windows": [[3, 994_000], [9, 258_400]]}
    assert [logged_window(meta, n) for n in (1, 3, 8, 9, 20, None)] == [
        258_400,
        994_000,
        994_000,
        258_400,
        258_400,
        258_400,
    ]


def test_runs_that_do_not_switch_carry_no_window() -> None:
    meta = {"cc_version": VERSION}
    prompts = np.array([1_000, 2_000])
    assert request_windows("claude-code", meta, BIG_MODEL, [BIG_MODEL, BIG_MODEL], [1, 2], prompts).window.tolist() == [
        0,
        0,
    ]
    # a model the log does not name, or one the harness made up, is the run's
    got = request_windows("claude-code", meta, BIG_MODEL, [None, "<synthetic>"], [1, 2], prompts)
    assert (got.window.tolist(), got.limit.tolist(), got.trigger.tolist()) == ([0, 0], [0, 0], [-1, -1])
    # a format whose harness takes its limit of the session, not the turn's model
    assert not request_windows("swe-agent", {}, "gpt-4o", ["o3"], [1], prompts[:1]).window.any()
