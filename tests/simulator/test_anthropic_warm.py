"""Anthropic's cache and the prefix other sessions keep warm: what a run's first request read cached (the shared
system prompt and tools) is read again after an idle gap that expired the run's own entries when the log shows
other sessions kept it (bradymholt/dotfiles 2.0.2: 10,981 read on the first request and again after every gap of 20
minutes to 21 hours; Eduardodmb/ClaudeWork 2.1.41: 17,504 after gaps of up to 15 hours), and not when it shows
they did not (a sub-agent of corpus ccl-worktrees-ef958aa1 reads 0 after its gap)."""

from __future__ import annotations

import numpy as np

from replay.run_arrays import build
from replay.simulator.cache_fit import fit_caches, written_minimum
from replay.simulator.caches import make_cache, minimum_written
from replay.simulator.run_start import warm_kept
from tests.simulator.cache_state import CacheState

SIZES = np.array([3000, 500, 700, 900], dtype=np.int64)  # the prefix item (system prompt and tools), then messages


def _cum(end: int) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(SIZES[:end])]).astype(np.int64)


def _reads(warm: int, times: list[float], kept: bool) -> list[int]:
    """Cached tokens of requests k = 0, 1, ... sent at ``times``, request k holding items 0..k (system breakpoint
    after item 0)."""
    model = "claude-sonnet-4-5-20250929"
    state = CacheState(make_cache("anthropic"), model, len(times), 0, warm, SIZES, warm_kept=warm if kept else 0)
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
        state = CacheState(make_cache("anthropic"), model, 4, 0, 3000, SIZES, warm_kept=3000 if kept else 0)
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


def test_a_warm_prefix_ending_inside_a_message_is_read_whole():
    """The warm prefix may end at a block boundary inside one of the log's items (a first message whose last block
    differs between the sibling agents that share the rest): austinweitao/claude-backup's workflow agents read
    2,078 warm tokens where their first message ends at 2,324. The entry covers that item and holds the warm
    tokens: the first request reads them all (before: only the 397 up to the item before) and writes the rest."""
    model = "claude-sonnet-4-5-20250929"
    state = CacheState(make_cache("anthropic", min_cacheable=1024), model, 3, 0, 3200, SIZES)
    hit, written = state.request(2, 2, 1, 0.0, _cum(2), -1, 0)  # the first request: nothing rewritten
    assert (hit, written) == (3200, 300)
    assert state.request(2, 3, 1, 10.0, _cum(3), -1, 0)[0] == 3500  # what request 0 wrote at its end


def test_the_minimum_cacheable_prefix_is_what_the_log_writes():
    """A log whose requests write prefixes shorter than the model's documented minimum shows its server caching
    them: the minimum is the largest documented tier not above the shortest prefix written (the server's count,
    which another tokenizer puts a few percent off). The austinweitao/claude-backup workflow agents on
    claude-opus-4-8 (documented: 4,096, as Opus 4.5) write prefixes of 2,415 tokens."""
    assert minimum_written(4096, 2415) == 2048
    assert minimum_written(4096, 1267) == 1024
    assert minimum_written(4096, 5000) == 4096  # no evidence against the documented one
    assert minimum_written(1024, 600) == 600  # under every tier: what the log shows
    sent = ["2026-01-06T16:24:29Z", "2026-01-06T16:24:39Z"]
    requests = [
        {"step": k, "ts": t, "cache_read": r, "cache_write": w, "prompt_tokens": 20_000}
        for k, (r, w, t) in enumerate(zip([2078, 2292], [337, 222], sent, strict=True))
    ]
    items = [{"step": k, "kind": "user_text", "chars": 400, "ts": t} for k, t in enumerate(sent)]
    run = build("r", items, requests, model="claude-opus-4-8")
    assert written_minimum(run) == 2048
    fit = fit_caches([run], {"r": "claude-code-jsonl"})[0].cache_fit
    assert fit is not None and fit.cache().min_cacheable == 2048 and "min 2,048 as its writes show" in fit.label()
    assert written_minimum(build("r", items, requests, model="claude-sonnet-4-5-20250929")) == 0
