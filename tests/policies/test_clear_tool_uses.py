"""clear_tool_uses_20250919 as the server applies it: every request past the trigger, on the full history."""

from __future__ import annotations

import numpy as np

from replay.policies import Budget, make_policy
from replay.policies.view import ORIGINAL, PLACEHOLDER, SHRUNK
from replay.run_arrays import TOOL_CALL, TOOL_RESULT, build
from replay.simulator.kernels.trace import views_of


def tool_run(n: int = 10, size: int = 1_000, tools: tuple[str, ...] = ("Read", "Bash")):
    items: list[dict] = [
        {"step": 0, "kind": "system", "chars": 4_000, "tokens": 1_000},
        {"step": 0, "kind": "user_text", "chars": 400, "tokens": 100},
    ]
    for k in range(n):
        name = tools[k % len(tools)]
        items += [
            {"step": k + 1, "kind": "tool_call", "chars": 200, "tokens": 50, "call_id": f"c{k}", "tool_name": name},
            {
                "step": k + 1,
                "kind": "tool_result",
                "chars": 4 * size,
                "tokens": size,
                "call_id": f"c{k}",
                "tool_name": name,
            },
        ]
    return build("tools", items, [{"step": k} for k in range(n + 1)], "real:test")


def run_views(run, params):
    return views_of(run, make_policy("clear_tool_uses", params), Budget(10**9)).views


def test_every_request_past_the_input_token_trigger_clears_all_but_keep():
    run = tool_run()
    results = np.flatnonzero(run.kind == TOOL_RESULT)
    vs = run_views(run, {"trigger": "5000", "keep": "2"})
    for v in vs:
        full = int(run.tokens[: v.end].sum())
        seen = results[results < v.end]
        cleared = seen[v.forms[seen] == PLACEHOLDER]
        if full > 5_000:
            assert list(cleared) == list(seen[:-2]), v.k  # grows with the history, request by request
        else:
            assert not len(cleared), v.k
    assert vs[-1].seg_tokens[results[0]] < 20  # "[Old tool result content cleared]"


def test_tool_uses_trigger_counts_tool_uses():
    run = tool_run()
    results = np.flatnonzero(run.kind == TOOL_RESULT)
    vs = run_views(run, {"trigger_type": "tool_uses", "trigger": "4", "keep": "1"})
    for v in vs:
        seen = results[results < v.end]
        n_cleared = int((v.forms[seen] == PLACEHOLDER).sum())
        assert n_cleared == (len(seen) - 1 if len(seen) > 4 else 0), v.k


def test_clear_at_least_and_exclude_tools():
    run = tool_run()
    none = run_views(run, {"trigger": "0", "keep": "2", "clear_at_least": "1000000"})
    assert all((v.forms == ORIGINAL).all() for v in none)
    vs = run_views(run, {"trigger": "0", "keep": "0", "exclude_tools": "Bash"})
    last = vs[-1]
    names = np.array([run.tool_names[t] if t >= 0 else "" for t in run.tool])
    results = np.flatnonzero(run.kind == TOOL_RESULT)
    assert (last.forms[results[names[results] == "Bash"]] == ORIGINAL).all()
    assert (last.forms[results[names[results] == "Read"]] == PLACEHOLDER).all()


def test_clear_tool_inputs_bool_or_list():
    run = tool_run()
    calls = np.flatnonzero(run.kind == TOOL_CALL)
    names = np.array([run.tool_names[t] for t in run.tool[calls]])
    assert make_policy("clear_tool_uses", {"clear_tool_inputs": "Read"}).config.clear_tool_inputs == ("Read",)
    every = run_views(run, {"trigger": "0", "keep": "0", "clear_tool_inputs": "true"})[-1]
    assert (every.forms[calls] == SHRUNK).all()
    listed = run_views(run, {"trigger": "0", "keep": "0", "clear_tool_inputs": "Read"})[-1]
    assert (listed.forms[calls[names == "Read"]] == SHRUNK).all()
    assert (listed.forms[calls[names == "Bash"]] == ORIGINAL).all()
    off = run_views(run, {"trigger": "0", "keep": "0"})[-1]
    assert (off.forms[calls] == ORIGINAL).all()
