"""Each provider's prompt cache, defined once: the cache model a run is simulated and calibrated under
(replay.simulator.cache_fit) and whether the provider bills what it writes to the cache as a write
(replay.simulator.billing, replay.simulator.request_costs). Providers are genai-prices ids (``Prices.provider``).

From each provider's own documentation:

- Anthropic: explicit ``cache_control`` breakpoints; a write costs the listed write price (1.25x input for 5
  minutes, 2x for 1 hour), a read the listed read price.
- OpenAI (and Azure's OpenAI service), Google Gemini (implicit caching), DeepSeek (context caching on disk):
  automatic prefix caches that charge nothing to write (the usage reports no write); reads at the listed price.
- MiniMax: passive caching on every API call of 512 tokens or more (its "Prompt Caching" guide, for the
  OpenAI- and the Anthropic-compatible API alike): an automatic prefix cache whose writes cost nothing beyond
  input and are not reported ("new input tokens: billed at standard input price"; the usage's
  ``cache_creation_input_tokens`` is 0); reads at the listed price (0.2x input for
  M2.7). The Anthropic-compatible API also takes ``cache_control`` breakpoints, so a harness that sends them
  (Claude Code) is simulated under breakpoints; the writes stay unbilled where MiniMax reports none (Claude Code
  logs driving MiniMax-M2.7 and M3 mostly record ``cache_creation_input_tokens`` 0 while reading up to 140k
  tokens). A request whose usage reports a write took the explicit path, billed at the price data's write price
  for M2.7 (its explicit-caching table): the bill prices that request's writes as writes
  (replay.simulator.request_costs). OpenAI's rules (minimum 1,024 tokens, 128-token steps) stand in for the
  passive cache's, which MiniMax does not detail beyond the 512-token minimum.

A provider not listed here is served by OpenAI's rules (OpenAI-compatible servers follow them), or by breakpoints
where its harness sends them. Where the price data lists a cache-read price for the model (xAI, Z.ai, Moonshot,
Fireworks, OpenRouter, ...), the provider caches and bills what it lists (``PRICED``: reads at the listed price,
writes at the listed write price, else as the cache model says); otherwise it has no cache prices of its own
(``documented`` False): its reads and writes cost the cache model's multipliers on its input price.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ProviderCache:
    """One provider's cache: its model for requests without breakpoints (``automatic``), the model of its API's
    ``cache_control`` breakpoints (``explicit``; None: its API takes none), and whether a write is billed as one
    (False: what the cache stores is billed as uncached input and no write is reported)."""

    automatic: str
    explicit: str | None
    writes_billed: bool
    documented: bool = True

    def models(self) -> tuple[str, ...]:
        """The cache models that are this provider's own: its listed cache prices apply under them (none for an
        undocumented provider: the cache model's multipliers on its input price do)."""
        if not self.documented:
            return ()
        return (self.automatic,) + ((self.explicit,) if self.explicit else ())


OPENAI = ProviderCache("openai", None, writes_billed=False)
PROVIDERS: dict[str, ProviderCache] = {
    "anthropic": ProviderCache("anthropic", "anthropic", writes_billed=True),
    "openai": OPENAI,
    "azure": OPENAI,
    "deepseek": ProviderCache("deepseek", None, writes_billed=False),
    "google": ProviderCache("gemini", None, writes_billed=False),
    "minimax": ProviderCache("openai", "anthropic", writes_billed=False),
}
PRICED = ProviderCache("openai", "anthropic", writes_billed=True)
UNDOCUMENTED = ProviderCache("openai", "anthropic", writes_billed=True, documented=False)


def provider_cache_of(provider: str | None, listed_read: bool) -> ProviderCache:
    """The cache of genai-prices provider ``provider``; for one not listed (or None), ``PRICED`` when the price
    data lists a cache-read price for the model (``listed_read``), else ``UNDOCUMENTED``."""
    return PROVIDERS.get(provider or "") or (PRICED if listed_read else UNDOCUMENTED)
