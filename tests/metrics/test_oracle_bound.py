"""The oracle bound: LP relaxation and integral optimum of offline eviction, against Belady and real policies."""

from __future__ import annotations

import numpy as np

from replay.metrics.oracle_bound import oracle_bound
from replay.metrics.repeat_reads import read_events
from replay.policies import Budget, Policy, make_policy
from replay.policies.view import OMITTED, ORIGINAL
from replay.run_arrays import build
from replay.simulator.caches import make_cache
from replay.simulator.run import simulate_run
from tests.simulator.test_oracle_property import LargestFirst


def run_of(steps: list[list[tuple[str, int]]], system: int = 10, name: str = "hand"):
    """Per request step a list of (file, result tokens) reads; every call and the user message cost 1 token."""
    items = [
        {"step": 0, "kind": "system", "chars": 4 * system, "tokens": system},
        {"step": 0, "kind": "user_text", "chars": 4, "tokens": 1},
    ]
    cid = 0
    for s, reads in enumerate(steps, start=1):
        for f, size in reads:
            cid += 1
            items += [
                {
                    "step": s,
                    "kind": "tool_call",
                    "tool_name": "Read",
                    "call_id": f"c{cid}",
                    "resource": f,
                    "access": "read",
                    "chars": 4,
                    "tokens": 1,
                },
                {
                    "step": s,
                    "kind": "tool_result",
                    "call_id": f"c{cid}",
                    "resource": f,
                    "access": "read",
                    "chars": 4 * size,
                    "tokens": size,
                },
            ]
    return build(name, items, [{"step": k} for k in range(len(steps) + 1)], "real:test")


# s1, s2 (30 each) are needed far, L (60) soon; N (40) arrives and 41 tokens must go at request 4.
UNEQUAL = [[("s1", 30)], [("s2", 30)], [("L", 60)], [("N", 40)], [("L", 1)], [("s2", 1)], [("s1", 1)]]


def evicted(policy: Policy, run, budget: Budget) -> int:
    return simulate_run(run, policy, make_cache("none"), budget)[1]["repeat_evicted"]


def test_belady_is_beaten_by_largest_first_and_the_bound_is_not():
    """The issue's case: with unequal sizes Belady evicts two small outputs where one large one would do."""
    run = run_of(UNEQUAL)
    budget = Budget(134 + 1_000, 1_000)
    assert evicted(make_policy("oracle"), run, budget) == 2
    assert evicted(LargestFirst(), run, budget) == 1
    for restore in (True, False):
        b = oracle_bound(run, budget.usable, restore=restore)
        assert b.lp <= b.bound <= 1 and b.exact is not None


class KeepNeeded(Policy):
    """Keeps intact only the outputs repeat reads decided at this request need (and the prefix): restores freely."""

    name = "keep_needed"

    def setup(self) -> None:
        self.define(OMITTED, np.zeros(self.run.n_items, np.int64), np.zeros(self.run.n_items, np.int64))
        ev = read_events(self.run)
        self.need = {k: ev.prev_result[ev.decide == k] for k in range(self.run.n_requests)}

    def stages(self):
        return [(lambda: True, self.decide)]

    def decide(self) -> None:
        self.set_forms(np.arange(self.prefix_end(), self.end), OMITTED)
        self.set_forms(self.need[self.k], ORIGINAL)


def test_the_integral_optimum_is_attained_by_a_policy():
    run = run_of(UNEQUAL)
    usable = 75  # the prefix (10) and L (60) fit, nothing else needed at a time
    _, row = simulate_run(run, KeepNeeded(), make_cache("none"), Budget(usable))
    assert row["overflow_incidents"] == 0 and row["repeat_evicted"] == oracle_bound(run, usable).exact == 0
    assert oracle_bound(run, usable, restore=False).exact == 1  # never restoring: L or both s1 and s2 must go


def test_two_outputs_needed_together_that_do_not_fit():
    """Two 60-token outputs re-read in the same response with room for 100: one read is evicted (LP: 1/3)."""
    run = run_of([[("a", 60)], [("b", 60)], [("a", 1), ("b", 1)]])
    b = oracle_bound(run, 110)
    assert (b.events, b.exact, b.forced) == (2, 1, 0)
    assert abs(b.lp - 1 / 3) < 1e-6


def test_prefix_counts_against_the_budget():
    """An output that fits the budget but not beside the harness prefix must be evicted: forced."""
    run = run_of([[("a", 60)], [("a", 1)]], system=50)
    assert oracle_bound(run, 100).forced == 1 and oracle_bound(run, 100).bound == 1
    assert oracle_bound(run, 110).bound == 0


def test_changed_reads_are_never_evicted():
    """A re-read after an edit of the file is ``changed``: no budget makes it evicted."""
    run = run_of([[("a", 60)], [("a", 1)]])
    assert oracle_bound(run, 0).bound == 1
    items = [
        {
            "step": int(s),
            "kind": k,
            "chars": 4,
            "tokens": int(t),
            "call_id": c,
            "resource": "a",
            "access": acc,
            "tool_name": "Edit" if acc == "write" else "Read",
        }
        for s, k, t, c, acc in [
            (1, "tool_call", 1, "r1", "read"),
            (1, "tool_result", 60, "r1", "read"),
            (2, "tool_call", 1, "w", "write"),
            (2, "tool_result", 1, "w", "write"),
            (3, "tool_call", 1, "r2", "read"),
            (3, "tool_result", 1, "r2", "read"),
        ]
    ]
    edited = build("edited", items, [{"step": k} for k in range(4)], "real:test")
    assert read_events(edited).changed.tolist() == [True]
    assert oracle_bound(edited, 0).events == 0 and oracle_bound(edited, 0, restore=False).bound == 0


def test_policy_room_where_it_overflowed():
    """Per-request capacity: a policy that overflowed is bounded at the prompt it sent."""
    run = run_of(UNEQUAL)
    cols, row = simulate_run(run, make_policy("full"), make_cache("none"), Budget(100))
    assert row["overflow_incidents"] > 0 and row["repeat_evicted"] == 0
    assert oracle_bound(run, np.maximum(100, cols["prompt_tokens"])).bound == 0
    assert oracle_bound(run, 100, restore=False).bound > 0


def test_belady_beside_the_bounds():
    """Belady (simulated) evicts more than the bounds, which hold for any policy and for those that never restore."""
    run, budget = run_of(UNEQUAL), Budget(1_134, 1_000)
    any_policy, no_restore = oracle_bound(run, budget.usable), oracle_bound(run, budget.usable, restore=False)
    _, sim = simulate_run(run, make_policy("oracle"), make_cache("none"), budget)
    assert (any_policy.events, sim["repeat_evicted"], any_policy.bound, no_restore.bound) == (3, 2, 0, 0)
    assert any_policy.lp <= any_policy.bound and sim["overflow_incidents"] == 0
