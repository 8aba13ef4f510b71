"""Price table (USD per million input tokens) and prompt cost under a cache model's multipliers."""

from __future__ import annotations

# Input prices, USD / Mtok (list prices; override with your own table).
PRICES: dict[str, float] = {
    "claude-opus-4-5": 5.0, "claude-opus-4-6": 5.0, "claude-opus-4-7": 5.0, "claude-opus-4-8": 5.0,
    "claude-opus": 15.0, "claude-sonnet": 3.0, "claude-haiku-4-5": 1.0, "claude-3-5-haiku": 0.8,
    "claude-haiku": 0.8, "gpt-5-mini": 0.25, "gpt-5-nano": 0.05, "gpt-5": 1.25, "gpt-4o-mini": 0.15,
    "gpt-4o": 2.5, "gpt-4.1": 2.0, "o3": 2.0, "minimax": 0.3,
}
DEFAULT_PRICE = 3.0
# Output tokens cost this many times input tokens (list prices: Anthropic 5x, OpenAI GPT-5 family 8x, 4o 4x).
OUTPUT_MULTIPLIER = 5.0


def input_price(model: str | None, table: dict[str, float] | None = None) -> float:
    """$/Mtok for the longest table key contained in the model name."""
    table = PRICES if table is None else table
    name = (model or "").lower()
    hits = [k for k in table if k in name]
    return table[max(hits, key=len)] if hits else DEFAULT_PRICE


def prompt_cost(uncached: int, cached: int, written: int, price: float, read_mult: float,
                write_mult: float) -> float:
    """USD for one prompt: uncached input + cache writes (premium) + cache reads (discount)."""
    return (uncached + written * write_mult + cached * read_mult) * price / 1e6


def summary_cost(history_tokens: int, summary_tokens: int, price: float, read_mult: float) -> float:
    """USD for the summarisation calls: each reads the history it summarises (its prefix is the previous
    request's, so cached) and writes the summary as output."""
    return (history_tokens * read_mult + summary_tokens * OUTPUT_MULTIPLIER) * price / 1e6
