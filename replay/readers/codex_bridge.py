"""The history codex-rs 0.36-0.50 rebuilt after a compaction, which its rollout does not log.

Those versions log a compaction as ``compacted`` with the summary alone (``CompactedItem`` of one field,
``message``; ``replacement_history`` arrives in 0.63.0), and rebuild the history (core/src/codex/compact.rs
``build_compacted_history``) as the session's initial context (``build_initial_context``: the
``<user_instructions>`` and ``<environment_context>`` messages) followed by one user message, the "history bridge"
(templates/compact/history_bridge.md): the text of every user message in the history but those two kinds,
joined by blank lines ("(none)" when there is none), then the summary ("(no summary available)" when empty), in
the template below (its text as the 0.36.0-0.50.0 npm binaries hold it). From #4068 (September 2025) the joined
user messages are cut in the middle to 80,000 bytes (``COMPACT_USER_MESSAGE_MAX_TOKENS`` x 4): the reader does not
cut them, and warns when they are longer. 0.57.0 logs ``compacted`` alone too but rebuilds another way (no bridge
template in its binary), which the reader does not know: it warns there.
"""

from __future__ import annotations

from typing import Any

from replay.model import Item
from replay.readers.base import text_of, version_tuple
from replay.readers.builder import RunBuilder
from replay.readers.codex_history import History

BRIDGE_HEAD = (
    "You were originally given instructions from a user over one or more turns. Here were the user messages:\n\n"
)
BRIDGE_MIDDLE = (
    "\n\nAnother language model started to solve this problem and produced a summary of its thinking process. You"
    " also have access to the state of the tools that were used by that language model. Use this to build on the"
    " work that has already been done and avoid duplicating work. Here is the summary produced by the other"
    " language model, use the information in this summary to assist with your own analysis:\n\n"
)
SESSION_PREFIXES = ("<user_instructions>", "<environment_context>")  # InputMessageKind's two initial-context kinds
CUT_BYTES = 80_000
BRIDGE_VERSIONS = ((0, 36, 0), (0, 50, 0))  # the releases checked to rebuild so (first and last in the registry)


def cli_version(text: Any) -> tuple[int, ...] | None:
    """(major, minor, patch) of session_meta's ``cli_version``; None when it is not one."""
    return version_tuple(text.split("-")[0]) if isinstance(text, str) else None


def initial_context_kind(payload: dict) -> str | None:
    """Which initial-context message a response item is (its opening tag), None when it is none."""
    if payload.get("type") != "message" or payload.get("role") != "user":
        return None
    text = text_of(payload.get("content")).lstrip()
    return next((tag for tag in SESSION_PREFIXES if text.startswith(tag)), None)


def bridged(b: RunBuilder, p: dict, line: int, live: History, initial: dict[str, dict]) -> dict:
    """``p`` (a ``compacted`` line without a replacement history) with the history codex-rs rebuilt: the latest
    initial-context messages, then the bridge, which is the summary item (``message``)."""
    version = cli_version(b.run.metadata.get("cli_version"))
    if version is None or not BRIDGE_VERSIONS[0] <= version[:2] + (0,) <= BRIDGE_VERSIONS[1]:
        b.warn(
            line,
            f"compacted line without a replacement history from codex-rs {b.run.metadata.get('cli_version')!r}: the"
            " history it rebuilt after the summary is not in the log (known for 0.36-0.50 only); the prompts after"
            " it may read low",
        )
        return p
    live.sync(b.seq)
    items = {r.seq: r for r in b.records if isinstance(r, Item)}
    users = [
        items[q].text
        for q in live.seqs
        if q in items
        and items[q].role == "user"
        and items[q].kind in ("user_text", "summary")
        and not items[q].text.lstrip().startswith(SESSION_PREFIXES)
    ]
    joined = "\n\n".join(users) if users else "(none)"
    if len(joined.encode()) > CUT_BYTES:
        b.warn(
            line,
            f"the user messages codex-rs put in its compaction bridge are {len(joined.encode())} bytes: it cut their"
            f" middle to {CUT_BYTES} (from #4068), read whole here, so the prompts after it may read high",
        )
    summary = p["message"] if isinstance(p.get("message"), str) and p["message"] else "(no summary available)"
    bridge = BRIDGE_HEAD + joined + BRIDGE_MIDDLE + summary
    message = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": bridge}]}
    context = [initial[tag] for tag in SESSION_PREFIXES if tag in initial]
    return {**p, "message": bridge, "replacement_history": [*context, message]}
