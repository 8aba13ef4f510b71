"""Per-run row from per-request columns: raw counters first, a few derived ratios beside them."""

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


def run_row(run_id: str, cols: dict[str, np.ndarray], extra: dict) -> dict:
    """Overflow incidents, summary cadence, cache hit rate (cached / prompt), uncached tokens, plus ``extra``."""
    n = len(cols["k"])
    summ = np.flatnonzero(cols["summarised"])
    prompt = int(cols["prompt_tokens"].sum())
    cached = int(cols["cached_tokens"].sum())
    written = int(cols["written_tokens"].sum())
    return {
        "run_id": run_id,
        "requests": n,
        "overflow_incidents": int(cols["overflow"].sum()),
        "near_misses": int(cols["near_miss"].sum()),
        "emergencies": int(cols["emergency"].sum()),
        "summaries": len(summ),
        "summaries_per_100": 100.0 * len(summ) / n if n else 0.0,
        "requests_between_summaries": float(np.diff(summ).mean()) if len(summ) > 1 else None,
        "tokens_after_summary": float(cols["prompt_tokens"][summ].mean()) if len(summ) else None,
        "prompt_tokens": prompt,
        "est_tokens": int(cols["est_tokens"].sum()),
        "cached_tokens": cached,
        "written_tokens": written,
        "uncached_tokens": prompt - cached - written,
        "cache_hit_rate": cached / prompt if prompt else 0.0,
        "trimmed_tokens": int(cols["trimmed_tokens"].sum()),
        "max_prompt_tokens": int(cols["prompt_tokens"].max(initial=0)),
        **recorded_totals(cols["recorded_prompt"], cols["recorded_cache_read"]),
        **extra,
    }
