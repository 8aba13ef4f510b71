"""Per-model prices (USD per million tokens) from the genai-prices library, a price file and --price overrides.

A model genai-prices does not know, and that no override names, gets NaN prices and the source ``unknown``:
its cost is NaN and callers warn; there is no default price.
"""

from __future__ import annotations

import fnmatch
import json
import math
import tomllib
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, time
from functools import lru_cache
from pathlib import Path
from typing import Any

from replay.config_text import read_config_text
from replay.errors import ReplayError

NAN = float("nan")
PRICE_KEYS = ("input", "output", "cache_read", "cache_write", "cache_write_1h")
OTHER_KEYS = ("provider", "same_as")
ALIASES = {"cache_write_5m": "cache_write"}


@dataclass(frozen=True)
class Prices:
    """List prices of one model, USD per million tokens. A cache price is None when the source has none (the
    cache model's multiplier on the input price applies); NaN input/output means unknown."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None  # 5 min writes
    cache_write_1h: float | None = None
    provider: str | None = None  # whose caching and billing rules apply (a genai-prices provider id)
    source: str = "unknown"  # where the figures come from
    # long-context tiers: (start, {price key: USD/Mtok}); a request whose whole input (uncached, read, written)
    # is above ``start`` pays the tier's price on all its tokens of those keys (genai-prices' threshold rule)
    tiers: tuple[tuple[int, dict[str, float]], ...] = ()

    @property
    def known(self) -> bool:
        return not (math.isnan(self.input) or math.isnan(self.output))


def unknown(provider: str | None = None) -> Prices:
    return Prices(NAN, NAN, None, None, None, provider, "unknown")


def _version() -> str:
    from importlib.metadata import version

    return version("genai-prices")


def _num(value: Any) -> float | None:
    """A genai-prices price (Decimal or tiered: its base tier) as a float; None when absent."""
    if value is None:
        return None
    return float(getattr(value, "base", value))


LIBRARY_KEYS = {
    "input": "input_mtok",
    "output": "output_mtok",
    "cache_read": "cache_read_mtok",
    "cache_write": "cache_write_mtok",
    "cache_write_1h": "cache_write_1h_mtok",
}


def _tiers(price: Any) -> tuple[tuple[int, dict[str, float]], ...]:
    """The long-context tiers of a genai-prices ModelPrice, by start: each tier's price of every key that has one."""
    starts: dict[int, dict[str, float]] = {}
    for key, attr in LIBRARY_KEYS.items():
        for tier in getattr(getattr(price, attr, None), "tiers", None) or ():
            starts.setdefault(int(tier.start), {})[key] = float(tier.price)
    return tuple(sorted(starts.items()))


def _candidates(model: str) -> list[tuple[str, str | None]]:
    """(name, provider hint) to try: the whole reference, then each tail after a '/' with the segment before it
    as the provider hint (``litellm_proxy/deepseek-chat``, ``openai/gpt-4o-mini``, ``meta-llama/llama-4``)."""
    parts = model.lower().split("/")
    out: list[tuple[str, str | None]] = []
    for i in range(len(parts)):
        name = "/".join(parts[i:])
        if name:
            out += [(name, parts[i - 1])] if i else []
            out.append((name, None))
    return out


def library_prices(model: str, when: date | None = None) -> Prices:
    """genai-prices' list prices for ``model`` on the day ``when`` (None: today), long-context tiers included;
    unknown (with the provider whose model names match, when one does) when it has no such model."""
    return _library_prices(model, when or datetime.now(UTC).date())


@lru_cache(maxsize=2048)
def _library_prices(model: str, when: date) -> Prices:
    from genai_prices import data_snapshot

    snap = data_snapshot.get_snapshot()
    for name, hint in _candidates(model):
        try:
            provider, info = snap.find_provider_model(name, None, hint, None)
        except LookupError:
            continue
        p = info.get_prices(datetime.combine(when, time(12), UTC))
        inp, out = _num(p.input_mtok), _num(p.output_mtok)
        return Prices(
            NAN if inp is None else inp,
            NAN if out is None else out,
            _num(p.cache_read_mtok),
            _num(p.cache_write_mtok),
            _num(p.cache_write_1h_mtok),
            provider.id,
            f"genai-prices {_version()}: {provider.id}/{info.id}",
            _tiers(p),
        )
    for name, _ in _candidates(model):
        try:
            return unknown(snap.find_provider(name, None, None).id)
        except LookupError:
            continue
    return unknown()


@lru_cache(maxsize=256)
def listed_under(model: str) -> tuple[str, ...]:
    """The genai-prices providers that list a model of exactly this id (their own ids: ``openrouter`` lists
    ``meta-llama/llama-4-maverick``), for a name that matched no provider's rules."""
    from genai_prices import data_snapshot

    name = model.lower()
    return tuple(p.id for p in data_snapshot.get_snapshot().providers if any(m.id.lower() == name for m in p.models))


@lru_cache(maxsize=256)
def nearest_listed(model: str) -> str:
    """The longest genai-prices model id that the last part of ``model`` extends with a suffix of its own, with the
    providers that list it (``gpt-5.3-codex-bak`` -> ``gpt-5.3-codex (openai, github-copilot)``); "" when none."""
    from genai_prices import data_snapshot

    name = model.lower().rsplit("/", 1)[-1]
    best, by = "", list[str]()
    for p in data_snapshot.get_snapshot().providers:
        for m in p.models:
            mid = m.id.lower()
            if len(mid) >= len(best) and name.startswith(mid) and name[len(mid) : len(mid) + 1] in "-_:.@":
                by = (by if mid == best else []) + [p.id]
                best = mid
    return f"{best} ({', '.join(dict.fromkeys(by))})" if best else ""


def price_fields(fields: dict[str, Any], where: str) -> dict[str, Any]:
    """Validated price fields (numbers >= 0 for prices; provider and same_as strings)."""
    if not isinstance(fields, dict):
        raise ReplayError(f"{where}: expected a table of price fields (input = .., output = ..), got {fields!r}")
    out: dict[str, Any] = {}
    for raw, value in fields.items():
        key = ALIASES.get(raw, raw)
        if key in PRICE_KEYS:
            try:
                num = float(value)
            except (TypeError, ValueError):
                raise ReplayError(f"{where}: {raw} = {value!r} is not a number (USD per million tokens)") from None
            if not num >= 0:
                raise ReplayError(f"{where}: {raw} = {value!r} must be a number >= 0 (USD per million tokens)")
            out[key] = num
        elif key in OTHER_KEYS:
            out[key] = str(value)
        else:
            raise ReplayError(f"{where}: unknown price key {raw!r}; use {', '.join(PRICE_KEYS + OTHER_KEYS)}")
    return out


def load_price_file(path: Path) -> dict[str, dict[str, Any]]:
    """A TOML or JSON table ``model (or glob) -> {input, output, cache_read, cache_write, cache_write_1h,
    provider, same_as}``; ``same_as`` names a model whose library prices to start from."""
    text = read_config_text(path, "--prices")
    try:
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (ValueError, tomllib.TOMLDecodeError) as exc:
        raise ReplayError(f"--prices {path}: not valid {'JSON' if path.suffix == '.json' else 'TOML'}: {exc}") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise ReplayError(f"--prices {path}: expected a table of model -> {{input = .., output = ..}}")
    return {str(k).lower(): price_fields(v, f"--prices {path} [{k}]") for k, v in data.items()}


def parse_price_sets(sets: list[str]) -> dict[str, Any]:
    """``--price key=value`` pairs (input, output, cache_read, cache_write, cache_write_1h, provider, same_as)."""
    pairs = {}
    for s in sets:
        key, eq, value = s.partition("=")
        if not eq or not key.strip():
            raise ReplayError(f"--price {s!r}: expected key=value, e.g. --price input=3 --price output=15")
        pairs[key.strip()] = value.strip()
    return price_fields(pairs, "--price")


def _apply(base: Prices, fields: dict[str, Any], source: str, when: date | None = None) -> Prices:
    if "same_as" in fields:
        base = library_prices(fields["same_as"], when)
        if not base.known:
            raise ReplayError(f"{source}: same_as = {fields['same_as']!r} is not a model genai-prices knows")
        source = f"{source} (same_as {base.source})"
    changes = {k: v for k, v in fields.items() if k in PRICE_KEYS or k == "provider"}
    # a price set by hand is flat: the library's long-context tiers of that key no longer apply
    tiers = tuple(
        (start, kept) for start, prices in base.tiers if (kept := {k: v for k, v in prices.items() if k not in changes})
    )
    return replace(base, **changes, source=source, tiers=tiers)


@dataclass(frozen=True)
class Pricing:
    """How runs are priced: genai-prices, then the entry of ``table`` that names the model (exact name first,
    then the longest matching glob), then ``sets`` for every run; ``model`` prices every run as that model."""

    table: dict[str, dict[str, Any]] = field(default_factory=dict)
    sets: dict[str, Any] = field(default_factory=dict)
    model: str | None = None
    table_name: str = "--prices"

    def prices(self, model: str | None, when: date | None = None) -> Prices:
        """The prices of ``model`` on the day ``when`` (None: today's list prices)."""
        name = (self.model or model or "").lower()
        out = library_prices(name, when) if name else unknown()
        entry = self.table.get(name)
        if entry is None:
            globs = [k for k in self.table if any(c in k for c in "*?[") and fnmatch.fnmatchcase(name, k)]
            entry = self.table[max(globs, key=len)] if globs else None
        if entry is not None:
            out = _apply(out, entry, f"{self.table_name} [{name}]", when)
        if self.sets:
            out = _apply(out, self.sets, "--price", when)
        return out

    def key(self) -> dict[str, Any]:
        """What decides prices, for ids of stored results."""
        return {"table": self.table, "sets": self.sets, "model": self.model}


DEFAULT_PRICING = Pricing()


def pricing_from_options(
    prices_file: Path | None = None, price_sets: list[str] | None = None, model: str | None = None
) -> Pricing:
    """The Pricing CLI options describe (``--prices FILE``, ``--price key=value``, ``--model``)."""
    table = load_price_file(prices_file) if prices_file else {}
    return Pricing(
        table,
        parse_price_sets(price_sets or []),
        model or None,
        f"--prices {prices_file}" if prices_file else "--prices",
    )
