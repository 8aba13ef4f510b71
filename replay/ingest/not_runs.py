"""Logs a supported harness writes that hold no run, recognised so that ingest can say what they lack and which
file holds the run, instead of "unknown format".

- Aider's ``--analytics-log FILE`` (``aider/analytics.py`` ``Analytics.event``): one JSON object a line,
  ``{"event", "properties", "user_id", "time"}``. Its ``message_send`` events give each reply's token counts and
  cost (``base_coder.py`` ``show_usage_report``) but no message of the conversation, so no prompt can be rebuilt.
"""

from __future__ import annotations

import json

ANALYTICS_KEYS = {"event", "properties", "user_id", "time"}


def why_no_run(head: str) -> tuple[int, str] | None:
    """(line, reason) when the file's head is a harness log known to hold no run, else None."""
    for n, line in enumerate(head.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            first = json.loads(line)
        except ValueError:
            return None
        if isinstance(first, dict) and set(first) == ANALYTICS_KEYS and isinstance(first["properties"], dict):
            return n, (
                "an aider analytics log (--analytics-log): its message_send events hold each reply's token counts "
                "but none of the conversation, so there is no run to replay; ingest the session's "
                ".aider.chat.history.md instead (its Tokens lines carry the same counts)"
            )
        return None
    return None
