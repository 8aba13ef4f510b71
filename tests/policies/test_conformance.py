"""Every registered policy passes the conformance kit user policies import (replay.testing); the registry and the
generated compiled dispatch agree, and a policy missing from the dispatch cannot run."""

from __future__ import annotations

import pytest

import replay.policies.dispatch as dispatch
from replay.errors import ReplayError
from replay.policies import Policy, generate, make_policy, registry
from replay.simulator.caches import make_cache
from replay.simulator.run import simulate_run
from replay.testing import check_policy, synth_run
from replay.testing.conformance import check_acts

NAMES = sorted(registry())
SENDS_EVERYTHING = {"full", "recorded"}  # recorded replays the log's own events; a synthetic run has none


@pytest.mark.parametrize("name", NAMES)
def test_builtin_passes_the_conformance_kit(name):
    check_policy(make_policy(name), acts=name not in SENDS_EVERYTHING)


def test_the_generated_dispatch_is_current():
    assert not generate.stale(), f"{generate.TARGET} is stale: run `{generate.COMMAND}`"


def test_a_policy_left_out_of_the_dispatch_fails_loudly(monkeypatch, tmp_path):
    """Registered but not dispatched: before, such a policy ran silently as the full history. Now a dispatch.py
    without it is stale, and running it is refused, so the conformance kit fails too."""
    code = registry()["masking"].code
    edited = generate.render().replace(f'    "masking": {code},\n', "")
    assert edited != generate.render()
    (tmp_path / "dispatch.py").write_text(edited, encoding="utf-8")
    assert generate.stale(tmp_path / "dispatch.py")
    monkeypatch.delitem(dispatch.DISPATCHED, "masking")
    with pytest.raises(ReplayError, match=r"masking \(code \d+\) is registered but .* no such policy.*generate"):
        check_policy(make_policy("masking"))
    with pytest.raises(ReplayError, match="registered but"):
        check_acts(make_policy("masking"), synth_run(120, seed=3))


def test_an_error_in_a_python_policy_surfaces_with_its_request():
    """The compiled loop calls back into a policy written in Python; the policy's own error reaches the caller,
    naming the request and the run, and the loop does not call the policy again after it."""
    calls = []

    class Broken(Policy):
        name = "broken"

        def stages(self):
            return [(lambda: True, self.fail)]

        def fail(self):
            calls.append(self.k)
            if self.k == 3:
                raise ValueError("bad decision")

    with pytest.raises(ValueError, match="bad decision") as raised:
        simulate_run(synth_run(8), Broken(), make_cache("none"))
    assert "at request 3" in raised.value.__notes__ and calls == [0, 1, 2, 3]
    assert any("raised by policy broken" in note for note in raised.value.__notes__)


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
