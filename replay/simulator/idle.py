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

MIN_CACHEABLE = 4096  # tokens: Anthropic's largest minimum cacheable prefix
FIVE_MINUTES, HOUR = 300.0, 3600.0
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


def idle_before(run: RunArrays) -> np.ndarray:
    """Per request, the idle time since the end of the previous response (NaN for the first and where the log
    dates neither)."""
    sent, done = request_times(run)
    gap = np.full(run.n_requests, np.nan)
    gap[1:] = sent[1:] - done[:-1]
    return gap


def inferred_ttl(run: RunArrays) -> float:
    """The TTL of a Claude Code log whose usage splits its writes by duration but leaves the split at zero (an
    Anthropic-compatible endpoint: ``ccb-android-avd-*``): 1 h when a request sent more than 5 minutes after the
    previous response ended still read ``MIN_CACHEABLE`` tokens more than was warm before the run (its own
    conversation, not the shared prompt), else 5 minutes. Claude Code writes its main thread for 1 h and its
    sub-agents for 5 minutes where the split is recorded (ccl-worktrees-ef958aa1: the main run's writes are 1 h, its
    six sub-agents' 5 minute); the ccb main runs read their conversation back after 6 to 93 minutes."""
    m = run.n_requests
    if m < 2 or len(run.rec_cache_read) != m:
        return FIVE_MINUTES
    idle = idle_before(run)[1:]
    warm = max(int(run.rec_cache_read[0]), 0)
    own = run.rec_cache_read[1:] - warm >= MIN_CACHEABLE
    return HOUR if bool((np.isfinite(idle) & (idle > FIVE_MINUTES) & own).any()) else FIVE_MINUTES
