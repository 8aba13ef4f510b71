"""Session totals: the usage a log records for a whole run rather than per request, which is then the run's bill.

A reader stores them as ``runs.metadata.session_totals`` (``models``: per model the calls it counts,
``requests``, and the canonical counts ``input`` uncached, ``cache_read``, ``cache_write``, ``output``) only where
the log records no per-request usage and the totals count exactly the run's requests: the Copilot CLI 1.0.34's
``session.shutdown.modelMetrics`` (replay.readers.copilot_usage.session_totals). The bill prices each model's
totals as one row (``call`` "session") at the run's last request, on its day; per request there is still no
figure, so what needs one (the prompt's fit, a request's cache share) does not use them.
"""

from __future__ import annotations

from dataclasses import dataclass

from replay.metrics.summariser_calls import count, usage_counts


@dataclass(frozen=True)
class SessionTotal:
    """One model's totals over a run: the model, the requests they count, the five billed counts (uncached input,
    cache reads, 5 minute writes, 1 hour writes, output)."""

    model: str | None
    requests: int
    counts: tuple[int, int, int, int, int]


def prompt_tokens(counts: tuple[int, ...]) -> int:
    """The prompt tokens a total's counts add up to: uncached input, cache reads and writes (not its output)."""
    return sum(counts[:4])


def session_totals(metadata: dict) -> list[SessionTotal]:
    """The run's session totals (``runs.metadata.session_totals``), one per model; none when it has none or one
    entry is not of the canonical shape (a partial total is no bill)."""
    stored = metadata.get("session_totals")
    models = stored.get("models") if isinstance(stored, dict) else None
    if not isinstance(models, list):
        return []
    out = []
    for entry in models:
        counts = usage_counts(entry)
        requests = count(entry.get("requests")) if isinstance(entry, dict) else None
        if counts is None or requests is None:
            return []
        model = entry.get("model")
        out.append(SessionTotal(model if isinstance(model, str) and model else None, requests, counts))
    return out
