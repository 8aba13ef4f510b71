"""Every registered policy: one View per request, right types, valid pairing, config round-trips."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from replay.errors import ReplayError
from replay.policies import Budget, Policy, make_policy, registry
from replay.policies.view import DROPPED, Segment, View
from replay.simulator.caches import make_cache
from replay.simulator.kernels.trace import views_of
from replay.simulator.run import PolicyResultError, simulate_run
from tests.simulator.synth import synth_run

NAMES = sorted(registry())


def check_view(view: View, run, k: int) -> None:
    assert isinstance(view, View) and view.k == k and view.end == int(run.req_end[k])
    assert view.forms.shape == (view.end,) and view.seg_tokens.shape == (view.end,)
    assert (view.seg_tokens >= 0).all() and (view.seg_est >= 0).all()
    assert 0 <= view.dirty_from <= view.end
    segs = view.segments()
    assert all(isinstance(s, Segment) for s in segs)
    assert sum(s.tokens for s in segs) == view.prompt_tokens
    end = view.end
    calls = np.flatnonzero((run.pair[:end] >= 0) & (run.pair[:end] < end))
    dropped = view.forms == DROPPED
    assert (dropped[calls] == dropped[run.pair[calls]]).all(), "a tool call was split from its result"
    if view.summary_at >= 0:
        lo, hi = np.minimum(calls, run.pair[calls]), np.maximum(calls, run.pair[calls])
        assert not ((lo < view.summary_at) & (view.summary_at <= hi) & ~dropped[calls]).any()


@pytest.mark.parametrize("name", NAMES)
def test_one_view_per_step(name):
    run = synth_run(120, seed=3)
    for k, view in enumerate(views_of(run, make_policy(name), Budget(60_000, 8_000)).views):
        check_view(view, run, k)


@pytest.mark.parametrize("name", NAMES)
def test_simulate_rows(name):
    run = synth_run(60, seed=1)
    cols, row = simulate_run(run, make_policy(name), make_cache("anthropic"), Budget(50_000, 4_000))
    assert all(len(v) == run.n_requests for v in cols.values())
    assert row["requests"] == run.n_requests and 0 <= row["cache_hit_rate"] <= 1
    assert (cols["cached_tokens"] <= cols["prompt_tokens"]).all()


@pytest.mark.parametrize("name", NAMES)
def test_config_contract(name):
    cls = registry()[name]
    cfg = cls.Config.from_params({})
    assert json.loads(cfg.to_json())["kind"] == name
    with pytest.raises(ReplayError, match="unknown parameter"):
        cls.Config.from_params({"no_such_knob": "1"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.kind_extra = 1  # type: ignore[attr-defined]
    numeric = [f for f in dataclasses.fields(cls.Config) if f.metadata.get("lo") is not None]
    for f in numeric[:3]:
        with pytest.raises(ReplayError, match="out of bounds"):
            cls.Config.from_params({f.name: str(f.metadata["lo"] - 1)})


def test_bad_result_type_is_caught():
    class Broken(Policy):
        name = "broken"

        def step(self, k):
            return None

    with pytest.raises(PolicyResultError, match="expected View"):
        simulate_run(synth_run(5), Broken(), make_cache("none"))


def test_user_policy_by_import_path():
    policy = make_policy("replay.policies.masking:Masking", {"keep_last": "4"})
    assert policy.config.keep_last == 4
    with pytest.raises(ReplayError, match="cannot import"):
        make_policy("nope.module:Thing")
    with pytest.raises(ReplayError, match="unknown"):
        make_policy("no_such_policy")


def test_set_strings_are_typed():
    cfg = make_policy("clear_tool_uses", {"exclude_tools": "Read,Bash", "clear_tool_inputs": "true"}).config
    assert cfg.exclude_tools == ("Read", "Bash") and cfg.clear_tool_inputs is True
    with pytest.raises(ReplayError, match="expected an integer"):
        make_policy("seed_a", {"summary_at": "1.5"})
    with pytest.raises(ReplayError, match="choose one of"):
        make_policy("seed_a", {"estimator": "magic"})
