"""Must-show property: at the same budget no policy has fewer evicted repeat reads than the oracle's bound."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay.metrics.oracle_bound import oracle_bound
from replay.policies import Budget, Policy, make_policy, registry
from replay.policies.view import OMITTED, ORIGINAL
from replay.simulator.caches import make_cache
from replay.simulator.kernels.trace import views_of
from replay.simulator.run import simulate_run
from tests.simulator.synth import synth_run


class LargestFirst(Policy):
    """Over budget, omit the largest items first (never the prefix or the newest request's items); no restore."""

    name = "largest_first"

    def setup(self) -> None:
        self.define(OMITTED, np.zeros(self.run.n_items, np.int64), np.zeros(self.run.n_items, np.int64))

    def stages(self):
        return [(lambda: self.total() > self.budget.usable, self.decide)]

    def total(self) -> int:
        return int(self.ftok[self.forms[: self.end], self.idx[: self.end]].sum())

    def decide(self) -> None:
        newest = int(self.run.req_end[self.k - 1]) if self.k > 0 else 0
        pos = np.arange(self.prefix_end(), newest)
        pos = pos[self.forms[pos] == ORIGINAL]
        order = pos[np.argsort(-self.ftok[ORIGINAL, pos], kind="stable")]
        upto = int(np.searchsorted(np.cumsum(self.ftok[ORIGINAL, order]), self.total() - self.budget.usable)) + 1
        self.set_forms(order[:upto], OMITTED)


BOUNDED = [*sorted(registry()), "largest_first"]  # seed A, full, drop_oldest, masking, clear_tool_uses, B, C...


def evicted_and_room(name: str, run, budget: Budget) -> tuple[int, np.ndarray, bool]:
    """The policy's evicted repeat reads as the simulator counts them, the room it used per request (its prompt
    where it overflowed, else the budget) and whether it ever brought an evicted item back intact."""
    policy = LargestFirst() if name == "largest_first" else make_policy(name)
    cols, row = simulate_run(run, policy, make_cache("none"), budget)
    seen = views_of(run, policy, budget).views
    restored = False
    for prev, v in zip([None, *seen], seen, strict=False):
        assert (v.forms[: run.first_body] == ORIGINAL).all(), f"{name} trimmed the harness prefix"
        if prev is not None:
            restored |= bool(((v.forms[: prev.end] == ORIGINAL) & (prev.forms != ORIGINAL)).any())
    return row["repeat_evicted"], np.maximum(budget.usable, cols["prompt_tokens"]), restored


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(5, 50),
    chars=st.tuples(st.integers(10, 4_000), st.integers(4_000, 60_000)),
    files=st.integers(1, 6),
    ranges=st.booleans(),
    budget=st.builds(Budget, window=st.integers(6_000, 60_000), reserve=st.integers(0, 4_000)),
    name=st.sampled_from(BOUNDED),
)
def test_no_policy_beats_the_oracle_bound(seed, n, chars, files, ranges, budget, name):
    """At the same budget (window - reserve, harness prefix counted) no policy has fewer evicted repeat reads
    than the LP bound; a policy that never restores an evicted item not fewer than the no-restore bound either.
    Where a policy overflowed it is held to the room it used (its own prompt)."""
    run = synth_run(n, seed=seed, result_chars=chars, files=files, ranges=ranges)
    evicted, used, restored = evicted_and_room(name, run, budget)
    bound = oracle_bound(run, used)
    assert bound.lp <= bound.bound <= evicted
    if not restored:
        strict = oracle_bound(run, used, restore=False)
        assert strict.lp <= strict.bound <= evicted, f"{name} beat the no-restore bound"
        assert strict.bound >= bound.bound
