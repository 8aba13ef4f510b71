"""Sweep grids per built-in policy for the benchmarks: a knob each policy is tuned by, crossed with the window."""

from __future__ import annotations

import itertools

# policy -> (knob, values); the window is the other axis. Policies without a knob of their own sweep the window.
KNOBS: dict[str, tuple[str, list]] = {
    "seed_a": ("summary_at", [20_000 + 4_000 * i for i in range(25)]),
    "seed_a_before": ("summary_at", [20_000 + 4_000 * i for i in range(25)]),
    "seed_b": ("tool_cap", [0] + [250 * i for i in range(1, 25)]),
    "seed_c": ("spill_tokens", [0] + [500 * i for i in range(1, 25)]),
    "drop_oldest": ("margin", [round(0.02 * i, 2) for i in range(25)]),
    "masking": ("keep_last", list(range(1, 26))),
    "last_n": ("n", list(range(1, 26))),
    "clear_tool_uses": ("trigger", [5_000 + 5_000 * i for i in range(25)]),
    "auto_compact": ("threshold", [round(0.3 + 0.025 * i, 3) for i in range(25)]),
    "openhands": ("max_size", [10 + 4 * i for i in range(25)]),
    "openhands_tokens": ("max_tokens", [10_000 + 4_000 * i for i in range(25)]),
    "openhands_recent": ("max_events", [10 + 4 * i for i in range(25)]),
}


def grid_axes(policy: str, points: int) -> dict[str, list]:
    """About ``points`` points as a sweep file's [grid]: enough windows x the policy's knob."""
    knob = KNOBS.get(policy)
    if not knob:
        return {"window": [32_768 + 64 * i for i in range(points)]}
    values = knob[1]
    return {"window": [32_768 + 4_096 * i for i in range(-(-points // len(values)))], knob[0]: values}


def grid(policy: str, points: int) -> list[dict]:
    """``points`` distinct configurations of ``policy`` (reserve 4,096)."""
    axes = grid_axes(policy, points)
    combos = itertools.islice(itertools.product(*axes.values()), points)
    return [{"reserve": 4_096, **dict(zip(axes, combo, strict=True))} for combo in combos]


# a seed_a sweep file over summary_at alone (the memory benchmarks): fill in `values`, a TOML list
SEED_A_SWEEP = """[sweep]
policy = "seed_a"
batch = 16
[fixed]
window = 130000
reserve = 8000
[grid]
summary_at = {values}
"""
