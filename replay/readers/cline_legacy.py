"""Claude Dev 1.x (Cline before 2.0) task files, read as Cline 2.0 and later write them.

Claude Dev 1.2.2 to 1.9.7 (``src/core/ClaudeDev.ts``; tasks persisted from 1.2.2, "Add task history") keep the UI
messages in ``claude_messages.json`` (Cline 2.0 renamed it ``ui_messages.json``, moving the old file on the first
load of the task, ``Cline.getSavedClineMessages``) and write each request's usage in a separate
``say: "api_req_finished"`` message after its ``api_req_started`` (whose text holds only ``request``). Cline 2.0
writes the usage into ``api_req_started`` instead, and its webview still folds an old task's ``api_req_finished``
into the request before it (``webview-ui/src/utils/combineApiRequests.ts``): so does this module.
"""

from __future__ import annotations

import json
from typing import Any

LEGACY_UI_FILE = "claude_messages.json"
USAGE_KEYS = ("tokensIn", "tokensOut", "cacheWrites", "cacheReads", "cost")


def combine_finished(messages: list[tuple[int, dict]]) -> tuple[list[tuple[int, dict]], int]:
    """The messages with each ``api_req_finished``'s usage written into the ``api_req_started`` before it (the
    finished message dropped), and how many were folded. A finished message with no request before it, or whose
    text is not a JSON object, is kept as it is."""
    out: list[tuple[int, dict]] = []
    started: int | None = None  # index in ``out`` of the latest api_req_started
    folded = 0
    for line, m in messages:
        kind = m.get("say") or m.get("ask")
        if kind == "api_req_started":
            started = len(out)
        elif kind == "api_req_finished" and started is not None:
            usage = _object(m.get("text"))
            if usage is not None:
                start_line, start = out[started]
                info = _object(start.get("text")) or {}
                info.update({k: v for k, v in usage.items() if k in USAGE_KEYS})
                out[started] = (start_line, {**start, "text": json.dumps(info, ensure_ascii=False)})
                started, folded = None, folded + 1
                continue
        out.append((line, m))
    return out, folded


def _object(text: Any) -> dict[str, Any] | None:
    if not isinstance(text, str):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
