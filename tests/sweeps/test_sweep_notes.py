"""The sweep says once, on its note channel, when its policy is written in Python (request by request, far slower
than the compiled built-ins)."""

from __future__ import annotations

import pytest

from replay.sweeps import executors, from_dict, run_sweep

PYTHON_POLICY = "tests.simulator.test_oracle_property:LargestFirst"


class NoCompute(executors.Executor):
    """An executor that computes nothing: one error-free row per run."""

    def map(self, ctx, tasks):
        for pid, _ in tasks:
            yield (
                pid,
                [
                    {
                        "sweep_id": ctx.sweep_id,
                        "point_id": pid,
                        "session": ctx.session,
                        "run_id": r.run_id,
                        "error": None,
                    }
                    for r in ctx.runs
                ],
            )


@pytest.mark.parametrize(
    ("policy", "grid", "said"),
    [
        (
            PYTHON_POLICY,
            {},
            [
                f"policy {PYTHON_POLICY} is written in Python: every point calls back into Python for "
                "each request's decision, far slower than the compiled built-in policies"
            ],
        ),
        ("seed_a", {"protect": [8000, 12000]}, []),
    ],
)
def test_a_python_policy_is_named_as_slow(sample_db, monkeypatch, policy, grid, said):
    monkeypatch.setitem(executors.EXECUTORS, "serial", NoCompute)
    spec = from_dict({"sweep": {"policy": policy, "runs": "%short%"}, "fixed": {"window": 60000}, "grid": grid})
    notes: list[str] = []
    run_sweep(sample_db, spec, executor="serial", progress=False, note=notes.append)
    assert notes == said
