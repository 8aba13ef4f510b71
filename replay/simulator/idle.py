"""When each request was sent and when its response ended, from the log's item timestamps: the idle time Anthropic's
cache TTL counts runs from the end of the previous response to the sending of the next request.

A request's own timestamp in a Claude Code log is its response's first line, seconds after the request was sent
(the prompt is processed first); its response ends at its last line. Across the corpus, a cached prefix is read
again whenever the next request was sent at most 300 s after the previous response ended (0.2 to 301.8 s: six
requests, three of them 306-337 s apart by their own timestamps) and lost from 313.8 s on (ccs-livecd-gen request
76, ccl-worktrees sub-agent a4ca request 17). Measured between the requests' own timestamps a 5 minute TTL
expires them too early."""

from __future__ import annotations

import numpy as np

from replay.model import KINDS
from replay.run_arrays import RunArrays

PRODUCED = [KINDS.index(k) for k in ("assistant_text", "reasoning", "tool_call")]


def request_times(run: RunArrays) -> tuple[np.ndarray, np.ndarray]:
    """Per request, (sent, done): the newest timestamp among the items it adds that its previous response did not
    produce (never after its own timestamp), and the newest among the items its own response produced (never
    before it); its own timestamp where the log dates none of them (NaN where that is unknown too)."""
    m = run.n_requests
    own = run.req_ts.astype(np.float64)
    if not m or not len(run.ts) or not np.isfinite(run.ts).any():
        return own.copy(), own.copy()
    # what the request adds besides the previous response (a tool's result, the user's message) was written just
    # before it was sent: its newest timestamp; the request's own where the log dates none of it
    given = ~np.isin(run.kind, PRODUCED) & np.isfinite(run.ts)
    at = np.searchsorted(run.req_step, run.step[given], side="left")
    newest = np.full(m, -np.inf)
    ok = (at < m) & (run.req_step[np.minimum(at, m - 1)] == run.step[given])
    np.maximum.at(newest, at[ok], run.ts[given][ok])
    sent = np.where(np.isfinite(newest) & (np.isnan(own) | (newest <= own)), newest, own)
    # a response's items come after its request's step, up to the next request's
    mine = np.isin(run.kind, PRODUCED) & np.isfinite(run.ts)
    at = np.searchsorted(run.req_step, run.step[mine], side="left") - 1
    ends = np.full(m, -np.inf)
    np.maximum.at(ends, at[at >= 0], run.ts[mine][at >= 0])
    done = np.where(np.isfinite(ends), np.fmax(ends, own), own)
    return sent, done
