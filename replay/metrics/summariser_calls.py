"""The summariser's model calls a log records beside its requests: a compaction's or condensation's own call, which
is not a request of the run (it does not continue the conversation) but is billed as one.

The readers keep such a call's usage on its context event (``runs.metadata.context_events[].usage``, canonical:
``input`` uncached input, ``cache_read``, ``cache_write`` with ``cache_write_1h`` its 1 hour part, ``output``), and
the model that served it as ``summariser_model`` when the log names one (else it is the model of the run's
request at its step). Which logs record it, from each harness's writer:

- OpenHands V1: the condenser LLM's ``token_usages`` (usage id ``condenser``), one per condensation;
- Claude Code 2.1: a compaction fork (``subagents/agent-acompact-*.jsonl``): its last response is the call;
- Codex: the ``token_count`` logged just before a ``compacted`` line (a compact task's own model call); remote
  compaction v2: the ``token_usage_record`` of the response the ``compacted`` line names;
- Copilot CLI: ``session.compaction_complete``'s ``compactionTokensUsed``.
- inspect_ai: the summary strategy's own ``model`` event, just before its ``compaction`` event.

Claude Code 1.0 and 2.0 (a ``compact_boundary`` or ``isCompactSummary`` line alone) and Gemini CLI's chat
compression record no usage for the call: the bill cannot hold it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from replay.run_arrays import CLEARING_EVENTS


@dataclass(frozen=True)
class SummariserCall:
    """One recorded summariser call: the request step its event takes effect at, the model that served it (None:
    the request's at its step) and its five billed counts (uncached input, cache reads, 5 minute writes, 1 hour
    writes, output)."""

    step: int
    model: str | None
    counts: tuple[int, int, int, int, int]


def count(value: Any) -> int | None:
    """A non-negative integer count, else None (a JSON ``true`` is not one)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def event_counts(event: dict) -> tuple[int, int, int, int, int] | None:
    """The five billed counts of an event's recorded ``usage`` (``usage_counts``)."""
    return usage_counts(event.get("usage"))


def usage_counts(usage: Any) -> tuple[int, int, int, int, int] | None:
    """The five billed counts of one recorded call's canonical usage (``input`` uncached, ``cache_read``,
    ``cache_write`` with ``cache_write_1h`` its 1 hour part, ``output``), or None when it records none (not a dict,
    or no input or output count: a call's bill needs both). Reads and writes it leaves out are 0; a 1 hour part
    larger than the writes is capped at them."""
    if not isinstance(usage, dict):
        return None
    uncached, output = count(usage.get("input")), count(usage.get("output"))
    if uncached is None or output is None:
        return None
    read = count(usage.get("cache_read")) or 0
    write = count(usage.get("cache_write")) or 0
    hour = min(count(usage.get("cache_write_1h")) or 0, write)
    return uncached, read, write - hour, hour, output


def is_summariser_event(event: dict) -> bool:
    """Whether a context event made a summariser call: every kind but the ones that only clear content (Claude
    Code's microcompact, Cline's truncation: a condensation recorded without a summary)."""
    kind = event.get("kind")
    truncation = event.get("harness_kind") == "truncation" and event.get("summary_seq") is None
    return kind not in CLEARING_EVENTS and not truncation


def recorded_calls(metadata: dict) -> tuple[list[SummariserCall], int]:
    """(the summariser calls whose usage the log records, in log order; how many summariser calls its events made
    in all, recorded or not) of one run's ``runs.metadata``."""
    calls, made = [], 0
    for ev in metadata.get("context_events") or []:
        if not isinstance(ev, dict) or not isinstance(ev.get("step"), int) or not is_summariser_event(ev):
            continue
        made += 1
        counts = event_counts(ev)
        if counts is None:
            continue
        model = ev.get("summariser_model")
        calls.append(SummariserCall(max(ev["step"], 0), model if isinstance(model, str) and model else None, counts))
    return calls, made
