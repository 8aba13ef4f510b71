"""Thin adapter from a sweep point (a flat dict of parameters) to the simulator's Python API.

A point's keys split three ways: ``window`` and ``reserve`` (or ``budget_window``/``budget_reserve`` when the
policy has its own knob of that name) form the Budget, ``cache_<name>`` go to the
cache model, everything else is validated by the policy's config (unknown keys are errors).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from replay.errors import ReplayError
from replay.metrics.prices import DEFAULT_PRICING, Pricing
from replay.policies import Budget, make_policy, policy_class
from replay.policies.base import AnyPolicy
from replay.run_arrays import RunArrays
from replay.simulator.caches import AUTO, CacheModel, make_cache
from replay.simulator.run import simulate_run

BUDGET_KEYS = ("window", "reserve")


def split_params(
    params: dict[str, Any], fields: frozenset[str] = frozenset()
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(budget, cache, policy) parameter dicts; a policy knob named like a budget key stays the policy's."""
    bare = [k for k in BUDGET_KEYS if k not in fields]
    budget = {k: tokens(k, params[k]) for k in bare if k in params}
    budget |= {k[7:]: tokens(k, v) for k, v in params.items() if k.startswith("budget_") and k[7:] in BUDGET_KEYS}
    cache = {k[6:]: v for k, v in params.items() if k.startswith("cache_")}
    policy = {
        k: v for k, v in params.items() if k not in bare and not k.startswith("cache_") and not k.startswith("budget_")
    }
    return budget, cache, policy


def tokens(key: str, value: Any) -> int:
    """A token count from a sweep file: a whole, finite number (12000 or 12000.0), else an error naming the key."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or (isinstance(value, float) and not (math.isfinite(value) and value.is_integer()))
    ):
        raise ReplayError(f"{key} = {value!r}: expected a whole number of tokens (window >= 1, 0 <= reserve < window)")
    return int(value)


def policy_fields(policy_name: str) -> frozenset[str]:
    return frozenset(f[0] for f in policy_class(policy_name).Config.describe())


@dataclass(frozen=True)
class Point:
    """A sweep point resolved into the objects the simulator takes (validated: unknown keys are errors)."""

    policy: AnyPolicy
    budget: Budget
    cache: CacheModel | None  # None: each run under its provider's own cache model
    cache_params: dict[str, Any]
    pricing: Pricing = DEFAULT_PRICING

    def effective_config(self) -> dict[str, Any]:
        """The full configuration the point runs with, defaults included (stored with every result)."""
        return {
            "policy": self.policy.name,
            "config": self.policy.config.as_dict(),
            "budget": {"window": self.budget.window, "reserve": self.budget.reserve},
            "cache": {"name": AUTO if self.cache is None else self.cache.name, **self.cache_params},
            **({"pricing": self.pricing.key()} if self.pricing != DEFAULT_PRICING else {}),
        }


def resolve(policy_name: str, params: dict[str, Any], cache: str, pricing: Pricing = DEFAULT_PRICING) -> Point:
    """The point's objects; ``cache`` "auto" leaves each run its provider's cache model."""
    budget, cache_params, policy_params = split_params(params, policy_fields(policy_name))
    if cache == AUTO and cache_params:
        raise ReplayError(
            f'cache parameters {sorted(cache_params)} need a named cache model (cache = "anthropic", '
            '"openai", ...): with cache = "auto" each run has its provider\'s own'
        )
    model = None if cache == AUTO else make_cache(cache, **cache_params)
    return Point(make_policy(policy_name, policy_params), Budget(**budget), model, cache_params, pricing)


def effective_config(
    policy_name: str, params: dict[str, Any], cache: str, pricing: Pricing = DEFAULT_PRICING
) -> dict[str, Any]:
    return resolve(policy_name, params, cache, pricing).effective_config()


def evaluate_point(run: RunArrays, point: Point) -> dict[str, Any]:
    """Simulate one run under one point request by request (simulate_run); the run-level metrics row (scalars only)."""
    _, row = simulate_run(run, point.policy, point.cache, budget=point.budget, pricing=point.pricing)
    return {k: v for k, v in row.items() if isinstance(v, (int, float, bool, str)) or v is None}


def config_json(point: Point) -> str:
    return json.dumps(point.effective_config(), sort_keys=True, default=str)
