"""Which cache model and which prices one run gets: its provider's own rules by default, or a cache model chosen
for all runs (``--cache NAME``); the per-token rates that follow.

Under its own provider's cache model a run's reads and writes are priced at the price data's cache prices (gpt-4o
reads at 0.5x input, Claude 1 h writes at 2x); under another provider's cache model (an override) they cost that
model's multipliers on the run's input price (Anthropic rules on a GPT run: writes 1.25x, reads 0.1x).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from replay.metrics.prices import DEFAULT_PRICING, Prices, Pricing
from replay.simulator.caches import Anthropic, CacheModel, make_cache
from replay.simulator.provider_caches import provider_cache_of

if TYPE_CHECKING:
    from replay.simulator.cache_fit import CacheFit

HOUR = 3600.0


@dataclass(frozen=True)
class Rates:
    """USD per million tokens one run is charged: uncached input, output, cache reads, cache writes."""

    input: float
    output: float
    cache_read: float
    cache_write: float


@dataclass
class Billing:
    """One run's cache model (fresh state per run), prices and rates, and how they were chosen."""

    cache: CacheModel
    prices: Prices
    rates: Rates
    note: str  # "" when the run's own provider's rules apply with known prices
    model: str | None = None  # the model the run is priced and cached as

    @property
    def price_source(self) -> str:
        return self.prices.source


def own_cache(prices: Prices, recorded_ttl: float | None = None, fit: CacheFit | None = None) -> tuple[CacheModel, str]:
    """The cache model of the API of ``prices``'s provider (replay.simulator.provider_caches; the TTL the log
    recorded, for Anthropic-style caches), or no cache with a note when the provider's cache is not documented there.
    ``fit``: the run's cache model as replay.simulator.cache_fit chose it from the same definition (its
    provider's, the harness's breakpoints) and calibrated it from its recorded reads: its model wins, with the
    hit rate and TTL fitted to its own reads, or served uncached, unless it is a bare default of an undocumented
    provider."""
    provider = prices.provider
    own = provider_cache_of(provider, prices.cache_read is not None)
    if fit is not None and (fit.source != "default" or own.documented):
        cache = fit.cache()
    elif not own.documented:
        who = f"provider {provider}" if provider else "an unknown provider"
        return make_cache("none"), f"no cache model for {who}: priced uncached (pass --cache to choose one)"
    else:
        cache = make_cache(own.automatic)
    if isinstance(cache, Anthropic) and recorded_ttl:  # breakpoints are never fitted: the log's TTL stands
        cache = replace(cache, ttl=recorded_ttl)
    return cache, ""


def is_own(prices: Prices, cache: CacheModel) -> bool:
    """Whether ``cache`` is one of the own cache models of ``prices``'s provider: its listed cache prices apply,
    and its writes are billed as writes only where the provider bills them (else as uncached input); under
    another model (a ``--cache`` override, an undocumented provider) the model's multipliers on the input price
    apply."""
    return cache.name in provider_cache_of(prices.provider, prices.cache_read is not None).models()


def rates(prices: Prices, cache: CacheModel, model: str | None) -> Rates:
    """Per-token rates of ``prices`` under ``cache``'s rules (its multipliers unless it is the provider's own and
    the price data has the cache price; writes at the input price where the provider bills none)."""
    cache.reset(model)  # settles per-model settings (Anthropic: 2x writes at a 1 h TTL)
    own = is_own(prices, cache)
    one_hour = getattr(cache, "ttl", 0.0) >= HOUR
    listed_write = prices.cache_write_1h if one_hour else prices.cache_write
    read = prices.cache_read if own and prices.cache_read is not None else prices.input * cache.read_multiplier
    write = listed_write if own and listed_write is not None else prices.input * cache.write_multiplier
    if own and not provider_cache_of(prices.provider, prices.cache_read is not None).writes_billed:
        write = prices.input
    return Rates(prices.input, prices.output, read, write)


def billing_for(
    model: str | None,
    cache: CacheModel | None = None,
    pricing: Pricing = DEFAULT_PRICING,
    recorded_ttl: float | None = None,
    fit: CacheFit | None = None,
) -> Billing:
    """Cache model and rates for a run of ``model``: ``cache`` (reset per run by the simulator) when given, else the
    provider's own cache model with the TTL the log recorded, or the run's calibrated one (``fit``).
    ``pricing.model`` prices (and caches) the run as that model instead (tune for a new model)."""
    priced_as = pricing.model or model
    prices = pricing.prices(model)
    notes = []
    if cache is None:
        chosen, note = own_cache(prices, recorded_ttl, None if pricing.model else fit)
        notes += [note] if note else []
    else:
        chosen = cache
    if not prices.known:
        notes.append(
            f"no price for model {priced_as!r}: cost is NaN (pass --prices FILE or --price input=.. --price output=..)"
        )
    return Billing(chosen, prices, rates(prices, chosen, priced_as), "; ".join(notes), priced_as)
