"""A Cline request's usage, as Cline's API handlers report it, from either of the two places Cline writes it.

Every provider handler yields ``{type: "usage", inputTokens, outputTokens, cacheWriteTokens, cacheReadTokens}``
(``src/core/api/providers/*.ts``), and the task sums them per request. What ``inputTokens`` counts depends on the
handler: the Anthropic-style ones (anthropic, vertex, bedrock, claude-code, minimax, aihubmix) pass the API's
``input_tokens``, which leaves out cache reads and writes, and the OpenRouter-style ones (openrouter, cline,
vercel-ai-gateway, gemini) subtract the cached tokens from the prompt; the OpenAI-compatible ones (``openai``,
``openai-native``, ``deepseek``, ``litellm``, ``xai``, ...) pass ``prompt_tokens``, which already holds the cache
reads (``prompt_tokens_details.cached_tokens``) and DeepSeek's cache misses (``prompt_cache_miss_tokens``, reported as
cache writes). So the prompt is ``inputTokens`` alone for those, and ``inputTokens`` plus reads and writes for the
rest (a provider not listed is read the Anthropic way, as every Cline task before ``modelInfo`` was).

``ui_messages.json``: each ``api_req_started`` text carries ``tokensIn`` / ``tokensOut`` / ``cacheReads`` /
``cacheWrites`` (the sums above). ``api_conversation_history.json`` (Cline 3.40 on, ``feat: add mode and token
metrics info to storage messages``): each assistant message carries ``modelInfo {modelId, providerId, mode}`` and
``metrics {tokens {prompt, completion, cached}, cost}``, where ``prompt`` is ``inputTokens``, ``completion``
``outputTokens`` and ``cached`` the sum of cache writes and reads: the prompt is known, the split of the cached
tokens into reads and writes is not (both left unknown when any were cached).
"""

from __future__ import annotations

from typing import Any

# Handlers whose inputTokens is the API's prompt_tokens, cached tokens included (Cline src/core/api/providers).
PROMPT_INCLUDES_CACHE = frozenset(
    {
        "openai",
        "openai-native",
        "deepseek",
        "litellm",
        "xai",
        "groq",
        "requesty",
        "together",
        "fireworks",
        "doubao",
        "moonshot",
        "nebius",
        "qwen",
        "qwen-code",
        "sambanova",
        "cerebras",
        "huggingface",
        "huawei-cloud-maas",
        "baseten",
        "zai",
        "oca",
        "hicap",
        "nousResearch",
        "sapaicore",
        "dify",
    }
)


def _number(value: Any) -> bool:
    return type(value) in (int, float)


def includes_cache(provider: Any) -> bool:
    """Whether the provider handler's ``inputTokens`` already counts the cached tokens."""
    return isinstance(provider, str) and provider in PROMPT_INCLUDES_CACHE


def ui_usage(info: dict, provider: Any) -> dict[str, Any]:
    """Usage of an ``api_req_started`` text (``tokensIn``, ``cacheReads``, ``cacheWrites``, ``tokensOut``); a
    cancelled request that reports no tokens has none."""
    tokens_in, reads, writes = (info.get(k) for k in ("tokensIn", "cacheReads", "cacheWrites"))
    if info.get("cancelReason") and not any((tokens_in, reads, writes)) and not info.get("tokensOut"):
        return {}
    if tokens_in is None and reads is None and writes is None:
        return {}
    readable = all(_number(p) or p is None for p in (tokens_in, reads, writes))
    # Cline writes numbers; any other value makes the request's usage unreadable (quarantined by the builder)
    if readable and includes_cache(provider):
        prompt = tokens_in
        uncached = None if tokens_in is None else tokens_in - (reads or 0) - (writes or 0)
    else:
        prompt = sum(p or 0 for p in (tokens_in, reads, writes)) if readable else None
        uncached = tokens_in
    return {
        "input_tokens": uncached,
        "cache_read": reads,
        "cache_write": writes,
        "output_tokens": info.get("tokensOut"),
        "prompt_tokens": prompt,
    }


def metrics_usage(message: dict) -> dict[str, Any]:
    """Usage of an ``api_conversation_history.json`` assistant message from its ``metrics.tokens`` (none without)."""
    metrics = message.get("metrics")
    tokens = metrics.get("tokens") if isinstance(metrics, dict) else None
    if not isinstance(tokens, dict):
        return {}
    prompt, completion, cached = (tokens.get(k) for k in ("prompt", "completion", "cached"))
    provider = (
        (message.get("modelInfo") or {}).get("providerId") if isinstance(message.get("modelInfo"), dict) else None
    )
    if not (_number(prompt) and _number(cached)):
        return {"prompt_tokens": prompt, "output_tokens": completion}  # unreadable: quarantined by the builder
    if not cached:
        return {
            "input_tokens": prompt,
            "cache_read": 0,
            "cache_write": 0,
            "output_tokens": completion,
            "prompt_tokens": prompt,
        }
    if includes_cache(provider):
        return {"input_tokens": prompt - cached, "output_tokens": completion, "prompt_tokens": prompt}
    return {"input_tokens": prompt, "output_tokens": completion, "prompt_tokens": prompt + cached}
