"""A request another provider served keeps its entries that provider's TTL (``RunArrays.req_ttl``,
replay.simulator.cache_fit.request_ttls), in the compiled loop every policy runs in.

Cline 3.x through its own router (a real task of this shape: xAI's grok-code-fast-1, then Claude Sonnet 4.5): the
run's cache is xAI's automatic one (OpenAI's rules, 600 s), but the requests on Claude are cached by Anthropic's
explicit breakpoints, which keep a prefix 5 minutes. After 586 s idle the log reads nothing; a replay under the
run's TTL read the whole prefix there.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from replay.policies import make_policy
from replay.simulator.load import load_runs
from replay.simulator.run import simulate_run
from replay.simulator.run_output import bill_gap
from tests.simulator.cc_switch import store

GROK, SONNET = "x-ai/grok-code-fast-1", "anthropic/claude-sonnet-4.5"
IDLE = 586_000  # ms before the last request


def cline_task(tmp_path: Path):
    """Three requests on grok, a switch to Sonnet (its first request reads nothing: another model), two more
    within seconds, then one after 586 s idle that reads nothing again."""
    ui: list[dict] = [{"ts": 1_700_000_000_000, "type": "say", "say": "task", "text": "start"}]
    ts, prompt, before = 1_700_000_000_000, 0, 0
    for k in range(6):
        model = GROK if k < 3 else SONNET
        text = chr(ord("a") + k) * (4 * 3_000)
        prompt += 3_000
        ts += IDLE if k == 5 else 5_000
        read = 0 if k in (0, 3, 5) else before
        usage = {"tokensIn": prompt - read, "tokensOut": 20, "cacheWrites": 0, "cacheReads": read, "cost": 0}
        before = prompt
        started = {"request": f"<task>{text}</task>" if k == 0 else text, **usage}
        ui.append(
            {
                "ts": ts,
                "type": "say",
                "say": "api_req_started",
                "text": json.dumps(started),
                "modelInfo": {"modelId": model, "providerId": "cline", "mode": "act"},
                "conversationHistoryIndex": 2 * k,
            }
        )
        ui.append({"ts": ts + 2_000, "type": "say", "say": "text", "text": f"done {k}"})
    con = store(tmp_path, ui, "ui_messages.json", "tasks/1700000000000")
    (run,) = load_runs(con, None)
    return run


def test_the_serving_providers_ttl_expires_its_entries(tmp_path: Path) -> None:
    run = cline_task(tmp_path)
    assert run.req_ttl.tolist() == [0, 0, 0, 300, 300, 300]  # Anthropic's 5 minutes on Claude, the run's elsewhere
    policy = make_policy("recorded", {})
    cols, _ = simulate_run(run, policy, None)
    assert cols["cached_tokens"][5] == 0 and cols["cached_tokens"][4] > 0  # the log's reads: 0 after the idle gap
    flat, _ = simulate_run(replace(run, req_ttl=np.zeros(0)), policy, None)
    assert flat["cached_tokens"][5] > 0  # under the run's 600 s it read the prefix the server had dropped
    assert "request (5)" not in bill_gap(run)  # the replay loses it too: no gap to name there
