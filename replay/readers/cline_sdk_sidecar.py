"""Where a Cline 4.1 compaction sidecar (``<id>.compaction.json``) stands in its session's transcript.

The sidecar says ``source_message_count``: the transcript messages its compacted ``messages`` replace. Compaction
writes it with the messages the request saw (``createCompactionStateAwarePrepareTurn``, sdk/packages/core
extensions/context/compaction.ts). The CLI rewrites it when it restarts a session (a model or provider change,
apps/cli/src/runtime/interactive/session-runtime.ts): the new sidecar counts every message so far and holds the
compacted view plus the transcript messages since, copied. The agentic summary's ``generatedAt`` (epoch ms) tells
the compaction's own place: the first transcript message created after it (``ts``) came after the compaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from replay.readers.json_fields import sub_dict


@dataclass(frozen=True)
class Placement:
    """The compaction stands before transcript message ``at``; the sidecar's last ``copies`` messages are the
    transcript's messages ``at .. source_message_count`` (read from the transcript, not again from the sidecar)."""

    at: int
    copies: int
    count: int  # source_message_count as the sidecar gives it


def placement(sidecar: dict, messages: list[Any]) -> Placement | str:
    """Where the sidecar's compaction applies, or why it cannot (Cline would not apply it either)."""
    count = sidecar.get("source_message_count")
    if not isinstance(count, int) or isinstance(count, bool) or not 0 < count <= len(messages):
        return (
            f"source_message_count {count!r} does not fit the transcript's {len(messages)} messages: Cline would not "
            "apply it"
        )
    compacted = [m for m in sidecar.get("messages") or [] if isinstance(m, dict)]
    summary = next((m for m in compacted if sub_dict(m, "metadata").get("kind") == "compaction_summary"), None)
    generated = sub_dict(summary, "metadata").get("generatedAt") if summary is not None else None
    if not isinstance(generated, int | float) or isinstance(generated, bool):
        return Placement(count, 0, count)
    at = next((j for j in range(count) if _after(messages[j], generated)), count)
    copies = count - at
    if copies and not _same(compacted[len(compacted) - copies :], messages[at:count]):
        return Placement(count, 0, count)  # not the transcript's tail copied: the count is all there is to go by
    return Placement(at, copies, count)


def _after(message: Any, when: float) -> bool:
    ts = message.get("ts") if isinstance(message, dict) else None
    return isinstance(ts, int | float) and not isinstance(ts, bool) and ts > when


def _same(copies: list[dict], originals: list[Any]) -> bool:
    """The copies say what the originals say (role and content; ids and ts may be minted again)."""
    return len(copies) == len(originals) and all(
        isinstance(o, dict) and c.get("role") == o.get("role") and c.get("content") == o.get("content")
        for c, o in zip(copies, originals, strict=True)
    )
