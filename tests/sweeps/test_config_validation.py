"""Every knob, sweep TOML value and budget number is checked: a clear error naming the key and the allowed range."""

from __future__ import annotations

import math
import sys
import textwrap
from pathlib import Path

import pytest

from replay.errors import ReplayError
from replay.policies import Budget, make_policy
from replay.simulator.caches import make_cache
from replay.sweeps import from_dict, run_sweep
from replay.sweeps.adapter import resolve
from replay.sweeps.spec import load_spec
from replay.worker_limits import cap_workers

SHORT = "%short%"


def doc(grid: dict | None = None, fixed: dict | None = None, **sweep) -> dict:
    return {
        "sweep": {"policy": "seed_a", "runs": SHORT, **sweep},
        "fixed": {"window": 60000, "reserve": 8000, **(fixed or {})},
        "grid": grid or {"protect": [12000]},
    }


@pytest.mark.parametrize(
    ("window", "reserve", "match"),
    [
        (0, 0, "window=0"),
        (-5, 0, "window=-5"),
        (1000, 1000, "reserve=1000"),
        (1000, -1, "reserve=-1"),
        (1000, 5000, "reserve=5000"),
        (1000.0, 0, "window=1000.0"),
        ("big", 0, "window='big'"),
        (True, 0, "window=True"),
    ],
)
def test_budget_is_checked(window, reserve, match):
    with pytest.raises(ReplayError, match=match):
        Budget(window, reserve)


@pytest.mark.parametrize(
    ("key", "value", "match"),
    [
        ("margin", math.nan, "margin=nan: expected a finite number"),
        ("margin", "nan", "margin='nan': expected a finite number"),
        ("margin", math.inf, "margin=inf: expected a finite number"),
        ("margin", 2.0, "margin=2.0 out of bounds; allowed: 0.0 to 0.95"),
        ("summary_at", True, "summary_at=True: expected a number, not true/false"),
        ("summary_at", "true", "summary_at='true': expected a number"),
        ("summary_at", 0, "summary_at=0 out of bounds; allowed: 1 to 10,000,000"),
        ("summary_at", 1.5, "summary_at=1.5: expected an integer"),
    ],
)
def test_policy_knobs_are_checked(key, value, match):
    with pytest.raises(ReplayError, match=match.replace("(", r"\(").replace(")", r"\)")):
        make_policy("seed_a", {key: value})


@pytest.mark.parametrize(
    ("params", "match"),
    [({"ttl": -1}, "ttl=-1"), ({"ttl": 0}, "ttl=0"), ({"ttl": math.nan}, "ttl=nan"), ({"ttl": "x"}, "ttl='x'")],
)
def test_cache_parameters_are_checked(params, match):
    with pytest.raises(ReplayError, match=match):
        make_cache("anthropic", **params)


@pytest.mark.parametrize(
    ("document", "match"),
    [
        (doc(batch="x"), r"\[sweep\] batch = 'x': expected a finite number"),
        (doc(batch=0), r"\[sweep\] batch = 0: expected a whole number, 1 or more"),
        (doc(samples=math.inf), r"\[sweep\] samples = inf"),
        (doc(seed=-1), r"\[sweep\] seed = -1"),
        (doc(name="../../escape"), r"name = '../../escape'"),
        (doc(name=".hidden"), r"name = '.hidden'"),
        (
            doc(grid={"a": list(range(40)), "b": list(range(40)), "c": list(range(40)), "d": list(range(40))}),
            r"2,560,000 points",
        ),
        (
            {
                "sweep": {"policy": "seed_a", "mode": "random"},
                "random": {"summary_at": {"low": 0, "high": 9, "log": True}},
            },
            r"\[random\] summary_at: log = true needs low > 0",
        ),
        (
            {"sweep": {"policy": "seed_a", "mode": "random"}, "random": {"summary_at": {"low": 1, "high": math.inf}}},
            r"\[random\] summary_at.high = inf",
        ),
        (
            {"sweep": {"policy": "seed_a", "mode": "random"}, "random": {"summary_at": {"low": 9, "high": 1}}},
            r"low = 9 is above high = 1",
        ),
    ],
)
def test_sweep_file_values_are_checked(document, match):
    with pytest.raises(ReplayError, match=match):
        from_dict(document)


@pytest.mark.parametrize(
    ("fixed", "match"),
    [
        ({"window": "big"}, "window = 'big': expected a whole number of tokens"),
        ({"window": math.inf}, "window = inf"),
        ({"window": 0}, "window=0"),
        ({"reserve": 70000}, "reserve=70000"),
    ],
)
def test_sweep_budget_values_fail_before_work(sample_db, fixed, match):
    with pytest.raises(ReplayError, match=match):
        run_sweep(sample_db, from_dict(doc(fixed=fixed)), executor="serial", progress=False)


def test_every_point_is_validated_before_work(sample_db):
    spec = from_dict(doc(grid={"summary_at": [30000, 0]}))
    with pytest.raises(ReplayError, match="summary_at=0"):
        run_sweep(sample_db, spec, executor="serial", progress=False)


def test_sweep_file_not_utf8(tmp_path):
    path = tmp_path / "s.toml"
    path.write_bytes(b'[sweep]\npolicy = "seed_a\xff"\n')
    with pytest.raises(ReplayError, match="not UTF-8"):
        load_spec(path)


def test_workers_are_capped_by_cores():
    from replay.worker_limits import usable_cores

    n, why = cap_workers(10_000)
    assert n <= usable_cores() and "core" in why
    assert cap_workers(0)[0] <= usable_cores() and cap_workers(1)[0] == 1
    with pytest.raises(ReplayError, match="--workers -2"):
        cap_workers(-2)


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ("def broken(:\n", "syntax error"),
        ("raise RuntimeError('boom at import')\n", "raised RuntimeError: boom at import"),
        ("import sys\nsys.exit(3)\n", r"called sys.exit\(3\)"),
    ],
)
def test_a_failing_policy_module_is_named(tmp_path, monkeypatch, body, match):
    name = f"safety_policy_{abs(hash(body))}"
    (tmp_path / f"{name}.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ReplayError, match=match) as info:
        resolve(f"{name}:Policy", {}, "none")
    assert name in str(info.value)
    sys.modules.pop(name, None)


EXITING = textwrap.dedent("""
    import sys
    from replay.policies import Policy

    class Exiting(Policy):
        name = "exiting"

        def stages(self):
            return [(lambda: True, self.decide)]

        def decide(self):
            sys.exit(4)
""")


def test_a_policy_calling_sys_exit_is_an_error_row(sample_db, tmp_path, monkeypatch):
    (tmp_path / "safety_exiting.py").write_text(EXITING)
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = from_dict(
        {
            "sweep": {"policy": "safety_exiting:Exiting", "runs": SHORT, "cache": "none"},
            "fixed": {"window": 60000},
            "grid": {"window": [60000]},
        }
    )
    outcome = run_sweep(sample_db, spec, executor="serial", progress=False)
    assert outcome.errors > 0
    errors = sample_db.execute(
        "SELECT DISTINCT error FROM sweep_results WHERE sweep_id = ?", [outcome.sweep_id]
    ).fetchall()
    assert errors == [("policy safety_exiting:Exiting called sys.exit(4) on this run",)]


def test_sweep_name_stays_under_out(sample_db, tmp_path):
    outcome = run_sweep(
        sample_db, from_dict(doc(name="my.sweep-1")), executor="serial", out_dir=tmp_path / "out", progress=False
    )
    assert outcome.parquet is not None and outcome.parquet.parent == tmp_path / "out"
    assert Path(outcome.parquet).exists()
