"""OpenAI and DeepSeek cache a response with its prompt: the next request reads the output items it resends, figures
worked out here on a hand-made run."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from replay.policies import Budget, make_policy
from replay.run_arrays import build
from replay.simulator.caches import make_cache
from replay.simulator.run import simulate_run


def _run(resent: bool = True):
    """Request 0 sends 3,000 tokens and writes 300 of reasoning and a 200-token tool call; request 1 adds its
    800-token result and writes 100 of reasoning and 2,000 tokens of text; request 2 adds a 500-token user message.
    The reasoning is encrypted and sent back whole (codex-rs's own estimate of it: ``harness_estimates``)."""
    items = [
        {"step": 0, "kind": "system", "chars": 8000, "tokens": 2000},
        {"step": 0, "kind": "user_text", "chars": 4000, "tokens": 1000},
        {"step": 1, "kind": "reasoning", "chars": 1200, "tokens": 300},
        {"step": 1, "kind": "tool_call", "chars": 800, "tokens": 200},
        {"step": 1, "kind": "tool_result", "chars": 3200, "tokens": 800},
        {"step": 2, "kind": "reasoning", "chars": 400, "tokens": 100},
        {"step": 2, "kind": "assistant_text", "chars": 8000, "tokens": 2000},
        {"step": 2, "kind": "user_text", "chars": 2000, "tokens": 500},
    ]
    prompts = [3000, 4300, 6900]
    reqs = [
        {"step": k, "ts": "2026-04-20T23:51:31+00:00", "prompt_tokens": p, "cache_read": 0, "input_tokens": p}
        for k, p in enumerate(prompts)
    ]
    run = build("r", items, reqs, "real:test", "gpt-5.4")
    run.req_ts[:] = 1.7e9 + np.arange(3) * 10.0
    estimates = np.zeros(len(items), dtype=np.int64)
    estimates[[2, 5]] = [280, 90]
    return replace(run, harness_est=estimates if resent else None)


def _reads(cache: str, resent: bool = True) -> list[int]:
    cols, _ = simulate_run(_run(resent), make_policy("recorded"), make_cache(cache), Budget(10**9))
    return cols["cached_tokens"].tolist()


def test_openai_reads_the_previous_response_output_too():
    # request 1: the 3,000-token prompt and its 500 output tokens, in 128s; request 2: 4,300 + 2,100 (main: 2,944
    # and 4,224, the previous prompt alone)
    assert _reads("openai") == [0, 3456, 6400]


def test_deepseek_stores_a_unit_where_the_output_ends():
    """DeepSeek stores a unit where the model's output ends too, the response as generated, its reasoning first;
    Claude Code sends its thinking blocks back as the log holds them, so the log sizes the reasoning whether or not
    a harness estimates it: request 1 reads 3,000 + 300 + 200 in 64s, request 2 4,300 + 2,100 (before: the previous
    prompt alone, 2,944 and 4,288)."""
    assert _reads("deepseek") == [0, 3456, 6400]
    assert _reads("deepseek", resent=False) == [0, 3456, 6400]


def test_reasoning_the_log_does_not_size_is_not_read_past():
    """Reasoning kept only as a summary (no encrypted content the harness sends back: the Codex TUI session log)."""
    assert _reads("openai", resent=False) == [0, 2944, 4224]


def test_output_without_its_reasoning_is_not_read():
    """A response whose reasoning is not resent (Chat Completions: the log holds none) leaves the next prompt
    differing right after the previous one: only that prompt is read."""
    items = [
        {"step": 0, "kind": "system", "chars": 8000, "tokens": 2000},
        {"step": 0, "kind": "user_text", "chars": 4000, "tokens": 1000},
        {"step": 1, "kind": "assistant_text", "chars": 800, "tokens": 200},
        {"step": 2, "kind": "user_text", "chars": 2000, "tokens": 500},
    ]
    reqs = [
        {"step": k, "ts": "2026-04-20T23:51:31+00:00", "prompt_tokens": p, "cache_read": 0, "input_tokens": p}
        for k, p in enumerate([3000, 3200, 3700])
    ]
    plain = build("r", items, reqs, "real:test", "gpt-5-mini")
    plain.req_ts[:] = 1.7e9 + np.arange(3) * 10.0
    cols, _ = simulate_run(plain, make_policy("recorded"), make_cache("openai"), Budget(10**9))
    assert cols["cached_tokens"].tolist() == [0, 2944, 3200]  # 3,000 and 3,200 in 128s
