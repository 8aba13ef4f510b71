"""What LiteLLM's ``usage.prompt_tokens`` counts for Anthropic models, settled per run from the numbers.

LiteLLM builds ``prompt_tokens`` from the Messages API usage as ``input_tokens + cache_read_input_tokens`` before
1.77.3 and adds ``cache_creation_input_tokens`` from 1.77.3 on (``AnthropicConfig.calculate_usage``; 1.77.3, 1.77.5,
1.78.0, 1.79.0 and 1.110.2 read). A log written through LiteLLM (OpenHands V1, mini-swe-agent 2.x) does not say which
LiteLLM wrote it, so a run's rule comes from its usages (``prompt_rule``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def is_count(v: Any) -> bool:
    """An integer count (a JSON ``true`` is not one)."""
    return isinstance(v, int) and not isinstance(v, bool)


def prompt_rule(usages: Iterable[tuple[Any, Any, Any]]) -> tuple[bool, str]:
    """(whether ``prompt_tokens`` counts cache writes, the reason) for one run's (prompt, read, write) as written.

    LiteLLM's rule is prompt = uncached input + reads, plus writes from 1.77.3 on (above): uncached input
    is never negative under either, so one usage whose prompt is below its reads + writes shows the older rule (the
    reason counts them). When none is, the newer rule is taken (the two agree wherever no cache was written)."""
    written = [
        (n, p, r, w) for n, (p, r, w) in enumerate(usages) if is_count(p) and is_count(r) and is_count(w) and w > 0
    ]
    below = [(n, p, r, w) for n, p, r, w in written if p < r + w]
    if below:
        n, prompt, read, write = below[0]
        return False, (
            f"input + cache_read: cache writes are left out ({len(below)} of {len(written)} usages with "
            f"cache writes have prompt_tokens below reads + writes; usage {n}: {prompt:,} < {read:,} + "
            f"{write:,})"
        )
    return True, "input + cache_read + cache_write: no usage has prompt_tokens below its cache reads + writes"


def canonical(prompt: int, read: int, write: int, with_writes: bool) -> dict[str, int] | None:
    """Canonical fields (prompt = input + read + write) of usage written under the rule, or None when the rule
    cannot give these numbers (uncached input would be negative)."""
    uncached = prompt - read - (write if with_writes else 0)
    if uncached < 0:
        return None
    return {"prompt_tokens": prompt if with_writes else prompt + write, "input_tokens": uncached}
