"""One run's cache entries charged request by request from Python, with the compiled cache models the request loop
uses: the cache models' own tests drive them with hand-made histories."""

from __future__ import annotations

import math

import numpy as np

from replay.simulator.caches import CacheModel
from replay.simulator.kernels.caches import (
    N_STATE,
    cache_params,
    cache_request,
    cap_entries,
    drop_entries,
    server_resets,
    switch_drops,
    warm_entry,
)


class CacheState:
    """One run's cache entries, charged request by request."""

    def __init__(
        self,
        cache: CacheModel,
        model: str | None,
        n_requests: int,
        overhead: int,
        warm: int,
        tokens: np.ndarray,
        warm_kept: int = 0,
    ) -> None:
        self.params = cache_params(cache, model)
        cap = 2 * n_requests + 12
        self.pos, self.tok = np.zeros(cap, np.int64), np.zeros(cap, np.int64)
        self.exp, self.n = np.zeros(cap, np.float64), np.zeros(N_STATE, np.int64)
        self.overhead = overhead
        self.warm_kept = warm_kept
        warm_entry(overhead, warm, tokens, self.pos, self.tok, self.exp, self.n, warm_kept)

    def cap(self, dirty: int, prefix_end: int, cap: int) -> int:
        """``dirty`` for a request with a ``cache_cap`` (>= 0): no later than the end of the prefix item, whose
        entries keep ``cap`` tokens at most, where ``server_resets``."""
        if cap < 0 or not server_resets(self.params):
            return dirty
        dirty = min(dirty, prefix_end)
        cap_entries(self.tok, self.pos, self.n, dirty, cap)
        return dirty

    def switch_model(self) -> None:
        """The next request goes to another model: nothing cached so far is read where ``switch_drops``."""
        if switch_drops(self.params):
            drop_entries(self.n, self.pos, self.tok, self.exp, self.warm_kept > 0 and server_resets(self.params))

    def request(
        self,
        dirty_from: int,
        end: int,
        system_end: int,
        ts: float,
        cumtok: np.ndarray,
        summary_at: int,
        summary_tokens: int,
        sent: float = math.nan,
        done: float = math.nan,
        mid: int = -1,
    ) -> tuple[int, int]:
        """(cached, written) for one request: ``cumtok[p]`` real tokens of the items before position p; ``sent``
        and ``done``: when it was sent and its response ended (replay.simulator.idle), NaN unknown; ``mid``: a
        breakpoint at the end of the last assistant message (-1: none, the end)."""
        hit, written = cache_request(
            self.params,
            self.pos,
            self.tok,
            self.exp,
            self.n,
            dirty_from,
            end,
            system_end,
            ts,
            cumtok,
            self.overhead,
            summary_at,
            summary_tokens,
            sent,
            done,
            end if mid < 0 else mid,
        )
        return int(hit), int(written)
