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
) -> ArrayLike:
    """USD for the summarisation calls: each reads the history it summarises and writes the summary as output.
    The history is uncached input unless ``read_rate`` is given (a policy whose summary calls hit the cache):
    a summary call carries no tools and OpenHands turns caching off for it, so its prefix differs."""
    history_rate = input_rate if read_rate is None else read_rate
    return (history_tokens * history_rate + summary_tokens * output_rate) / 1e6
