"""Where a Claude Code run's tool list changes: the first tools its ToolSearch loads.

Claude Code 2.1 sends most tool schemas deferred and loads them with ToolSearch; the reader notes each load as a
``tool-reference`` entry of ``runs.metadata.unlogged`` (the schemas the server expands are not in the log). The
request after a run's first load reads no more than what was cached before the run started (its warm prefix):
0 in ccl-worktrees main (request 1) and its sub-agent a4ca (request 2), which started cold; 10,496 in the
sub-agents ab1e6 (request 2) and a52886 (request 3), which started reading 10,403 their siblings kept warm. The
tool list comes before the system prompt, so its change invalidates every cached prefix of the run's own; later
loads in the same run keep the cache (a52886 requests 4 and 5, worktrees main request 12 read all they held)."""

from __future__ import annotations

import numpy as np

LOAD = "tool-reference"


def tool_list_changes(metadata: dict, n_requests: int) -> np.ndarray:
    """Per request, True at the request that first holds a tool load (the first ``tool-reference`` note's step)."""
    out = np.zeros(n_requests, dtype=bool)
    steps = [
        u["step"]
        for u in metadata.get("unlogged") or []
        if isinstance(u, dict) and u.get("reason") == LOAD and isinstance(u.get("step"), int)
    ]
    if steps and 0 < min(steps) < n_requests:
        out[min(steps)] = True
    return out
