"""What every policy must do, as checks a policy author's own tests import (built-ins pass the same checks).

Use from pytest: subclass :class:`PolicyConformance` and give it a ``policy`` fixture; every ``test_*`` method
below then runs against that policy::

    from replay.testing import PolicyConformance

    class TestMyPolicy(PolicyConformance):
        @pytest.fixture
        def policy(self):
            return MyPolicy()

or call :func:`check_policy` (it raises AssertionError naming the first broken rule).

The rules: one View per request, for that request, with non-negative costs that add up; a tool call never split
from its result (nor cut by the summary); the run row's counters consistent; the config frozen, its unknown keys
and out-of-bounds values refused; and the policy *does something*: on a run whose full history overflows the
window, some request's prompt differs from the full history's (a no-op, or a registered policy the compiled
dispatch does not run, fails here).
"""

from __future__ import annotations

import dataclasses
import json
from typing import ClassVar

import numpy as np
import pytest

from replay.errors import ReplayError
from replay.policies import AnyPolicy, Budget, make_policy
from replay.policies.view import DROPPED, Segment, View
from replay.run_arrays import RunArrays
from replay.simulator.caches import make_cache
from replay.simulator.kernels.trace import views_of
from replay.simulator.run import simulate_run
from replay.testing.runs import synth_run

BUDGET = Budget(60_000, 8_000)  # the synthetic run's full history passes window - reserve after a dozen requests


def check_view(view: View, run: RunArrays, k: int) -> None:
    """Request k's view: the right request and length, non-negative costs that add up, pairs kept whole."""
    assert isinstance(view, View), f"request {k}: got {type(view).__name__}, expected View"
    assert view.k == k and view.end == int(run.req_end[k]), f"request {k}: view is for request {view.k}"
    assert view.forms.shape == (view.end,) and view.seg_tokens.shape == (view.end,), f"request {k}: wrong length"
    assert (view.seg_tokens >= 0).all() and (view.seg_est >= 0).all(), f"request {k}: negative tokens"
    assert 0 <= view.dirty_from <= view.end, f"request {k}: dirty_from {view.dirty_from} outside [0, {view.end}]"
    segs = view.segments()
    assert all(isinstance(s, Segment) for s in segs)
    assert sum(s.tokens for s in segs) == view.prompt_tokens, f"request {k}: segments do not add up to the prompt"
    end = view.end
    calls = np.flatnonzero((run.pair[:end] >= 0) & (run.pair[:end] < end))
    dropped = view.forms == DROPPED
    assert (dropped[calls] == dropped[run.pair[calls]]).all(), f"request {k}: a tool call was split from its result"
    if view.summary_at >= 0:
        lo, hi = np.minimum(calls, run.pair[calls]), np.maximum(calls, run.pair[calls])
        cut = (lo < view.summary_at) & (view.summary_at <= hi) & ~dropped[calls]
        assert not cut.any(), f"request {k}: the summary at {view.summary_at} stands between a call and its result"


def check_views(policy: AnyPolicy, run: RunArrays, budget: Budget = BUDGET) -> None:
    """One valid view per request of ``run``."""
    views = views_of(run, policy, budget).views
    assert len(views) == run.n_requests, f"{len(views)} views for {run.n_requests} requests"
    for k, view in enumerate(views):
        check_view(view, run, k)


def check_row(policy: AnyPolicy, run: RunArrays, budget: Budget = BUDGET) -> None:
    """The simulated run row and columns: one value per request, cache reads within the prompt."""
    cols, row = simulate_run(run, policy, make_cache("anthropic"), budget)
    assert all(len(v) == run.n_requests for v in cols.values()), "a per-request column has the wrong length"
    assert row["requests"] == run.n_requests and 0 <= row["cache_hit_rate"] <= 1
    assert (cols["cached_tokens"] <= cols["prompt_tokens"]).all(), "more tokens read from cache than sent"


def check_config(policy: AnyPolicy) -> None:
    """The config names the policy, round-trips through JSON, is frozen and refuses unknown or out-of-bounds knobs."""
    cls = type(policy)
    cfg = cls.Config.from_params({})
    assert json.loads(cfg.to_json())["kind"] == cls.name, f"{cls.Config.__name__}.kind is not {cls.name!r}"
    with pytest.raises(ReplayError, match="unknown parameter"):
        cls.Config.from_params({"no_such_knob": "1"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.kind_extra = 1  # type: ignore[attr-defined]  # the point: a frozen config refuses it
    numeric = [f for f in dataclasses.fields(cls.Config) if f.metadata.get("lo") is not None]
    for f in numeric[:3]:
        with pytest.raises(ReplayError, match="out of bounds"):
            cls.Config.from_params({f.name: str(f.metadata["lo"] - 1)})
    for knob in cls.space:
        assert knob.name in {f.name for f in dataclasses.fields(cls.Config)}, f"space names no knob {knob.name!r}"


def check_acts(policy: AnyPolicy, run: RunArrays, budget: Budget = BUDGET) -> None:
    """On a run whose full history overflows, the policy changes some request's prompt: it is not a no-op."""
    full = [v.prompt_tokens for v in views_of(run, make_policy("full"), budget).views]
    assert max(full) + budget.reserve > budget.window, "the test run must overflow under the full history"
    mine = [v.prompt_tokens for v in views_of(run, policy, budget).views]
    assert mine != full, (
        f"policy {policy.name} sends the full history at every request of a run that overflows the window: it "
        "does nothing (is its trigger below window - reserve? is it in the generated dispatch?)"
    )


def check_policy(policy: AnyPolicy, run: RunArrays | None = None, budget: Budget = BUDGET, acts: bool = True) -> None:
    """Every rule above on ``run`` (default: a synthetic 120-request tool loop); ``acts=False`` for a policy that
    is meant to send everything (the full-history baseline)."""
    run = run if run is not None else synth_run(120, seed=3)
    check_config(policy)
    check_views(policy, run, budget)
    check_row(policy, synth_run(60, seed=1), Budget(50_000, 4_000))
    if acts:
        check_acts(policy, run, budget)


class PolicyConformance:
    """The rules as pytest tests: subclass, provide a ``policy`` fixture (and, to change them, ``run`` and
    ``budget``); set ``acts = False`` only for a policy meant to send everything."""

    acts: ClassVar[bool] = True

    @pytest.fixture
    def policy(self) -> AnyPolicy:
        raise NotImplementedError("override the `policy` fixture: return the policy under test")

    @pytest.fixture
    def run(self) -> RunArrays:
        return synth_run(120, seed=3)

    @pytest.fixture
    def budget(self) -> Budget:
        return BUDGET

    def test_config(self, policy: AnyPolicy) -> None:
        check_config(policy)

    def test_one_view_per_request(self, policy: AnyPolicy, run: RunArrays, budget: Budget) -> None:
        check_views(policy, run, budget)

    def test_run_row(self, policy: AnyPolicy) -> None:
        check_row(policy, synth_run(60, seed=1), Budget(50_000, 4_000))

    def test_not_a_no_op(self, policy: AnyPolicy, run: RunArrays, budget: Budget) -> None:
        if not self.acts:
            pytest.skip("this policy is meant to send everything")
        check_acts(policy, run, budget)
