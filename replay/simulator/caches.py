"""Prefix-cache models: their parameters and prices. A hit is the longest cached prefix of the view, found via the
policy's dirty position; what each model charges per request is compiled, in replay.simulator.kernels.caches."""

from __future__ import annotations

import math
from dataclasses import dataclass

from replay.errors import ReplayError

# Minimum cacheable prompt length by model, first matching name part wins (Anthropic's prompt-caching table:
# Opus 4.5/4.6 and Haiku 4.5 4,096; Sonnet 4.6 2,048; Haiku 3/3.5 2,048; other Opus/Sonnet 1,024). Opus 4.7,
# 4.8 and 5 are not in that table: taken as Opus 4.5/4.6.
ANTHROPIC_MIN: tuple[tuple[str, int], ...] = (
    ("haiku-4-5", 4096),
    ("opus-4-5", 4096),
    ("opus-4-6", 4096),
    ("opus-4-7", 4096),
    ("opus-4-8", 4096),
    ("opus-5", 4096),
    ("sonnet-4-6", 2048),
    ("3-5-haiku", 2048),
    ("3-haiku", 2048),
    ("haiku-3", 2048),
)


ANTHROPIC_TIERS = (1024, 2048, 4096)  # the minimums that table documents


def anthropic_min_cacheable(model: str | None) -> int:
    """Minimum cacheable prompt length by model (1,024 for the other Opus and Sonnet models)."""
    name = (model or "").lower()
    return next((v for k, v in ANTHROPIC_MIN if k in name), 1024)


def minimum_written(documented: int, smallest: int) -> int:
    """The minimum cacheable prefix when a log shows a prefix of ``smallest`` tokens written (read plus write of a
    request that wrote): ``documented`` when that is no more, else the largest documented tier not above it (the
    server's own count, which another tokenizer puts a few percent off, is between it and the next tier), or
    ``smallest`` itself below them all."""
    if smallest >= documented:
        return documented
    return max((t for t in ANTHROPIC_TIERS if t <= smallest), default=smallest)


@dataclass
class CacheModel:
    """Base: no cache."""

    name = "none"
    write_multiplier: float = 1.0
    read_multiplier: float = 1.0

    def reset(self, model: str | None = None) -> None:
        """Settle the settings that depend on the run's model (the entries live in the compiled loop)."""


@dataclass
class Anthropic(CacheModel):
    """Explicit breakpoints (system end and the last message), min cacheable, TTL refreshed on hit."""

    name = "anthropic"
    ttl: float = 300.0
    write_multiplier: float = 1.25
    read_multiplier: float = 0.1
    min_cacheable: int = 0  # 0: by model
    # positions a look-up goes back from a breakpoint: Anthropic documents "approximately 20" blocks; Claude Code logs
    # (one breakpoint per request: 2.1.97 to 2.1.146) show requests that added 21 or 22 items reading all the
    # previous prompt held (6 requests, 3 sessions), and ones that added 23 or 24 only the system prompt (3 requests)
    lookback: int = 22
    breakpoints: tuple[str, ...] = ("system", "last")

    def reset(self, model: str | None = None) -> None:
        if self.ttl >= 3600 and self.write_multiplier == 1.25:
            self.write_multiplier = 2.0


@dataclass
class OpenAIAuto(CacheModel):
    """OpenAI's automatic prompt caching, as its prompt-caching guide describes it.

    - Prompts from 1,024 tokens are cached; a hit covers the longest cached prefix in steps of 128 tokens.
    - Best effort: a request is routed by a hash of its first few hundred tokens (and ``prompt_cache_key``) to a
      server that recently saw that prefix; past roughly 15 requests a minute for one prefix, or when that server
      is busy, it spills to another one. ``hit_rate`` is the share of requests that reach the server holding the
      conversation's own prefix; that server last cached the newest earlier request that reached it too (lag j with
      probability hit_rate * (1 - hit_rate) ** (j - 1)); a request that spills reads only what every server keeps
      warm (the run's shared harness prefix, ``warm``). 1.0: every request reaches it (the deterministic model).
    - Cached prefixes stay after 5-10 minutes idle, up to an hour off-peak (extended retention: 24 h): ``ttl``.
    - The response is cached with its prompt (``output_cached``): a request that resends the previous response's
      output items whole, its reasoning first (the Responses API's encrypted reasoning, which Codex sends back and
      its rollout sizes), right after that prompt reads them too. Codex rollouts show it on every request:
      codex-rs 0.119 (Codex Desktop, gpt-5.4) read 55,552 and 85,248 tokens after a 47,339- and a 70,548-token
      prompt whose responses wrote 8,270 and 14,841 output tokens (prompt + output, less under one 128-token step).
    """

    name = "openai"
    min_tokens: int = 1024
    step: int = 128
    ttl: float = 600.0
    read_multiplier: float = 0.1
    hit_rate: float = 1.0
    output_cached: bool = True
    # the response is cached as the log holds it, its reasoning as logged (else only when it opens with reasoning
    # the harness sends back whole and sizes: ``kernels.caches.output_end``)
    output_as_logged: bool = False

    def min_for(self, model: str | None) -> int:
        """The shortest prompt that is cached, for a run of ``model``."""
        return self.min_tokens


@dataclass
class DeepSeekDisk(OpenAIAuto):
    """DeepSeek's context caching on disk (its context-caching guide), automatic and without a write premium.

    - Prefixes are stored as units at request boundaries, where the request's input ends and where the model's
      output ends (the guide since the V4 models), in 64-token storage units (a unit's tail short of 64 tokens is
      not cached). The output unit is the response as generated, its reasoning first: a harness that sends the
      response back as the log holds it (Claude Code's thinking blocks) reads it too (``output_as_logged``). The
      olivia215215/cabinet-governance Claude Code sessions on deepseek-v4-flash and -pro show it: of 2,549
      requests, 1,912 read past the previous request's prompt, 1,905 of them by at most the previous response's
      output tokens plus one 64-token unit; the other 637 read the previous prompt's unit alone (the fitted hit
      rate takes those).
    - A request hits a unit only when it holds that whole unit: a rewrite inside a stored prefix loses the unit
      for that request; the server then stores the common prefix it detected as a unit of its own, which the next
      requests can hit.
    - Best effort (``hit_rate`` as for OpenAI); unused units are dropped after hours to days (``ttl``: 1 h here).
    """

    name = "deepseek"
    min_tokens: int = 64
    step: int = 64
    ttl: float = 3600.0
    output_as_logged: bool = True


def gemini_min_cacheable(model: str | None) -> int:
    """Gemini's implicit-caching minimum: 2,048 tokens for 2.5 models, 4,096 for newer ones; 1.x and 2.0 models
    have no implicit caching (never cached)."""
    name = (model or "").lower()
    if "gemini-1" in name or "gemini-2.0" in name:
        return 2**62
    return 2048 if "2.5" in name else 4096


@dataclass
class GeminiImplicit(OpenAIAuto):
    """Gemini's implicit caching (2.5 and newer, on by default): automatic prefix reuse from a per-model minimum,
    no write premium, best effort (Google advises sending requests with the same prefix close together; no hit is
    guaranteed: ``hit_rate``). Google states no retention or granularity: ``ttl`` (5 min) and ``step`` (1) are
    assumptions; the corpus' recorded reads are not multiples of any block."""

    name = "gemini"
    min_tokens: int = 0  # 0: by model
    step: int = 1
    ttl: float = 300.0
    output_cached: bool = False  # not documented, not measured

    def min_for(self, model: str | None) -> int:
        return self.min_tokens or gemini_min_cacheable(model)


@dataclass
class VLLMBlocks(CacheModel):
    """vLLM automatic prefix caching: only full blocks, LRU over ``capacity`` blocks (tail blocks go first)."""

    name = "vllm"
    block: int = 16
    capacity: int = 1_000_000
    read_multiplier: float = 0.0


@dataclass
class LlamaCppSlot(CacheModel):
    """llama.cpp server, one slot, cache_prompt on, cache_reuse 0: the common prefix with the last prompt."""

    name = "llamacpp"
    read_multiplier: float = 0.0


CACHE_MODELS: dict[str, type[CacheModel]] = {
    c.name: c for c in (CacheModel, Anthropic, OpenAIAuto, DeepSeekDisk, GeminiImplicit, VLLMBlocks, LlamaCppSlot)
}
AUTO = "auto"  # each run under its own provider's cache model (replay.simulator.billing)


def make_cache(name: str, **params: float) -> CacheModel:
    """A cache model by name: none, anthropic, openai, deepseek, gemini, vllm, llamacpp (``auto`` is resolved per run by
    replay.simulator.billing, not here)."""
    if name not in CACHE_MODELS:
        raise ReplayError(f"--cache {name}: choose one of {AUTO}, {', '.join(CACHE_MODELS)}")
    for key, value in params.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
            raise ReplayError(f"cache model {name}: {key}={value!r}: expected a finite number >= 0")
        if key == "ttl" and value == 0:
            raise ReplayError(f"cache model {name}: ttl=0: a cache entry must live at least a moment (seconds > 0)")
        if key == "hit_rate" and value > 1:
            raise ReplayError(f"cache model {name}: hit_rate={value!r}: a share of requests, between 0 and 1")
    try:
        return CACHE_MODELS[name](**params)
    except TypeError:
        fields = ", ".join(f for f in CACHE_MODELS[name].__dataclass_fields__ if f != "name")
        raise ReplayError(f"cache model {name}: unknown parameter in {sorted(params)}; it takes {fields}") from None
