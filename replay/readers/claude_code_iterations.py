"""One API response's server-side iterations (``message.usage.iterations``, logged by Claude Code from 2.1.114):
which one is the request's own prompt, and the others, billed as calls that are not requests.

The API runs some requests as several sampling iterations and lists each one's usage (Anthropic's SDK types
``BetaMessageIterationUsage``, ``BetaAdvisorMessageIterationUsage``, ``BetaCompactionIterationUsage``,
``BetaFallbackMessageIterationUsage``): ``message`` (the executor sampling; again after a server tool such as the
advisor), ``advisor_message`` (the advisor sub-inference, with its own ``model``), ``compaction`` (API-side
compaction) and ``fallback_message`` (the fallback model that served the response, with its ``model``). The
top-level usage leaves advisor and compaction iterations out (platform.claude.com docs, advisor tool "Usage and
billing", compaction "Understanding usage": to bill a request, sum every entry of ``usage.iterations``).

Claude Code 2.1.332 takes a response's prompt size from its first iteration that is neither ``advisor_message``
nor ``compaction``, when that one is a ``message`` with all four counts (its ``mvn``); it prices each
``advisor_message`` iteration at that iteration's model beside the response (``gwt``/``kks``). So here: the
request's usage is that first executor iteration's, and every other iteration is a server call of the request's
step, at its own model where the log names one (``runs.metadata.server_iterations``, billed by
replay.metrics.server_iterations). A single iteration, or one whose counts are not all logged, leaves the top-level
usage as it is.
"""

from __future__ import annotations

from typing import Any

OWN = ("message",)  # the iteration types that can be the request's own sampling (Claude Code's mvn)
NOT_THE_CONVERSATION = ("advisor_message", "compaction")  # Claude Code's hd(): never the conversation's prompt
COUNTS = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "output_tokens")


def _count(value: Any) -> bool:
    return type(value) is int and value >= 0


def _valid(it: Any) -> bool:
    return isinstance(it, dict) and isinstance(it.get("type"), str) and all(_count(it.get(k)) for k in COUNTS)


def split(usage: dict) -> tuple[dict, list[dict]] | None:
    """(the usage of the request's own iteration, in the shape of a top-level usage with its ``model`` when it names
    one; the other iterations as server
    calls ``{"type", "model", "input", "cache_read", "cache_write", "cache_write_1h", "output"}``), or None when the
    top-level usage stands: fewer than two iterations, a count missing from one, or no ``message`` iteration first
    among those that are the conversation's."""
    its = usage.get("iterations")
    if not isinstance(its, list) or len(its) < 2 or not all(_valid(it) for it in its):
        return None
    own = next((i for i, it in enumerate(its) if it["type"] not in NOT_THE_CONVERSATION), None)
    if own is None or its[own]["type"] not in OWN:
        return None
    first = its[own]
    request = {k: first[k] for k in COUNTS}
    if isinstance(first.get("model"), str) and first["model"]:  # the model that ran it, when the log names one
        request["model"] = first["model"]
    if isinstance(first.get("cache_creation"), dict):
        request["cache_creation"] = first["cache_creation"]
    return request, [_call(it) for i, it in enumerate(its) if i != own]


def _call(it: dict) -> dict:
    split_ = it.get("cache_creation")
    hour = split_.get("ephemeral_1h_input_tokens") if isinstance(split_, dict) else None
    return {
        "type": it["type"],
        "model": it["model"] if isinstance(it.get("model"), str) and it["model"] else None,
        "input": it["input_tokens"],
        "cache_read": it["cache_read_input_tokens"],
        "cache_write": it["cache_creation_input_tokens"],
        **({"cache_write_1h": hour} if _count(hour) else {}),
        "output": it["output_tokens"],
    }
