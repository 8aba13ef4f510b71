"""masking (keep_last M) and SWE-agent last_n_observations (n, polling, exact placeholder) on hand-made runs."""

from __future__ import annotations

import numpy as np
import pytest

from replay.errors import ReplayError
from replay.policies import Budget, make_policy
from replay.policies.view import ORIGINAL, PLACEHOLDER
from replay.run_arrays import build
from replay.simulator.kernels.trace import views_of
from tests.policies.handmade import loop_run


def masked(run, name, params=None):
    """(the policy, its views, per request the positions shown as placeholders)."""
    policy = make_policy(name, params)
    out = views_of(run, policy, Budget(10**9))
    return policy, out, [np.flatnonzero(v.forms == PLACEHOLDER) for v in out.views]


def test_masking_keeps_the_newest_keep_last_results():
    run = loop_run([500] * 8)
    _, _, out = masked(run, "masking", {"keep_last": "3"})
    results = np.flatnonzero(run.kind == 6)
    assert list(out[8]) == list(results[:5])
    with pytest.raises(ReplayError, match="unknown parameter"):
        make_policy("masking", {"window": "3"})  # `window` is the context window only


@pytest.mark.parametrize("n,polling", [(5, 1), (2, 3), (3, 4)])
def test_last_n_follows_swe_agent_polling_formula(n, polling):
    """Observations are the instance template plus the results; [1, (count // polling) * polling - n) elided."""
    run = loop_run([500] * 15)
    results = np.flatnonzero(run.kind == 6)
    _, _, out = masked(run, "last_n", {"n": str(n), "polling": str(polling)})
    for k in range(run.n_requests):
        count = 1 + k  # the template and the k results request k sees
        last_removed = max(0, (count // polling) * polling - n)
        assert list(out[k]) == list(results[: max(last_removed - 1, 0)]), k


def test_last_n_without_a_template_never_elides_the_first_result():
    items = [{"step": 0, "kind": "system", "chars": 400, "tokens": 100}]
    for k in range(8):
        items += [
            {"step": k + 1, "kind": "tool_call", "chars": 40, "tokens": 10, "call_id": f"c{k}"},
            {"step": k + 1, "kind": "tool_result", "chars": 400, "tokens": 100, "call_id": f"c{k}"},
        ]
    run = build("no-template", items, [{"step": k} for k in range(9)], "real:test")
    results = np.flatnonzero(run.kind == 6)
    _, _, out = masked(run, "last_n", {"n": "2"})
    assert list(out[8]) == list(results[1:6])


def test_last_n_placeholder_text_and_its_tokens():
    run = loop_run([4_000] * 8, lines=123)
    policy, views, out = masked(run, "swe-agent-last-n")
    p = int(out[8][0])
    assert policy.wording_of(p, run) == "Old environment output: (123 lines omitted)"
    ratio = run.tokens.sum() / run.chars.sum()  # real counts: the wording at the run's tokens per character
    assert views.ftok[PLACEHOLDER, p] == int(np.ceil(len("Old environment output: (123 lines omitted)") * ratio))
    estimated = build(
        "est",
        [
            {"step": 0, "kind": "user_text", "chars": 40},
            {"step": 1, "kind": "tool_call", "chars": 40, "call_id": "a"},
            {"step": 1, "kind": "tool_result", "chars": 4_000, "call_id": "a", "lines": 7},
        ],
        [{"step": 0}, {"step": 1}],
    )
    _, views, _ = masked(estimated, "last_n", {"n": "1"})
    assert views.ftok[PLACEHOLDER, 2] == (len("Old environment output: (7 lines omitted)") + 3) // 4  # chars/4
    assert views.views[-1].forms[2] == ORIGINAL
