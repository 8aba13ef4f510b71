"""Copilot CLI token counts as canonical usage, in each CLI version's shape.

A model call's counts (``session.usage_record``'s ``usage``, durable from 1.0.x on; the live ``assistant.usage`` is
never written) and a compaction's summariser call (``session.compaction_complete.compactionTokensUsed``: 1.0.34
``{input, output, cachedInput}``, 1.0.102 ``{inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens,
requestCount, model}``). ``inputTokens`` is the whole prompt, cache reads and writes included: the CLI (1.0.102) logs
an Anthropic response of 1,000 uncached + 3,000 read + 500 written tokens as ``inputTokens`` 4,500, an OpenAI-style
one as its ``prompt_tokens`` (changelog 1.0.51: "input token usage includes cached"). The uncached input is what
is left after the reads and writes.
"""

from __future__ import annotations

from typing import Any, TypeGuard

# interactionType of calls that are the conversation's own requests; others (MCP sampling, background work) are not
CONVERSATION_CALLS = (None, "conversation-agent", "conversation-subagent", "conversation-user")


def _count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def call_usage(usage: dict) -> tuple[dict[str, Any], str | None]:
    """A usage record as Request fields, and why it cannot be one (None when it can): counts that are not
    non-negative integers, or reads and writes larger than the whole prompt."""
    prompt, output = usage.get("inputTokens"), usage.get("outputTokens")
    read, write = usage.get("cacheReadTokens") or 0, usage.get("cacheWriteTokens") or 0
    if not (_count(prompt) and _count(read) and _count(write)) or not (output is None or _count(output)):
        return {}, "inputTokens, outputTokens, cacheReadTokens and cacheWriteTokens must be non-negative integers"
    if read + write > prompt:
        return {}, f"cacheReadTokens {read} + cacheWriteTokens {write} exceed inputTokens {prompt}, which includes them"
    return {
        "input_tokens": prompt - read - write,
        "cache_read": read,
        "cache_write": write,
        "output_tokens": output,
        "prompt_tokens": prompt,
    }, None


def compaction_usage(used: dict) -> dict[str, Any]:
    """A ``compactionTokensUsed`` as context-event usage (``input`` the uncached part, ``prompt`` the logged whole);
    counts None when they are not of the logged shape. 1.0.34 wrote the call's ``prompt_tokens`` as ``input`` and
    its cached tokens as ``cachedInput``; 1.0.102 writes the call-usage shape (``inputTokens``, ...) and how many
    calls it sums (``requestCount``)."""
    if "inputTokens" in used:
        fields, problem = call_usage(used)
        if problem is not None:
            return {"input": None, "cache_read": None, "output": used.get("outputTokens"), "prompt": None}
        out = {
            "input": fields["input_tokens"],
            "cache_read": fields["cache_read"],
            "cache_write": fields["cache_write"],
            "output": fields["output_tokens"],
            "prompt": fields["prompt_tokens"],
        }
        if _count(used.get("requestCount")):
            out["requests"] = used["requestCount"]
        return out
    prompt, cached = used.get("input"), used.get("cachedInput") or 0
    if not (_count(prompt) and _count(cached)) or cached > prompt:
        return {"input": None, "cache_read": None, "output": used.get("output"), "prompt": prompt}
    return {"input": prompt - cached, "cache_read": cached, "output": used.get("output"), "prompt": prompt}


def session_totals(model_metrics: Any) -> tuple[list[dict[str, Any]], str | None]:
    """A ``session.shutdown.modelMetrics`` (model -> ``{requests: {count}, usage: {inputTokens, outputTokens,
    cacheReadTokens, cacheWriteTokens}}``) as canonical per-model totals (``model``, ``requests``, ``input`` the
    uncached part, ``cache_read``, ``cache_write``, ``output``), and why it cannot be read (None when it can).

    The CLI (1.0.34's app.js, its usage-metrics tracker) adds every ``assistant.usage`` event of the process to the
    model's entry: one per model call, sub-agents' included, in the call-usage shape (``inputTokens`` the whole
    prompt). Those events are never written, so a resumed session starts from zero: each shutdown's totals cover
    the calls since the process started."""
    if not isinstance(model_metrics, dict):
        return [], "modelMetrics is not an object"
    out = []
    for model, entry in model_metrics.items():
        entry = entry if isinstance(entry, dict) else {}
        requests = entry["requests"].get("count") if isinstance(entry.get("requests"), dict) else None
        usage = entry.get("usage")
        fields, problem = call_usage(usage if isinstance(usage, dict) else {})
        if problem is not None or not _count(requests) or fields["output_tokens"] is None:
            return [], f"model {model!r}: {problem or 'requests.count and usage.outputTokens must be counts'}"
        out.append(
            {
                "model": model or None,
                "requests": requests,
                "input": fields["input_tokens"],
                "cache_read": fields["cache_read"],
                "cache_write": fields["cache_write"],
                "output": fields["output_tokens"],
            }
        )
    return out, None
