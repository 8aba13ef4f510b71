"""The server-side iterations a log records inside its requests' responses, beyond the request's own: the calls the
API ran for one request without the client sending another (Claude Code 2.1.114 on: ``usage.iterations``, read by
replay.readers.claude_code_iterations into ``runs.metadata.server_iterations``), and the calls a harness makes
beside the conversation that the log records with their usage (Copilot CLI 1.0.102's ``session.usage_record`` of
another ``interactionType``, e.g. MCP sampling: ``runs.metadata.side_calls``, bill rows ``side``).

Each is billed as the API bills it: every entry of ``usage.iterations`` at its own model's rates (platform.claude.com
docs: the advisor tool's "Usage and billing", compaction's "Understanding usage"): an ``advisor_message`` at the
advisor's model, a ``fallback_message`` at the fallback model, the executor's further ``message`` iterations (after
the advisor's advice) and a ``compaction`` at the request's model. No policy changes them: a replay charges them
as recorded.
"""

from __future__ import annotations

from dataclasses import dataclass

from replay.metrics.summariser_calls import count, usage_counts

# what a bill row calls each iteration type (``call`` in replay.metrics.recorded_bill)
CALLS = {"advisor_message": "advisor", "compaction": "compaction"}
FURTHER = "iteration"  # the executor's further ``message`` iterations and a ``fallback_message``
SIDE = "side"  # a call beside the conversation (``side_calls``)


@dataclass(frozen=True)
class ServerCall:
    """One recorded server-side iteration: the request step it belongs to, its bill row's ``call`` name, the model
    that ran it (None: the request's) and its five billed counts (uncached input, cache reads, 5 minute writes,
    1 hour writes, output)."""

    step: int
    call: str
    model: str | None
    counts: tuple[int, int, int, int, int]


def server_calls(metadata: dict) -> list[ServerCall]:
    """The server-side iterations of one run's ``runs.metadata``, in log order, then its side calls; an entry without
    a step, an input or an output count is left out (nothing to bill). A 1 hour part larger than the writes is
    capped at them."""
    out = []
    iterations = [(c, None) for c in metadata.get("server_iterations") or []]
    for c, side in iterations + [(c, SIDE) for c in metadata.get("side_calls") or []]:
        counts = usage_counts(c)
        if counts is None or count(c.get("step")) is None:
            continue
        model = c.get("model") if isinstance(c.get("model"), str) and c["model"] else None
        call = side or CALLS.get(str(c.get("type")), FURTHER)
        out.append(ServerCall(c["step"], call, model, counts))
    return out
