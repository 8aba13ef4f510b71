"""A model switch moves the harness's limit as that harness computes it of the serving model, not only its window
(``RunArrays.req_limit``/``req_trigger``, replay.simulator.request_windows); views and compiled sweeps agree.

- Claude Code 2.1.20 (claude-code-2.1.3: W - min(32k, max output) - 13k of the last usage plus the new messages):
  five requests on Haiku 3.5 (max output 8,192: limit 178,808) reach 160k; ``/model`` switches to Sonnet 4.5
  (reserve 32,000: limit 155,000) and the log compacts before its first request. The run's (Haiku's) limit never
  fires.
- Claude Code 2.1.170: Opus 4.8 (native 1M, no auto-compact window before 2.1.260: compacts only past the window)
  reaches 170k; ``/model`` switches to Opus 4.6 (200k with its model-default window from 2.1.163: 167,000 of the
  last usage and new messages) and the log compacts before its first request. The run's preset (Opus 4.8's) would
  wait for a prompt past Opus 4.6's 200k window.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from replay.ingest import ingest
from replay.policies import make_policy
from replay.simulator.caches import make_cache
from replay.simulator.fidelity import fidelity_frame
from replay.simulator.harness_preset import harness_preset
from replay.simulator.kernels.packed import pack
from replay.simulator.load import load_runs
from replay.simulator.run import simulate_run
from replay.store import open_store
from replay.sweeps.adapter import evaluate_point, resolve
from replay.sweeps.point_rows import point_frame
from tests.readers.cline_sdk_session import session as cline_sdk_writer
from tests.readers.gemini_fixture import message
from tests.readers.test_copilot_cli_1_0_102 import COMPLETE, Session
from tests.simulator.cc_switch import cc_session, store
from tests.simulator.test_kernels import assert_same

SONNET, HAIKU = "claude-sonnet-4-5-20250929", "claude-3-5-haiku-20241022"
OPUS_48, OPUS_46 = "claude-opus-4-8", "claude-opus-4-6"
# (version, turns, the request the log compacted before, the run's preset)
CASES = {
    "reserve": ("2.1.20", [(HAIKU, 32_000)] * 5 + [(SONNET, 1_000)] * 3, 5, "claude-code-2.1.3"),
    "window-source": ("2.1.170", [(OPUS_48, 34_000)] * 5 + [(OPUS_46, 1_000)] * 3, 5, "claude-code-2.1.153"),
}


@pytest.fixture(params=sorted(CASES))
def case(request, tmp_path: Path):
    version, turns, at, preset = CASES[request.param]
    con = store(tmp_path, cc_session(version, turns, at))
    (run,) = load_runs(con, None, own_windows=True)
    fmt, metadata = con.execute("SELECT format, metadata FROM runs").fetchone()
    chosen = harness_preset(fmt, json.loads(metadata), run.model, int(run.rec_prompt.max()))
    assert chosen is not None and chosen[0] == preset
    return con, run, chosen, at


def fired(run, chosen) -> list[int]:
    """The requests at which the preset summarised, or for Cline's truncation (no summary) cut more of the history
    (the others' trimmed tokens also count the recorded summaries they leave out)."""
    name, budget, params = chosen
    cols, _ = simulate_run(run, make_policy(name, params), make_cache("none"), budget)
    if name == "cline":  # the conversation's trimmed tokens: a switch also replaces the prefix fitted per model
        prefix = cols["tok_system"] + cols["tok_tool_defs"]
        trimmed = cols["trimmed_tokens"] - (prefix[0] - prefix)
        return (np.flatnonzero(trimmed[1:] > trimmed[:-1]) + 1).tolist()
    return np.flatnonzero(cols["summarised"]).tolist()


def flat(run):
    """The run with its own limits and triggers for every request (the run's model's preset's)."""
    return replace(run, req_limit=np.zeros(0), req_trigger=np.zeros(0, np.int64))


def test_the_serving_models_limit_places_the_compaction(case) -> None:
    _, run, chosen, at = case
    assert fired(run, chosen) == [at]
    # the run's model's limit (and trigger) for every request misses it
    assert fired(flat(run), chosen) != [at]


def test_fidelity_scores_it_where_the_log_has_it(case) -> None:
    con, _, _, at = case
    (event,) = [r for r in fidelity_frame(con, None).to_dicts() if r["kind"] != "run"]
    assert (event["recorded_request"], event["simulated_request"]) == (at, at)


def test_sweeps_and_views_agree_on_the_switch(case) -> None:
    _, run, (name, budget, params), _ = case
    point = resolve(name, {**params, "window": budget.window, "reserve": budget.reserve}, "anthropic")
    (row,) = point_frame(pack([run]), point).to_dicts()
    assert_same(evaluate_point(run, point), row, name)
    # and the row is the switch's: without the per-request limits it would be another
    (other,) = point_frame(pack([flat(run)]), point).to_dicts()
    assert other != row


def gemini_session(tmp_path: Path):
    """Gemini CLI (0.30 on: compression at 0.5 of ``tokenLimit`` of the turn's model, the last prompt against it):
    five requests on gemini-2.5-pro (1,048,576: 524,288) reach 150k; the user switches to gemma-4-31b-it (256,000:
    128,000) and the CLI compresses before its first request (the ``info`` note)."""
    lines: list[dict] = [{"sessionId": "s", "projectHash": "p", "startTime": "2026-04-01T00:00:00.000Z"}]
    prompt = 0
    for k, model in enumerate(["gemini-2.5-pro"] * 5 + ["gemma-4-31b-it"] * 3):
        if k == 5:
            lines.append(message(f"n{k}", "info", "Context compressed from 58% to 20%."))
            prompt = 50_000
        text = chr(ord("a") + k) * (120_000 if k < 5 else 4_000)
        prompt += len(text) // 4
        lines.append(message(f"u{k}", "user", [{"text": text}]))
        tokens = {"input": prompt, "output": 10, "cached": 0, "thoughts": 0}
        lines.append(message(f"g{k}", "gemini", f"done {k}", tokens=tokens, model=model))
    return store(tmp_path, lines, "session-2026-04-01T00-00-s.jsonl")


def copilot_session(tmp_path: Path):
    """Copilot CLI 1.0.102 (background compaction from 0.8 of the request's model's ``max_prompt_tokens``, logged per
    call as ``maxPromptTokens``): five calls on claude-sonnet-4.6 (168,000: 134,400) reach 110k; ``/model`` switches
    to gpt-5-mini (128,000: 102,400), whose first call starts the compaction; its summary replaces the history at the
    next call."""
    s = Session()
    prompt = 0
    for k in range(8):
        model = "claude-sonnet-4.6" if k < 5 else "gpt-5-mini"
        if k == 5:
            s.add("session.model_change", newModel=model)
            s.add("session.compaction_start", compactionAttemptId="a1", model=model, systemTokens=20,
                  conversationTokens=115_000, toolDefinitionsTokens=0, currentTokens=115_000, tokenLimit=128_000,
                  trigger="threshold")  # fmt: skip
        if k == 6:
            s.add("session.compaction_complete", **{**COMPLETE, "preCompactionMessagesLength": 11})
            prompt = 1_000
        tokens = 22_000 if k < 5 else 6_000 if k == 5 else 500
        s.prompt(chr(ord("a") + k) * (4 * tokens))
        prompt += tokens
        usage = {"inputTokens": prompt, "outputTokens": 10, "cacheReadTokens": 0, "cacheWriteTokens": 0}
        s.call(k, f"step {k}", model=model, usage=usage)
        s.events[-3]["data"]["usage"]["maxPromptTokens"] = 168_000 if k < 5 else 128_000
    return store(tmp_path, s.events, "events.jsonl")


def cline_session(tmp_path: Path, second: str = "claude-sonnet-4-5"):
    """Cline 3.x (``ui_messages.json``; past the max allowed size of the current API handler's model, by the last
    usage, the older half is truncated): five requests on claude-sonnet-4-5:1m (1,000,000: 960,000) reach 165k; the
    user picks claude-sonnet-4-5 (200,000: 160,000) and Cline truncates before its first request (the deleted range
    every message carries from then on)."""
    ui: list[dict] = [{"ts": 1_700_000_000_000, "type": "say", "say": "task", "text": "start"}]
    prompt = 0
    for k in range(8):
        model = "claude-sonnet-4-5:1m" if k < 5 else second
        text = chr(ord("a") + k) * (4 * (33_000 if k < 5 else 500))
        prompt = prompt + len(text) // 4 if k != 5 else 60_000
        usage = {"tokensIn": 10, "tokensOut": 20, "cacheWrites": 0, "cacheReads": prompt - 10, "cost": 0.01}
        # Cline says api_req_started before it manages the context: the range is on the messages after it
        deleted = {"conversationHistoryDeletedRange": [2, 5]} if k >= 5 else {}
        started = {"request": f"<task>{text}</task>" if k == 0 else text, **usage}
        ui.append(
            {
                "ts": 1_700_000_000_000 + 2 * k + 1,
                "type": "say",
                "say": "api_req_started",
                "text": json.dumps(started),
                "modelInfo": {"modelId": model, "providerId": "anthropic", "mode": "act"},
                "conversationHistoryIndex": 2 * k,
                **(deleted if k > 5 else {}),
            }
        )
        ui.append({"ts": 1_700_000_000_000 + 2 * k + 2, "type": "say", "say": "text", "text": f"done {k}", **deleted})
    return store(tmp_path, ui, "ui_messages.json", "tasks/1700000000000")


def cline_sdk_session(tmp_path: Path):
    """Cline SDK 4.1 (0.9 of the turn's ``context.model`` input limit, by ceil(JSON characters / 3) of the request):
    the session of tests/readers/cline_sdk_session.py on claude-sonnet-4-5 (1,000,000: 900,000) until the request
    where it compacts on claude-haiku-4-5 (200,000: 180,000), then on Haiku, which compacts there."""
    at = cline_sdk_writer(tmp_path / "probe")["request"]  # where a Haiku session compacts first
    found = cline_sdk_writer(tmp_path / "sdk", turns=at + 8, first=(at, "claude-sonnet-4-5", 1_000_000))
    assert found["requests"] == [at]
    con = open_store(tmp_path / "s.duckdb")
    ingest(con, [tmp_path / "sdk"])
    return con, at


@pytest.fixture(params=["gemini", "copilot", "cline", "cline-sdk"])
def other(request, tmp_path: Path):
    # the request whose view the summary first shows: Copilot CLI's background summary replaces the history at the
    # call after the one that started it
    if request.param == "cline-sdk":
        con, at = cline_sdk_session(tmp_path)
    else:
        session, at = {"gemini": (gemini_session, 5), "copilot": (copilot_session, 6), "cline": (cline_session, 5)}[
            request.param
        ]
        con = session(tmp_path)
    (run,) = load_runs(con, None, own_windows=True)
    fmt, metadata = con.execute("SELECT format, metadata FROM runs").fetchone()
    chosen = harness_preset(fmt, json.loads(metadata), run.model, int(run.rec_prompt.max()))
    assert chosen is not None
    return con, run, chosen, at


def test_other_harnesses_follow_the_serving_model(other) -> None:
    con, run, chosen, at = other
    assert fired(run, chosen) == [at]
    assert fired(flat(run), chosen) != [at]
    (event,) = [r for r in fidelity_frame(con, None).to_dicts() if r["kind"] != "run"]
    assert (event["recorded_request"], event["simulated_request"]) == (at, at)
    test_sweeps_and_views_agree_on_the_switch((con, run, chosen, at))


def test_a_model_with_no_preset_leaves_the_event_unscored(tmp_path: Path) -> None:
    """After a switch to a model Cline's table does not hold, the limit Cline compared there is not known: the
    truncation it made is not scored against the run's model's limit (it was, silently), and the reason names the
    model."""
    con = cline_session(tmp_path, "acme/unheard-of-coder")
    (run,) = load_runs(con, None, own_windows=True)
    assert run.req_unknown_limit.tolist() == [False] * 5 + [True] * 3
    (event,) = [r for r in fidelity_frame(con, None).to_dicts() if r["kind"] != "run"]
    assert event["within"] is None and "acme/unheard-of-coder, a model with no preset" in event["reason"], event
