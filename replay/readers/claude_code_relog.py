"""Claude Code: a conversation logged again as a new chain (seen in 2.0.2 sessions resumed after an hour).

The session file gets the earlier conversation written a second time, all stamped with one instant: a user line
with ``parentUuid`` null opens a new chain, and every earlier message follows again under a new ``uuid``, the
assistant lines with the ``message.id`` of the response they copy but no ``requestId``. The copies are not new
requests and add nothing to the prompt: the server is sent that history once. A response line is a copy when it
has no ``requestId`` and its ``message.id`` was already read with one; from there until the next response with a
``requestId``, a user line whose content is the same as an earlier user line's is a copy too. Content that only
the new chain holds (a user prompt the first chain lacks) is kept. ``runs.metadata.relogged_lines`` counts what
was skipped.
"""

from __future__ import annotations

import json
from typing import Any


class RelogFilter:
    """Says which conversation lines of a session file log again a message already read."""

    def __init__(self) -> None:
        self.answered: set[str] = set()  # message.ids read with a requestId
        self.user_contents: set[int] = set()  # hashes of the user lines' content read so far
        self.copying = False  # since the last copied response, with no new response after it
        self.skipped = 0

    def is_copy(self, kind: Any, obj: dict) -> bool:
        """Whether line ``obj`` (of type ``kind``) re-logs a message already read (and counts it)."""
        msg = obj.get("message")
        if not isinstance(msg, dict):
            return False
        if kind == "assistant":
            mid = msg.get("id")
            if obj.get("requestId"):
                self.copying = False
                if mid:
                    self.answered.add(str(mid))
                return False
            if mid and str(mid) in self.answered:
                self.copying = True
                self.skipped += 1
                return True
            return False
        if kind == "user":
            key = hash(json.dumps(msg.get("content"), sort_keys=True, default=str))
            if self.copying and key in self.user_contents:
                self.skipped += 1
                return True
            self.user_contents.add(key)
        return False
