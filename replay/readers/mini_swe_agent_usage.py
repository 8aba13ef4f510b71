"""Usage of one mini-swe-agent model call, from the provider response its model class keeps (``extra.response``).

Two response shapes (mini-swe-agent 2.x ``models/``):
- Chat Completions (``LitellmModel``, ``LitellmTextbasedModel``, OpenRouter, Portkey, Requesty): ``usage.prompt_tokens``
  with ``prompt_tokens_details.cached_tokens`` as cache reads; for Anthropic models LiteLLM adds
  ``cache_creation_input_tokens`` (newer LiteLLM also ``prompt_tokens_details.cache_creation_tokens``) as cache writes,
  OpenRouter ``prompt_tokens_details.cache_write_tokens``. Whether LiteLLM's ``prompt_tokens`` counts the writes
  depends on its version (mini-swe-agent 2.x allows LiteLLM >= 1.75.5, before and after the change): the run's rule
  is settled from its numbers
  (``replay.readers.litellm_prompt_rule``).
- Responses API (``LitellmResponseModel``, ``OpenRouterResponseModel``, ``PortkeyResponseModel``; the response object
  itself is the assistant message, ``"object": "response"``): ``usage.input_tokens`` is the whole prompt, with
  ``input_tokens_details.cached_tokens`` as cache reads, and ``output_tokens``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from replay.model import BadRecord, Record, Request
from replay.readers.json_fields import sub_dict
from replay.readers.litellm_prompt_rule import canonical, prompt_rule

RULE_KEY = "prompt_tokens_rule"


def call_usage(response: Any) -> dict[str, Any]:
    """Request fields of one call's recorded response; writes are left as written (``settle`` fixes the rule)."""
    if not isinstance(response, dict):
        return {}
    usage = response.get("usage")
    if not isinstance(usage, dict):
        return {}
    model = response.get("model") if isinstance(response.get("model"), str) else None
    if "prompt_tokens" not in usage and "input_tokens" in usage:  # Responses API: input_tokens is the whole prompt
        prompt = usage.get("input_tokens")
        read = sub_dict(usage, "input_tokens_details").get("cached_tokens") or 0
        return _fields(prompt, read, None, usage.get("output_tokens"), model)
    details = sub_dict(usage, "prompt_tokens_details")
    read = details.get("cached_tokens") or usage.get("cache_read_input_tokens") or 0
    write = usage.get("cache_creation_input_tokens")
    for key in ("cache_creation_tokens", "cache_write_tokens"):  # newer LiteLLM; OpenRouter's usage accounting
        if write is None:
            write = details.get(key)
    return _fields(usage.get("prompt_tokens"), read, write, usage.get("completion_tokens"), model)


def _fields(prompt: Any, read: Any, write: Any, output: Any, model: str | None) -> dict[str, Any]:
    counts = isinstance(prompt, int) and isinstance(read, int) and not isinstance(prompt, bool)
    fields = {
        "prompt_tokens": prompt,
        "cache_read": read,
        "output_tokens": output,
        "input_tokens": prompt - read if counts else None,
        "model": model,
    }
    if write is not None:
        fields["cache_write"] = write
    return fields


def settle(records: list[Record], metadata: dict[str, Any]) -> None:
    """Make every request that recorded cache writes canonical (prompt = input + read + write) under the run's LiteLLM
    rule, noted in ``metadata["prompt_tokens_rule"]``; a usage no rule gives is quarantined, the request kept."""
    written = [
        (i, r)
        for i, r in enumerate(records)
        if isinstance(r, Request) and r.cache_write and isinstance(r.prompt_tokens, int) and r.cache_read is not None
    ]
    if not written:
        return
    with_writes, why = prompt_rule([(r.prompt_tokens, r.cache_read, r.cache_write) for _, r in written])
    metadata[RULE_KEY] = why
    for i, r in written:
        fixed = canonical(r.prompt_tokens or 0, r.cache_read or 0, r.cache_write or 0, with_writes)
        if fixed is None:
            records.append(
                BadRecord(
                    r.line or 0,
                    f"usage prompt_tokens={r.prompt_tokens} < cache_read={r.cache_read}: no LiteLLM rule gives that; "
                    "request kept without usage",
                    repr(r)[:2000],
                )
            )
            records[i] = replace(
                r, prompt_tokens=None, input_tokens=None, cache_read=None, cache_write=None, output_tokens=None
            )
            continue
        records[i] = replace(r, prompt_tokens=fixed["prompt_tokens"], input_tokens=fixed["input_tokens"])
