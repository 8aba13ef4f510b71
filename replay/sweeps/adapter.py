"""Thin adapter from a sweep point (a flat dict of parameters) to the simulator's Python API.

A point's keys split three ways: ``window`` and ``reserve`` (or ``budget_window``/``budget_reserve`` when the
policy has its own knob of that name) form the Budget, ``cache_<name>`` go to the
cache model, everything else is validated by the policy's config (unknown keys are errors).
"""

from __future__ import annotations

import json
from typing import Any

from replay.simulator.arrays import RunArrays

BUDGET_KEYS = ("window", "reserve")


def split_params(params: dict[str, Any], policy_fields: frozenset[str] = frozenset()
                 ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(budget, cache, policy) parameter dicts; a policy knob named like a budget key stays the policy's."""
    bare = [k for k in BUDGET_KEYS if k not in policy_fields]
    budget = {k: int(params[k]) for k in bare if k in params}
    budget |= {k[7:]: int(v) for k, v in params.items() if k.startswith("budget_") and k[7:] in BUDGET_KEYS}
    cache = {k[6:]: v for k, v in params.items() if k.startswith("cache_")}
    policy = {k: v for k, v in params.items()
              if k not in bare and not k.startswith("cache_") and not k.startswith("budget_")}
    return budget, cache, policy


def _fields(policy_name: str) -> frozenset[str]:
    from replay.policies import policy_class

    return frozenset(f[0] for f in policy_class(policy_name).Config.describe())


def effective_config(policy_name: str, params: dict[str, Any], cache: str) -> dict[str, Any]:
    """The full configuration a point runs with, defaults included (stored with every result)."""
    from replay.policies import make_policy

    budget, cache_params, policy_params = split_params(params, _fields(policy_name))
    policy = make_policy(policy_name, policy_params)
    return {"policy": policy_name, "config": policy.config.as_dict(), "budget": budget,
            "cache": {"name": cache, **cache_params}}


def evaluate(run: RunArrays, policy_name: str, params: dict[str, Any], cache: str) -> dict[str, Any]:
    """Simulate one run under one point; return the run-level metrics row (scalars only)."""
    from replay.policies import Budget, make_policy
    from replay.simulator.caches import make_cache

    budget, cache_params, policy_params = split_params(params, _fields(policy_name))
    policy = make_policy(policy_name, policy_params)
    from replay.simulator.run import simulate_run

    _, row = simulate_run(run, policy, make_cache(cache, **cache_params), budget=Budget(**budget))
    row = row if isinstance(row, dict) else dict(row)
    return {k: v for k, v in row.items() if isinstance(v, (int, float, bool, str)) or v is None}


def config_json(policy_name: str, params: dict[str, Any], cache: str) -> str:
    return json.dumps(effective_config(policy_name, params, cache), sort_keys=True, default=str)
