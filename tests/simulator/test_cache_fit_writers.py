"""A run's cache model and its bill agree, from logs written in the harnesses' own shapes: a Gemini CLI session the
log check flags for content outside the log still fits its recorded reads, and a MiniMax run reached outside
Claude Code is cached and billed as MiniMax's automatic cache (listed read price, no write), whether its reads
fit a hit rate or it keeps the default (replay.simulator.provider_caches)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.simulator.corpus_runs import replayed_as_recorded

HIDDEN = 6000  # the harness's system prompt and tools: sent, never logged
WORDS = 1300  # o200k tokens of a user turn ("word" repeated: one token a word)
EXTRA = 4000  # content the Gemini CLI sent and did not record, at three stretches of requests


def _text(n: int, salt: int) -> str:
    return f"turn {salt}: " + " ".join(["word"] * n)


def gemini_session(path: Path, turns: int = 30) -> Path:
    """A Gemini CLI 0.3x JSON chat recording (ChatRecordingService's shape): user turns, gemini replies with
    ``tokens``. Content outside the log (``EXTRA`` tokens the CLI sent at three stretches of requests and did
    not record) enters and leaves; the server read the previous request's prompt on two requests of three and
    nothing on the third."""
    messages, logged, prev, extra_at = [], 0, 0, {5, 6, 7, 12, 13, 14, 20, 21, 22}
    for k in range(turns):
        user = _text(WORDS + 37 * (k % 5), k)
        reply = _text(180, 1000 + k)
        logged += WORDS + 37 * (k % 5) + 3
        prompt = HIDDEN + logged + (EXTRA if k in extra_at else 0)
        cached = prev if k % 3 else 0
        ts = f"2026-04-25T10:{k // 6:02d}:{(k % 6) * 10:02d}.000Z"
        messages.append({"id": f"u{k}", "timestamp": ts, "type": "user", "content": [{"text": user}]})
        messages.append(
            {
                "id": f"g{k}",
                "timestamp": ts,
                "type": "gemini",
                "content": reply,
                "thoughts": [],
                "tokens": {"input": prompt, "output": 183, "cached": cached, "thoughts": 0, "tool": 0},
                "model": "gemini-2.5-pro",
            }
        )
        logged += 183
        prev = prompt
    doc = {
        "sessionId": "5e551011-0000-4000-8000-000000000001",
        "projectHash": "0" * 64,
        "startTime": "2026-04-25T10:00:00.000Z",
        "lastUpdated": "2026-04-25T10:05:00.000Z",
        "messages": messages,
        "kind": "main",
    }
    out = path / "session-2026-04-25T10-00-5e551011.json"
    out.write_text(json.dumps(doc))
    return out


def _stats(ts: str, n: int, prompt: int, output: int, read: int) -> dict:
    usage = {
        "model": "litellm_proxy/minimax-m2.7",
        "prompt_tokens": prompt,
        "completion_tokens": output,
        "cache_read_tokens": read,
        "cache_write_tokens": 0,
        "reasoning_tokens": 0,
        "context_window": 0,
        "per_turn_token": 0,
        "response_id": "",
    }
    metrics = {"model_name": "litellm_proxy/minimax-m2.7", "accumulated_cost": 0.0, "max_budget_per_task": None}
    return {
        "id": f"s{n}",
        "timestamp": ts,
        "source": "environment",
        "key": "stats",
        "value": {"usage_to_metrics": {"default": metrics | {"accumulated_token_usage": usage}}},
        "kind": "ConversationStateUpdateEvent",
    }


def minimax_events(path: Path, name: str, requests: int, miss_every: int) -> Path:
    """An OpenHands V1 event stream (``events.jsonl``, the SDK's event shapes) of litellm_proxy/minimax-m2.7:
    cumulative ``stats`` updates, each followed by the agent's terminal action and its observation. MiniMax
    reports no cache write; the server read the previous prompt except on every ``miss_every``-th request."""
    lines, logged, prev = [], 0, 0
    acc = {"prompt": 0, "output": 0, "read": 0}
    for k in range(requests):
        ts = f"2026-06-16T05:{k // 6:02d}:{(k % 6) * 10:02d}.000000"
        prompt = HIDDEN + logged
        read = 0 if k % miss_every == 0 else prev
        acc = {"prompt": acc["prompt"] + prompt, "output": acc["output"] + 120, "read": acc["read"] + read}
        lines.append(_stats(ts, k, acc["prompt"], acc["output"], acc["read"]))
        call = f"call-{k}"
        command = f"cat part{k}.txt"
        lines.append(
            {
                "id": f"a{k}",
                "timestamp": ts,
                "source": "agent",
                "thought": [{"type": "text", "text": f"Reading part {k}."}],
                "action": {
                    "command": command,
                    "is_input": False,
                    "timeout": None,
                    "reset": False,
                    "kind": "TerminalAction",
                },
                "tool_name": "terminal",
                "tool_call_id": call,
                "tool_call": {
                    "id": call,
                    "name": "terminal",
                    "arguments": json.dumps({"command": command}),
                    "origin": "completion",
                },
                "llm_response_id": f"resp-{k}",
                "kind": "ActionEvent",
            }
        )
        lines.append(
            {
                "id": f"o{k}",
                "timestamp": ts,
                "source": "environment",
                "tool_name": "terminal",
                "tool_call_id": call,
                "observation": {
                    "content": [{"type": "text", "text": _text(WORDS, k)}],
                    "is_error": False,
                    "command": command,
                    "exit_code": 0,
                    "kind": "TerminalObservation",
                },
                "action_id": f"a{k}",
                "kind": "ObservationEvent",
            }
        )
        logged += 140 + WORDS
        prev = prompt
    out = path / f"{name}.events.jsonl"
    out.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return out


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    logs = tmp_path_factory.mktemp("writers")
    files = [
        gemini_session(logs),
        minimax_events(logs, "minimax-fit", 24, 4),
        minimax_events(logs, "minimax-short", 1, 10),  # no informative request: the defaults
    ]
    return replayed_as_recorded(files, tmp_path_factory.mktemp("store") / "s.duckdb")


def _one(replayed: dict, part: str):
    found = [v for rid, v in replayed.items() if part in rid]
    assert len(found) == 1, (part, list(replayed))
    return found[0]


def _share(run, cols) -> tuple[float, float]:
    have = (run.rec_prompt > 0) & (run.rec_cache_read >= 0)
    recorded = run.rec_cache_read[have].sum() / run.rec_prompt[have].sum()
    return float(recorded), float(cols["cached_tokens"][have].sum() / cols["prompt_tokens"][have].sum())


def test_flagged_gemini_session_fits_its_own_reads(replayed):
    run, cols, row = _one(replayed, "session-2026-04-25")
    assert run.unreconstructable.startswith("context outside the log")
    assert run.cache_fit.name == "gemini" and run.cache_fit.source == "fit"
    recorded, simulated = _share(run, cols)
    assert abs(simulated - recorded) <= 0.05, (recorded, simulated)
    assert row["billed_cost_usd"] == pytest.approx(row["recorded_cost_usd"], rel=0.03)


def test_minimax_outside_claude_code_is_cached_and_billed_as_minimax(replayed):
    for part, source in (("minimax-fit", "fit"), ("minimax-short", "default")):
        run, cols, row = _one(replayed, part)
        assert not run.unreconstructable and run.cache_fit.source == source
        assert row["cache_model"] == run.cache_fit.name == "openai"  # fidelity's cache model is the bill's
        assert row["cache_read_per_mtok"] == pytest.approx(0.06)  # MiniMax-M2.7's listed read price
    run, cols, row = _one(replayed, "minimax-fit")
    recorded, simulated = _share(run, cols)
    assert abs(simulated - recorded) <= 0.05, (recorded, simulated)
    assert row["billed_cost_usd"] == pytest.approx(row["recorded_cost_usd"], rel=0.03)
