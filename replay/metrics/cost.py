"""Cost arithmetic: USD for prompts, outputs and summarisation calls at per-token rates (USD per million tokens).

Rates come from replay.metrics.prices (list prices) through replay.simulator.billing (the cache model's rules).
An unknown price is NaN, so is every cost computed from it.
"""

from __future__ import annotations

import numpy as np

ArrayLike = int | float | np.ndarray


def summary_cost(
    history_tokens: ArrayLike,
    summary_tokens: ArrayLike,
    input_rate: ArrayLike,
    output_rate: ArrayLike,
    read_rate: ArrayLike | None = None,
    written_tokens: ArrayLike = 0,
    write_rate: ArrayLike = 0.0,
) -> ArrayLike:
    """USD for the summarisation calls: each reads its prompt and writes the summary as output. ``history_tokens``
    are the prompts sent uncached (at ``input_rate``, or ``read_rate`` when given: a policy whose summary calls hit
    the cache); ``written_tokens`` the prompts the harness writes to the cache (at ``write_rate``: OpenHands' V1
    SDK condenser keeps prompt caching on). What a call's prompt is, the policy says (the kernel's
    ``set_summariser_prompt``): the whole previous prompt for Claude Code's and Codex's compaction, the forgotten
    events for OpenHands' condensers (replay.policies.condenser_prompt)."""
    history_rate = input_rate if read_rate is None else read_rate
    return (history_tokens * history_rate + written_tokens * write_rate + summary_tokens * output_rate) / 1e6
