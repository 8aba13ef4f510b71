"""Anthropic's cache and the prefix other sessions keep warm: what a run's first request read cached (the shared
system prompt and tools) is read again after an idle gap that expired the run's own entries, as Claude Code logs
show (bradymholt/dotfiles 2.0.2: 10,981 read on the first request and again after gaps of 20 minutes to 21 hours;
Eduardodmb/ClaudeWork 2.1.41: 17,504 after gaps of up to 15 hours)."""

from __future__ import annotations

import numpy as np

from replay.simulator.caches import make_cache
from tests.simulator.cache_state import CacheState

SIZES = np.array([3000, 500, 700, 900], dtype=np.int64)  # the prefix item (system prompt and tools), then messages


def _cum(end: int) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(SIZES[:end])]).astype(np.int64)


def _reads(warm: int, times: list[float]) -> list[int]:
    """Cached tokens of requests k = 0, 1, ... sent at ``times``, request k holding items 0..k (system breakpoint
    after item 0)."""
    state = CacheState(make_cache("anthropic"), "claude-sonnet-4-5-20250929", len(times), 0, warm, SIZES)
    return [state.request(max(k, 1), k + 1, 1, t, _cum(k + 1), -1, 0)[0] for k, t in enumerate(times)]


def test_the_warm_prefix_outlives_the_runs_own_entries():
    # each request reads what the one before it wrote (3,000, then 4,200 = items 0-2); request 2 comes 1,000 s after
    # request 1 (TTL 300 s): the run's own entries are gone, the shared prefix is not
    assert _reads(3000, [0.0, 10.0, 1010.0, 1020.0]) == [3000, 3000, 3000, 4200]
    # a run that found nothing warm reads nothing after the gap: only what it wrote itself, now expired
    assert _reads(0, [0.0, 10.0, 1010.0, 1020.0]) == [0, 3000, 0, 4200]
