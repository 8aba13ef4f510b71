"""inspect_ai's per-call usage (``ModelEvent.output``) as Request fields, by the inspect_ai version that wrote it.

What inspect_ai's ``ModelUsage`` means moved between versions (its CHANGELOG.md):
- to 0.3.183 ``input_tokens`` included cached tokens for some providers (OpenAI, Google); from 0.3.184 it is the
  full-rate input only, so the prompt is ``input + cache_read + cache_write``. ``total_tokens`` is the provider's
  total (input with cached tokens, plus output) in both, so the prompt is read as total - output when there is no
  better figure.
- Google before 0.3.245 left Gemini's thinking tokens out of ``output_tokens`` (``reasoning_tokens`` holds them) while
  ``total_tokens`` counts them: total - output there is prompt + thinking, and the output billed is both.
- ``ModelOutput.input_context_tokens`` (newer versions) is the size of the request built from the input, cached
  tokens included. ``usage`` is then "summed over every request" a generate call made (Anthropic's server-side
  compaction iterations, Gemini's retries of a malformed function call): the prompt is that size, not the sum.
"""

from __future__ import annotations

import re
from typing import Any

from replay.readers.builder import validate_usage

VERSION_RE = re.compile(r"^\s*(\d+)\.(\d+)\.(\d+)")
GOOGLE_THOUGHTS_IN_OUTPUT = (0, 3, 245)


def parse_version(text: Any) -> tuple[int, int, int] | None:
    """``"0.3.95.dev16+g6527d0861"`` -> (0, 3, 95); None for what is not a version."""
    m = VERSION_RE.match(text) if isinstance(text, str) else None
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def usage_fields(
    output: dict[str, Any], provider: str = "", version: tuple[int, int, int] | None = None
) -> tuple[dict[str, int | None], str | None]:
    """(Request usage fields, a note when the call's usage sums several requests) for one model event's output.

    A count that is not a plausible number is passed on as it is, for the builder to quarantine."""
    usage = output.get("usage")
    if not isinstance(usage, dict) or usage.get("input_tokens") is None:
        return {}, None
    raw = {
        "input_tokens": usage["input_tokens"],
        "output_tokens": usage.get("output_tokens") or 0,
        "cache_read": usage.get("input_tokens_cache_read") or 0,
        "cache_write": usage.get("input_tokens_cache_write") or 0,
        "prompt_tokens": usage.get("total_tokens"),
    }
    counts, problem = validate_usage(raw)
    if problem:
        return raw, None
    thoughts, context = _count(usage.get("reasoning_tokens")), _count(output.get("input_context_tokens"))
    out, read, write, total = (counts[k] for k in ("output_tokens", "cache_read", "cache_write", "prompt_tokens"))
    if provider == "google" and version is not None and version < GOOGLE_THOUGHTS_IN_OUTPUT:
        out += thoughts or 0  # total_tokens counts the thinking that output_tokens left out
    note = None
    if context is not None:
        prompt = context
        summed = counts["input_tokens"] + read + write
        if summed > context:
            note = (
                f"usage sums several requests of one generate call ({summed:,} input tokens against a "
                f"{context:,}-token request): the prompt is the request's size, its cache figures the sums cut to it"
            )
            read, write = min(read, prompt), min(write, max(prompt - read, 0))
    elif total:
        prompt = total - out
    else:
        prompt = counts["input_tokens"] + read + write
    return {
        "prompt_tokens": prompt,
        "input_tokens": max(prompt - read - write, 0),
        "cache_read": read,
        "cache_write": write,
        "output_tokens": out,
    }, note


def _count(value: Any) -> int | None:
    """A plausible token count as an int, else None (an optional figure that is damaged is not used)."""
    clean, problem = validate_usage({"output_tokens": value})
    return None if problem or value is None else int(clean["output_tokens"])
