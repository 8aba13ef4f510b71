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
from datetime import UTC, date, datetime

import numpy as np

from replay.metrics.prices import DEFAULT_PRICING, Prices, Pricing, listed_under, nearest_listed

NAN = float("nan")
PARTS = ("input", "cache_read", "cache_write", "cache_write_1h", "output")


@dataclass
class RequestBill:
    """Per-request USD by part (NaN where unpriced) and, per model that could not be priced, why."""

    usd: dict[str, np.ndarray]  # part -> USD per request
    priced: np.ndarray  # bool per request
    unpriced: dict[str, str] = field(default_factory=dict)  # model (or "(none)") -> reason
    sources: dict[str, str] = field(default_factory=dict)  # model -> where its prices came from

    @property
    def total(self) -> np.ndarray:
        return sum((self.usd[p] for p in PARTS), np.zeros(len(self.priced)))


def day_of(ts: str | float | None) -> date | None:
    """The UTC day of a request timestamp (ISO text or epoch seconds); None when absent or unreadable."""
    if ts is None or (isinstance(ts, float) and not np.isfinite(ts)):
        return None
    try:
        if isinstance(ts, int | float):
            return datetime.fromtimestamp(float(ts), UTC).date() if ts > 0 else None
        return datetime.fromisoformat(str(ts).replace("Z", "+00:00")).date()
    except (ValueError, OverflowError, OSError):
        return None


def keyed_rates(prices: Sequence[Prices], key_of: np.ndarray, total_input: np.ndarray) -> dict[str, np.ndarray]:
    """Per-request rates (USD/Mtok) of each part, request i priced by ``prices[key_of[i]]`` at its whole input
    ``total_input[i]`` (tiers), a missing cache price replaced by its parent's; NaN for an unknown price."""

    def listed(v: float | None) -> float:
        return NAN if v is None else float(v)

    table = np.array([[listed(getattr(p, part)) for part in PARTS] for p in prices], dtype=np.float64).reshape(-1, 5)
    out = {part: table[:, j][key_of] if len(prices) else np.full(len(key_of), NAN) for j, part in enumerate(PARTS)}
    for j, p in enumerate(prices):
        if not p.tiers:
            continue
        mine = key_of == j
        for start, tier in p.tiers:
            above = mine & (total_input > start)
            for part, value in tier.items():
                out[part][above] = value
    for child, parent in (("cache_read", "input"), ("cache_write", "input"), ("cache_write_1h", "cache_write")):
        gap = np.isnan(out[child])
        out[child][gap] = out[parent][gap]
    return out


def price_requests(
    models: Sequence[str | None],
    days: Sequence[date | None],
    uncached: np.ndarray,
    cache_read: np.ndarray,
    write_5m: np.ndarray,
    write_1h: np.ndarray,
    output: np.ndarray,
    pricing: Pricing = DEFAULT_PRICING,
) -> RequestBill:
    """Each request priced at its own model on its own day (``days`` None: today's prices). Counts are arrays of
    one value per request; a missing count must be given as 0 by the caller (it says which counts it has)."""
    keys: dict[tuple[str | None, date | None], int] = {}
    key_of = np.array([keys.setdefault(k, len(keys)) for k in zip(models, days, strict=True)], dtype=np.int64)
    return price_keyed(list(keys), key_of, uncached, cache_read, write_5m, write_1h, output, pricing)


def price_keyed(
    keys: Sequence[tuple[str | None, date | None]],
    key_of: np.ndarray,
    uncached: np.ndarray,
    cache_read: np.ndarray,
    write_5m: np.ndarray,
    write_1h: np.ndarray,
    output: np.ndarray,
    pricing: Pricing = DEFAULT_PRICING,
    cache_override: tuple[np.ndarray, np.ndarray] | None = None,
    prices: Sequence[Prices] | None = None,
) -> RequestBill:
    """:func:`price_requests` with the requests already grouped: request i is of ``keys[key_of[i]]`` (model,
    day). ``cache_override``: per request, (read, write) multipliers on its input price where a cache model other
    than its provider's own charges its reads and writes (NaN: the provider's own listed prices apply).
    ``prices``: ``pricing.prices`` of each key, when the caller has them already."""
    counts = {
        "input": np.asarray(uncached, dtype=np.float64),
        "cache_read": np.asarray(cache_read, np.float64),
        "cache_write": np.asarray(write_5m, np.float64),
        "cache_write_1h": np.asarray(write_1h, np.float64),
        "output": np.asarray(output, np.float64),
    }
    total_input = counts["input"] + counts["cache_read"] + counts["cache_write"] + counts["cache_write_1h"]
    priced_keys = list(prices) if prices is not None else [pricing.prices(model, day) for model, day in keys]
    rates = keyed_rates(priced_keys, key_of, total_input)
    if cache_override is not None:
        read_x, write_x = cache_override
        other = ~np.isnan(read_x)
        rates["cache_read"] = np.where(other, rates["input"] * read_x, rates["cache_read"])
        for part in ("cache_write", "cache_write_1h"):
            rates[part] = np.where(other, rates["input"] * write_x, rates[part])
    usd = {part: counts[part] * rates[part] / 1e6 for part in PARTS}
    known = np.array([p.known for p in priced_keys], dtype=bool)
    priced = known[key_of] if len(priced_keys) else np.zeros(len(key_of), dtype=bool)
    bill = RequestBill(usd, priced)
    used = np.unique(key_of)
    for j in used:
        model, _ = keys[j]
        name = pricing.model or model or "(none)"
        if known[j]:
            bill.sources.setdefault(name, priced_keys[j].source)
        else:
            bill.unpriced[name] = unpriced_reason(pricing.model or model)
    return bill


def unpriced_reason(model: str | None) -> str:
    """Why ``model`` has no price, as precisely as the price data tells (never a guess at a price)."""
    if not model:
        return "the log names no model for these requests"
    listed = listed_under(model)
    if listed:
        routed = (
            " (OpenRouter bills each request at the price of the upstream provider it routed it to)"
            if "openrouter" in listed
            else ""
        )
        return (
            f"no price: genai-prices lists {model!r} only under {', '.join(listed)}, and the log's model name names no "
            f"provider: prices differ by provider{routed}; no --prices entry names it"
        )
    near = nearest_listed(model)
    beside = f" (it lists {near}: another name, whose price is not this one's)" if near else ""
    return f"no price: genai-prices has no model of this name{beside}, and no --prices entry names it"
