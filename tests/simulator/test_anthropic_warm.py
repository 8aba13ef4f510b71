"""Anthropic's cache and the prefix other sessions keep warm: what a run's first request read cached (the shared
system prompt and tools) is read again after an idle gap that expired the run's own entries when the log shows
other sessions kept it (bradymholt/dotfiles 2.0.2: 10,981 read on the first request and again after every gap of 20
minutes to 21 hours; Eduardodmb/ClaudeWork 2.1.41: 17,504 after gaps of up to 15 hours), and not when it shows
they did not (a sub-agent of corpus ccl-worktrees-ef958aa1 reads 0 after its gap)."""

from __future__ import annotations

import numpy as np

from replay.run_arrays import build
from replay.simulator.caches import make_cache
from replay.simulator.run_start import warm_kept
from tests.simulator.cache_state import CacheState

SIZES = np.array([3000, 500, 700, 900], dtype=np.int64)  # the prefix item (system prompt and tools), then messages


def _cum(end: int) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(SIZES[:end])]).astype(np.int64)


def _reads(warm: int, times: list[float], kept: bool) -> list[int]:
    """Cached tokens of requests k = 0, 1, ... sent at ``times``, request k holding items 0..k (system breakpoint
    after item 0)."""
    model = "claude-sonnet-4-5-20250929"
    state = CacheState(make_cache("anthropic"), model, len(times), 0, warm, SIZES, warm_kept=kept)
    return [state.request(max(k, 1), k + 1, 1, t, _cum(k + 1), -1, 0)[0] for k, t in enumerate(times)]


def test_a_kept_warm_prefix_outlives_the_runs_own_entries():
    times = [0.0, 10.0, 1010.0, 1020.0]  # request 2 comes 1,000 s after request 1 (TTL 300 s)
    # each request reads what the one before it wrote (3,000, then 4,200 = items 0-2); after the gap the run's own
    # entries are gone, the kept warm prefix is not
    assert _reads(3000, times, kept=True) == [3000, 3000, 3000, 4200]
    assert _reads(3000, times, kept=False) == [3000, 3000, 0, 4200]  # read once, then it lives as the run's own
    assert _reads(0, times, kept=True) == [0, 3000, 0, 4200]  # nothing was warm


def test_a_kept_warm_prefix_is_read_on_the_model_switched_to():
    """bradymholt/dotfiles 058a90bd (2.0.2): request 6, the first on Opus 4.1 after Sonnet 4.5, reads the 10,981
    warm tokens; nothing else the run cached on Sonnet."""
    model = "claude-sonnet-4-5-20250929"
    for kept, after in ((True, 3000), (False, 0)):
        state = CacheState(make_cache("anthropic"), model, 4, 0, 3000, SIZES, warm_kept=kept)
        reads = [state.request(max(k, 1), k + 1, 1, 10.0 * k, _cum(k + 1), -1, 0)[0] for k in range(3)]
        state.switch_model()
        assert reads + [state.request(3, 4, 1, 30.0, _cum(4), -1, 0)[0]] == [3000, 3000, 3500, after]


def _run(reads: list[int], sent: list[str], models: list[str | None] | None = None):
    items = [{"step": k, "kind": "user_text", "chars": 400, "ts": t} for k, t in enumerate(sent)]
    models = models or [None] * len(reads)
    requests = [
        {"step": k, "ts": t, "cache_read": r, "prompt_tokens": 20_000, "model": m}
        for k, (r, t, m) in enumerate(zip(reads, sent, models, strict=True))
    ]
    return build("r", items, requests)


def test_the_log_says_whether_the_warm_prefix_was_kept():
    sent = ["2026-01-06T16:24:29Z", "2026-01-06T16:24:39Z", "2026-01-06T20:01:26Z", "2026-01-06T20:01:38Z"]
    assert warm_kept(_run([10_981, 15_711, 10_981, 22_687], sent), 10_981, 300.0)  # after 3.6 h: the warm prefix
    assert not warm_kept(_run([10_981, 15_711, 0, 22_687], sent), 10_981, 300.0)  # nothing
    assert not warm_kept(_run([10_981, 15_711, 10_981, 22_687], sent), 10_981, 86_400.0)  # no gap past the TTL
    assert not warm_kept(_run([0, 15_711, 0, 22_687], sent), 0, 300.0)  # nothing was warm
    # a switch of model, its first request on the new one reading the warm prefix (or not): evidence too
    soon = ["2026-01-06T16:24:29Z", "2026-01-06T16:24:39Z", "2026-01-06T16:25:26Z", "2026-01-06T16:25:38Z"]
    opus = [None, None, "claude-opus-4-1-20250805", "claude-opus-4-1-20250805"]
    assert warm_kept(_run([10_981, 15_711, 10_981, 22_687], soon, opus), 10_981, 300.0)
    assert not warm_kept(_run([10_981, 15_711, 0, 22_687], soon, opus), 10_981, 300.0)
