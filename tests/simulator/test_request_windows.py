"""A model switch inside a session moves the harness's compaction threshold: the auto_compact presets take request
k's limit from the window of request k's model (``RunArrays.req_window``, replay.simulator.request_windows).

- Claude Code 2.1.120 (preset claude-code-2.1.74: window - 20k output - 13k buffer): three requests on Opus 4.7, on
  its native 1M window from 2.1.117 (limit 967k), reach 180k; ``/model`` then switches to Opus 4.6 (200k, limit
  167k) and the harness compacts before the first request on it, as its transcript records (compact_boundary).
- Codex: a first turn on gpt-4.1 whose task_started and token_counts log a 994,000 ``model_context_window``
  (1,046,316 once the 95% is scaled back; limit 0.9 of it) reaches 250k; the next turn's logs 258,400 (272,000,
  limit 244,800), which the prompt then passes.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from replay.ingest import ingest
from replay.policies import Budget, make_policy
from replay.simulator.caches import make_cache
from replay.simulator.fidelity import fidelity_frame
from replay.simulator.harness_preset import harness_preset
from replay.simulator.kernels.trace import views_of
from replay.simulator.load import load_runs
from replay.simulator.run import simulate_run
from replay.store import open_store

VERSION = "2.1.120"
BIG_MODEL, SMALL_MODEL = "claude-opus-4-7", "claude-opus-4-6"


def cc_lines() -> list[dict]:
    """The session: user messages of 600k, 80k and 40k characters answered by Opus 4.7 (prompts recorded 150k to
    180k), an auto compaction, then two requests on Opus 4.6."""
    t = iter(f"2026-05-01T10:{m:02d}:00.000Z" for m in range(60))
    base = {"sessionId": "s1", "version": VERSION, "cwd": "/tmp", "entrypoint": "cli", "userType": "external"}
    lines: list[dict] = []
    parent = None

    def user(uuid: str, text: str, **extra: object) -> None:
        nonlocal parent
        lines.append(
            {
                **base,
                "type": "user",
                "uuid": uuid,
                "parentUuid": parent,
                "timestamp": next(t),
                "message": {"role": "user", "content": text},
                **extra,
            }
        )
        parent = uuid

    def assistant(uuid: str, model: str, prompt: int) -> None:
        nonlocal parent
        usage = {"input_tokens": 10, "cache_read_input_tokens": prompt - 10, "cache_creation_input_tokens": 0}
        lines.append(
            {
                **base,
                "type": "assistant",
                "uuid": uuid,
                "parentUuid": parent,
                "requestId": f"req-{uuid}",
                "timestamp": next(t),
                "message": {
                    "id": f"msg-{uuid}",
                    "model": model,
                    "role": "assistant",
                    "usage": {**usage, "output_tokens": 20},
                    "content": [{"type": "text", "text": "done " + uuid}],
                },
            }
        )
        parent = uuid

    user("u1", "a" * 600_000)
    assistant("a1", BIG_MODEL, 150_000)
    user("u2", "b" * 80_000)
    assistant("a2", BIG_MODEL, 170_000)
    user("u3", "c" * 40_000)
    assistant("a3", BIG_MODEL, 180_000)
    lines.append(
        {
            **base,
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": "s1",
            "parentUuid": None,
            "logicalParentUuid": parent,
            "timestamp": next(t),
            "content": "Conversation compacted",
            "compactMetadata": {"trigger": "auto", "preTokens": 180_020},
        }
    )
    parent = "s1"
    user("u4", "summary " * 1_000, isCompactSummary=True, isVisibleInTranscriptOnly=True)
    user("u5", "go on")
    assistant("a4", SMALL_MODEL, 2_100)
    user("u6", "and then")
    assistant("a5", SMALL_MODEL, 2_200)
    return lines


def codex_lines() -> list[dict]:
    """Two turns: gpt-4.1 on a 994,000 logged window, then gpt-5.2 on 258,400."""
    ts = "2026-05-01T10:00:00.000Z"
    total = {"n": 0}

    def line(kind: str, payload: dict) -> dict:
        return {"timestamp": ts, "type": kind, "payload": payload}

    def turn(model: str, window: int) -> list[dict]:
        return [
            line("turn_context", {"cwd": "/tmp", "model": model, "approval_policy": "never", "summary": "auto"}),
            line("event_msg", {"type": "task_started", "model_context_window": window}),
        ]

    def exchange(text: str, prompt: int, window: int) -> list[dict]:
        total["n"] += prompt + 10
        usage = {"input_tokens": prompt, "cached_input_tokens": 0, "output_tokens": 10, "reasoning_output_tokens": 0}
        return [
            line(
                "response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
            ),
            line(
                "response_item",
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]},
            ),
            line(
                "event_msg",
                {
                    "type": "token_count",
                    "info": {
                        "total_token_usage": {**usage, "total_tokens": total["n"]},
                        "last_token_usage": {**usage, "total_tokens": prompt + 10},
                        "model_context_window": window,
                    },
                },
            ),
        ]

    meta = {"id": "019f0000-0000-7000-8000-000000000001", "cwd": "/tmp", "originator": "codex_cli_rs"}
    return [
        line("session_meta", {**meta, "cli_version": "0.130.0", "source": "cli"}),
        *turn("gpt-4.1", 994_000),
        *exchange("a" * 800_000, 200_000, 994_000),
        *exchange("b" * 200_000, 250_000, 994_000),
        *turn("gpt-5.2", 258_400),
        *exchange("c" * 4_000, 251_000, 258_400),
        *exchange("d" * 4_000, 252_000, 258_400),
    ]


def store(tmp_path: Path, name: str, lines: list[dict]):
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    con = open_store(tmp_path / "s.duckdb")
    ingest(con, [path])
    return con


@pytest.fixture
def cc(tmp_path: Path):
    return store(tmp_path, "session.jsonl", cc_lines())


def test_claude_code_requests_take_their_models_window(cc) -> None:
    (run,) = load_runs(cc, None, own_windows=True)
    assert list(run.req_model) == [BIG_MODEL] * 3 + [SMALL_MODEL] * 2
    # the run's model is Opus 4.7 (1M): only the requests Opus 4.6 served carry a window of their own
    assert run.model == BIG_MODEL
    assert run.req_windows.tolist() == [0, 0, 0, 200_000, 200_000]


def test_a_window_the_user_chooses_holds_for_every_request(cc) -> None:
    """Only a replay on the harness's own window (fidelity) takes the log's per-request windows: `simulate --window
    W` asks what W would do, for every request."""
    (run,) = load_runs(cc, None)
    assert not run.req_windows.any()
    cols, _ = simulate_run(run, make_policy("recorded"), make_cache("none"), Budget(1_000_000, 199_000))
    assert not cols["overflow"].any()


def test_claude_code_preset_compacts_where_the_200k_threshold_says(cc) -> None:
    (run,) = load_runs(cc, None, own_windows=True)
    fmt, metadata = cc.execute("SELECT format, metadata FROM runs").fetchone()
    name, budget, params = harness_preset(fmt, json.loads(metadata), run.model, int(run.rec_prompt.max()))
    assert (name, budget.window) == ("claude-code-2.1.74", 1_000_000)
    cols, _ = simulate_run(run, make_policy(name, params), make_cache("none"), budget)
    # 967k on Opus 4.7 never fires; 167k on Opus 4.6 fires at its first request, where the log compacted
    assert np.flatnonzero(cols["summarised"]).tolist() == [3]
    assert cols["prompt_tokens"][3] < 20_000
    # without the log's per-request windows and limits the preset would not compact at all on this budget
    flat, _ = simulate_run(
        replace(run, req_window=np.zeros(0, np.int64), req_limit=np.zeros(0)),
        make_policy(name, params),
        make_cache("none"),
        budget,
    )
    assert not flat["summarised"].any()


def test_fidelity_scores_the_switch_compaction(cc) -> None:
    frame = fidelity_frame(cc, None).to_dicts()
    (event,) = [r for r in frame if r["kind"] != "run"]
    assert event["preset"] == "claude-code-2.1.74@1000000"
    assert (event["recorded_request"], event["simulated_request"]) == (3, 3)
    assert event["reason"] is None


def test_views_show_the_serving_window(cc) -> None:
    """Every policy's per-request view (``show``, reports) and the overflow count use the serving model's window:
    Opus 4.6's 200k from the switch on, the budget's before it."""
    (run,) = load_runs(cc, None, own_windows=True)
    views = views_of(run, make_policy("recorded"), Budget(1_000_000)).views
    assert [v.window for v in views] == [0, 0, 0, 200_000, 200_000]
    # a 2k prompt with 199k reserved overflows Opus 4.6's window, not the 1M budget's
    cols, _ = simulate_run(run, make_policy("recorded"), make_cache("none"), Budget(1_000_000, 199_000))
    assert cols["overflow"].tolist() == [False, False, False, True, True]


def test_codex_turn_windows_are_read_per_request(tmp_path: Path) -> None:
    con = store(tmp_path, "rollout-2026-05-01T10-00-00-019f0000-0000-7000-8000-000000000001.jsonl", codex_lines())
    (run,) = load_runs(con, None, own_windows=True)
    fmt, metadata = con.execute("SELECT format, metadata FROM runs").fetchone()
    metadata = json.loads(metadata)
    assert [w for _, w in metadata["context_windows"]] == [994_000, 258_400]
    name, budget, params = harness_preset(fmt, metadata, run.model, int(run.rec_prompt.max()))
    assert (name, budget.window) == ("codex-rs", 272_000)  # the run's window: the last one logged
    assert run.req_windows.tolist() == [1_046_316, 1_046_316, 0, 0]
    cols, _ = simulate_run(run, make_policy(name, params), make_cache("none"), budget)
    # 250k passes 0.9 x 272k but not 0.9 x 1,046,316: the compaction waits for the turn on the smaller window
    assert np.flatnonzero(cols["summarised"]).tolist()[:1] == [2]
