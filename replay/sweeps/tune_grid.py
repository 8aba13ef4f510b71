"""The sweep `replay tune` runs: each knob of the policy's tuning space (``PolicyBase.space``, on the policy's
class) at a few levels relative to the window, triggers capped below window - reserve, and warnings for settings
whose triggers (``PolicyBase.limits``) cannot fire before the prompt overflows."""

from __future__ import annotations

import re
from typing import Any

from replay.errors import ReplayError
from replay.metrics.prices import DEFAULT_PRICING, Pricing
from replay.policies import make_policy, policy_class, tunable
from replay.policies.window_fit import unfit_limits
from replay.sweeps.spec import SweepSpec, from_dict


def safe_name(policy: str) -> str:
    """``policy`` as part of a sweep name (file names): a user policy's 'pkg.module:Class' becomes
    'pkg.module-Class'."""
    return re.sub(r"[^A-Za-z0-9._-]", "-", policy)


def level_counts(weights: list[float], target: int) -> list[int]:
    """Levels per knob whose product stays <= target: repeatedly give a level to the knob with most weight per level."""
    levels = [1] * len(weights)
    product = 1
    while True:
        best = None
        for i, w in enumerate(weights):
            grown = product // levels[i] * (levels[i] + 1)
            if grown <= target and (best is None or w / levels[i] > weights[best] / levels[best]):
                best = i
        if best is None:
            return levels
        product = product // levels[best] * (levels[best] + 1)
        levels[best] += 1


def tune_grid(policy: str, window: int, points: int = 96, reserve: int = 0) -> dict[str, list[Any]]:
    """The grid for ``policy`` at ``window`` with at most ``points`` points (knob ranges relative to the window;
    triggers capped below window - ``reserve``)."""
    knobs = policy_class(policy).space
    if not knobs:
        raise ReplayError(
            f"tune: no tuning space for policy {policy!r} (its class sets no ``space``); choose one of "
            f"{', '.join(sorted(tunable()))} or give the class a space (docs/policies.md)"
        )
    if window <= 0:
        raise ReplayError(f"tune: --window must be the model's context window in tokens (> 0), got {window}")
    levels = level_counts([k.weight for k in knobs], max(1, points))
    return {k.name: k.values(n, window, reserve) for k, n in zip(knobs, levels, strict=True)}


def fit_warnings(policy: str, window: int, reserve: int, params: dict[str, Any] | None = None) -> list[str]:
    """Warnings, before any sweep, for settings of the policy (its defaults, or ``params``) that cannot fit the
    window: a trigger at or above window - reserve never fires before the prompt overflows."""
    pol = make_policy(policy, params or {})
    usable = window - reserve
    space = {k.name: k for k in pol.space}
    out = []
    for name, value, tokens in unfit_limits(pol, window, reserve):
        shown = f"{value:,}" if isinstance(value, int) else f"{value:g} (= {tokens:,.0f} tokens)"
        if name in space:
            lo, hi = space[name].bounds(window, reserve)
            fmt = "{:,.0f}" if space[name].relative else "{:.3g}"
            fix = f"the sweep takes {name} over {fmt.format(lo)}-{fmt.format(hi)} instead"
        else:
            fix = f"set {name} below it (--set {name}=...)"
        out.append(
            f"WARNING: {policy}'s {'' if params else 'default '}{name} {shown} is at or above window - "
            f"reserve ({usable:,}): at this window it cannot fire before the prompt overflows; {fix}"
        )
    return out


def tune_spec(
    policy: str,
    window: int,
    reserve: int,
    tokenizer_id: str | None,
    points: int = 96,
    runs: str | None = None,
    cache: str = "auto",
    pricing: Pricing = DEFAULT_PRICING,
) -> SweepSpec:
    """The sweep `tune` runs: same arguments, same sweep id, so a rerun resumes. ``pricing.model``: the new
    model, whose prices (and cache rules, with cache "auto") every run gets."""
    if window > 0 and not 0 <= reserve < window:
        raise ReplayError(
            f"tune: --reserve {reserve:,} must be >= 0 and below --window {window:,}; lower the "
            "reserve or raise the window"
        )
    return from_dict(
        {
            "sweep": {
                "policy": policy,
                "name": f"tune-{safe_name(policy)}",
                "runs": runs or "",
                "tokenizer": tokenizer_id or "",
                "cache": cache,
                "batch": 8,
                "price_model": pricing.model or "",
            },
            "fixed": {"window": window, "reserve": reserve},
            "grid": tune_grid(policy, window, points, reserve),
            "prices": pricing.table,
            "price": pricing.sets,
        },
        where="tune",
    )


def defaults_spec(spec: SweepSpec) -> SweepSpec:
    """One point: the policy's defaults at the same window and reserve (the reference the chart marks)."""
    return from_dict(
        {
            "sweep": {
                "policy": spec.policy,
                "name": f"tune-{safe_name(spec.policy)}-defaults",
                "runs": spec.runs or "",
                "tokenizer": spec.tokenizer or "",
                "cache": spec.cache,
                "price_model": spec.price_model or "",
            },
            "fixed": dict(spec.fixed),
            "grid": {},
            "prices": spec.prices,
            "price": spec.price,
        },
        where="tune",
    )
