"""Request-time views: a policy that recomputes part of its view before every request (markers that go when room
returns) must report as rewritten only what actually changed, so the cache keeps the prefix that stayed the same."""

from __future__ import annotations

import numpy as np

from replay.policies.base import Policy


class RequestTime:
    """``with RequestTime(policy):`` snapshot the forms, the dirty mark and the summary; on exit set the dirty mark to
    the first position whose form changed (or where the summary moved), ignoring changes that were undone."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy

    def __enter__(self) -> RequestTime:
        p = self.policy
        self.forms, self.dirty = p.forms[:p.end].copy(), p.dirty
        self.summary = (p.summary_at, p.summary_id)
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is not None:
            return False
        p = self.policy
        diff = np.flatnonzero(p.forms[:p.end] != self.forms)
        dirty = min(self.dirty, int(diff[0]) if len(diff) else p.end)
        if (p.summary_at, p.summary_id) != self.summary:
            dirty = min([dirty] + [s for s in (self.summary[0], p.summary_at) if s >= 0])
        p.dirty = dirty
        return False
