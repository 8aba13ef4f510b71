"""Recorded usage totals of a run (the run row itself is built by replay.simulator.run_rows)."""

from __future__ import annotations

import numpy as np


def recorded_totals(rec_prompt: np.ndarray, rec_cache_read: np.ndarray) -> dict:
    """Recorded prompt and cache-read sums over the requests that report both, and their ratio."""
    have = (rec_prompt > 0) & (rec_cache_read >= 0)
    return {
        "recorded_prompt": int(rec_prompt[have].sum()),
        "recorded_cache_read": int(rec_cache_read[have].sum()),
        "recorded_cache_share": float(rec_cache_read[have].sum() / rec_prompt[have].sum()) if have.any() else None,
    }
