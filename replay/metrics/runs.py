"""Recorded usage totals of a run (the run row itself is built by replay.simulator.run_rows)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from replay.metrics.session_totals import prompt_tokens


def recorded_totals(rec_prompt: np.ndarray, rec_cache_read: np.ndarray, session: Sequence[tuple] = ()) -> dict:
    """Recorded prompt and cache-read sums over the requests that report both, and their ratio; where none does,
    the run's session totals (``RunArrays.session_totals``: model, requests, uncached, read, 5 min and 1 h
    writes, output), which count every request."""
    have = (rec_prompt > 0) & (rec_cache_read >= 0)
    prompt, read = int(rec_prompt[have].sum()), int(rec_cache_read[have].sum())
    if not have.any() and session:
        prompt = sum(prompt_tokens(counts) for _, _, counts in session)
        read = sum(counts[1] for _, _, counts in session)
    return {
        "recorded_prompt": prompt,
        "recorded_cache_read": read,
        "recorded_cache_share": read / prompt if prompt > 0 else None,
    }
