"""The bill: what each request cost, at its own model's list prices on its own day.

A request is priced from five counts: uncached input, cache reads, 5-minute and 1-hour cache writes, and output.
Rates come from replay.metrics.prices (genai-prices, a price file, --price overrides). The rules are genai-prices':

- a long-context tier applies to every token of a request whose whole input (uncached + read + written) is above
  the tier's start (Sonnet 4.5 above 200k input: input, reads, writes and output at the tier's prices);
- a count whose own price the data does not list is charged at its parent's: 1-hour writes at the write price,
  writes and reads at the input price (MiniMax-M3 lists no write price: its writes cost input);
- a model the data does not know (and no override names) is not priced: its requests' cost is NaN and the model is
  named in ``unpriced`` with the reason. Nothing is priced at a default.

Shared by ``replay runs`` (recorded usage) and the simulator (simulated usage, the recorded request's model), so a
simulation of the recorded policy is priced by the same rules as the log it replays.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime

import numpy as np

from replay.metrics.prices import DEFAULT_PRICING, Prices, Pricing

NAN = float("nan")
PARTS = ("input", "cache_read", "cache_write", "cache_write_1h", "output")


@dataclass
class RequestBill:
    """Per-request USD by part (NaN where unpriced) and, per model that could not be priced, why."""

    usd: dict[str, np.ndarray]                     # part -> USD per request
    priced: np.ndarray                             # bool per request
    unpriced: dict[str, str] = field(default_factory=dict)  # model (or "(none)") -> reason
    sources: dict[str, str] = field(default_factory=dict)   # model -> where its prices came from

    @property
    def total(self) -> np.ndarray:
        return sum((self.usd[p] for p in PARTS), np.zeros(len(self.priced)))


def day_of(ts: str | float | None) -> date | None:
    """The UTC day of a request timestamp (ISO text or epoch seconds); None when absent or unreadable."""
    if ts is None or (isinstance(ts, float) and not np.isfinite(ts)):
        return None
    try:
        if isinstance(ts, int | float):
            return datetime.fromtimestamp(float(ts)).date() if ts > 0 else None
        return datetime.fromisoformat(str(ts).replace("Z", "+00:00")).date()
    except (ValueError, OverflowError, OSError):
        return None


def rates_for(prices: Prices, total_input: np.ndarray) -> dict[str, np.ndarray]:
    """USD per million tokens of each part for requests of ``total_input`` input tokens: the base prices, a
    long-context tier's where the input is above its start, a missing cache price replaced by its parent's."""
    n = len(total_input)
    base = {"input": prices.input, "output": prices.output, "cache_read": prices.cache_read,
            "cache_write": prices.cache_write, "cache_write_1h": prices.cache_write_1h}
    out = {k: np.full(n, NAN if v is None else float(v)) for k, v in base.items()}
    listed = {k: v is not None for k, v in base.items()}
    for start, tier in prices.tiers:
        above = total_input > start
        for key, value in tier.items():
            out[key][above] = value
            listed[key] = True
    if not listed["cache_read"]:
        out["cache_read"] = out["input"]
    if not listed["cache_write"]:
        out["cache_write"] = out["input"]
    if not listed["cache_write_1h"]:
        out["cache_write_1h"] = out["cache_write"]
    return out


def price_requests(models: Sequence[str | None], days: Sequence[date | None], uncached: np.ndarray,
                   cache_read: np.ndarray, write_5m: np.ndarray, write_1h: np.ndarray, output: np.ndarray,
                   pricing: Pricing = DEFAULT_PRICING) -> RequestBill:
    """Each request priced at its own model on its own day (``days`` None: today's prices). Counts are arrays of
    one value per request; a missing count must be given as 0 by the caller (it says which counts it has)."""
    n = len(models)
    counts = {"input": np.asarray(uncached, dtype=np.float64), "cache_read": np.asarray(cache_read, np.float64),
              "cache_write": np.asarray(write_5m, np.float64), "cache_write_1h": np.asarray(write_1h, np.float64),
              "output": np.asarray(output, np.float64)}
    total_input = counts["input"] + counts["cache_read"] + counts["cache_write"] + counts["cache_write_1h"]
    usd = {p: np.full(n, NAN) for p in PARTS}
    priced = np.zeros(n, dtype=bool)
    bill = RequestBill(usd, priced)
    groups: dict[tuple[str | None, date | None], list[int]] = {}
    for i, key in enumerate(zip(models, days, strict=True)):
        groups.setdefault(key, []).append(i)
    for (model, day), members in groups.items():
        idx = np.asarray(members, dtype=np.int64)
        prices = pricing.prices(model, day)
        name = pricing.model or model or "(none)"
        if not prices.known:
            bill.unpriced[name] = unpriced_reason(pricing.model or model)
            continue
        bill.sources.setdefault(name, prices.source)
        rates = rates_for(prices, total_input[idx])
        for part in PARTS:
            usd[part][idx] = counts[part][idx] * rates[part] / 1e6
        priced[idx] = True
    return bill


def unpriced_reason(model: str | None) -> str:
    if not model:
        return "the log names no model for these requests"
    return "genai-prices has no price for it and no --prices entry names it"
