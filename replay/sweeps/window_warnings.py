"""Window warnings over a sweep's points: a knob that cannot act at a point's window, said once with its count."""

from __future__ import annotations

from itertools import islice
from typing import Any

from replay.policies import make_policy
from replay.policies.base import Budget
from replay.policies.window_fit import window_warnings
from replay.sweeps.adapter import policy_fields, split_params


def sweep_window_warnings(spec: Any, limit: int = 10_000) -> list[str]:
    """:func:`window_warnings` over a sweep's points (the first ``limit``), each distinct sentence once, with how
    many points it applies to."""
    fields = policy_fields(spec.policy)
    counts: dict[str, int] = {}
    n = 0
    for params in islice(spec.iter_points(), limit):
        n += 1
        budget, _, knobs = split_params(params, fields)
        b = Budget(**budget)
        pol = make_policy(spec.policy, knobs)
        for line in window_warnings(pol, b.window, b.reserve):
            counts[line] = counts.get(line, 0) + 1
    return [line if c == n else f"{line} ({c:,} of {n:,} points)" for line, c in counts.items()]
