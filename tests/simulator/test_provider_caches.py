"""The automatic prefix caches (OpenAI, Gemini, DeepSeek) request by request, on hand-made histories whose every
figure is worked out here."""

from __future__ import annotations

import numpy as np
import pytest

from replay.errors import ReplayError
from replay.simulator.caches import make_cache
from tests.simulator.cache_state import CacheState

SIZES = np.array([3000, 500, 700, 900, 1100, 1300], dtype=np.int64)  # request k holds items 0..k


def _state(name: str, warm: int = 0, model: str | None = None, **params: float) -> CacheState:
    return CacheState(make_cache(name, **params), model, 8, 0, warm, SIZES)


def _cum(end: int, sizes: np.ndarray = SIZES) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(sizes[:end])]).astype(np.int64)


def _grow(state: CacheState, requests: int, ts: float = 0.0, gap: float = 1.0) -> list[int]:
    """Cached tokens of requests that each append one item to an unchanged history."""
    out = []
    for k in range(requests):
        end = k + 1
        out.append(state.request(max(k, 1), end, 1, ts + k * gap, _cum(end), -1, 0)[0])  # request 0: nothing rewritten
    return out


def test_openai_reads_the_previous_prompt_in_128_token_steps_from_1024():
    assert _grow(_state("openai"), 4) == [0, 2944, 3456, 4096]  # 3,000, 3,500, 4,200 in 128s
    sizes = np.array([600, 300, 300, 300], np.int64)
    small = CacheState(make_cache("openai"), None, 4, 0, 0, sizes)
    hits = [small.request(max(k, 1), k + 1, 1, 0.0, _cum(k + 1, sizes), -1, 0)[0] for k in range(4)]
    assert hits == [0, 0, 0, 1152]  # 600 and 900 tokens are under the 1,024 minimum; 1,200 are cached in 128s


def test_openai_hit_rate_weighs_the_conversation_server_and_the_warm_prefix():
    """q = 0.5, warm 2,048: request 2 reaches the conversation's server (0.5) and finds request 1 there (0.5) or
    request 0 (0.25) or nothing newer than the warm prefix (0.25); otherwise it reads the warm prefix."""
    q = 0.5
    hits = _grow(_state("openai", warm=2048, hit_rate=q), 3)
    assert hits[0] == 2048
    lag1, lag0, warm = 3456, 2944, 2048  # requests 1 and 0 (3,500 and 3,000 tokens in 128s)
    want = q * (q * max(lag1, lag0, warm) + q * (1 - q) * max(lag0, warm) + (1 - q) ** 2 * warm) + (1 - q) * warm
    assert hits[2] == round(want)
    assert hits[2] == 2512
    assert _grow(_state("openai", warm=2048, hit_rate=1.0), 3)[2] == 3456  # q = 1: the longest prefix


def test_openai_idle_expiry_keeps_the_part_of_the_warm_prefix_other_sessions_keep():
    """Past the TTL the run's own entries expire, and the warm prefix with them but for the part the log shows other
    sessions keeping (``warm_kept`` tokens). Before, it never expired: a Codex session of gpt-5.4
    (LAF-US/IDAHO-VAULT) read 5,504 tokens after 20 minutes idle where the replay read its 37,376 warm ones."""

    def kept(tokens: int) -> CacheState:
        return CacheState(make_cache("openai"), None, 8, 0, 2048, SIZES, warm_kept=tokens)

    assert _grow(kept(0), 3, gap=601.0)[1:] == [0, 0]
    assert _grow(kept(2048), 3, gap=601.0)[1:] == [2048, 2048]
    assert _grow(kept(1100), 3, gap=601.0)[1:] == [1024, 1024]  # 1,100 kept: in 128s
    assert _grow(kept(0), 3, gap=599.0)[1:] == [2944, 3456]  # within the TTL
    assert _grow(_state("openai", warm=2048, ttl=3600), 3, gap=601.0)[1:] == [2944, 3456]


def test_warm_prefix_ending_inside_an_item_counts_on_the_first_request():
    """What was warm before the run (the first recorded read) counts even where it ends inside an item."""
    for name, cached in (("openai", 3200), ("deepseek", 3264)):  # 3,300 in 128s and in 64s
        assert _state(name, warm=3300).request(2, 2, 1, 0.0, _cum(2), -1, 0)[0] == cached


def test_deepseek_units_of_64_whole_match_and_common_prefix():
    """Requests end after items 0 and 2; then item 2 is rewritten twice. OpenAI reads the common 3,500 tokens at
    once; DeepSeek holds only whole units: the first rewrite reads the unit that ended after item 0 (3,000
    tokens), and stores the common prefix (3,500) as a unit that the second rewrite reads."""

    def rewritten(name: str) -> list[int]:
        state = _state(name)
        state.request(1, 1, 1, 0.0, _cum(1), -1, 0)
        state.request(1, 3, 1, 1.0, _cum(3), -1, 0)
        return [state.request(2, 4, 1, 2.0, _cum(4), -1, 0)[0], state.request(2, 5, 1, 3.0, _cum(5), -1, 0)[0]]

    assert rewritten("openai") == [3456, 3456]
    assert rewritten("deepseek") == [2944, 3456]
    assert _grow(_state("deepseek"), 3)[1:] == [2944, 3456]  # 3,000 and 3,500 in 64s


@pytest.mark.parametrize(
    "model,cached", [("gemini-2.5-flash", 2500), ("gemini-3-flash-preview", 0), ("gemini-2.0-flash", 0)]
)
def test_gemini_minimum_by_model(model, cached):
    sizes = np.array([2500, 100], np.int64)
    state = CacheState(make_cache("gemini"), model, 2, 0, 0, sizes)
    state.request(1, 1, 1, 0.0, _cum(1, sizes), -1, 0)
    assert state.request(1, 2, 1, 1.0, _cum(2, sizes), -1, 0)[0] == cached


def test_hit_rate_is_a_share():
    with pytest.raises(ReplayError, match="between 0 and 1"):
        make_cache("openai", hit_rate=1.5)


def test_an_automatic_caches_warm_prefix_is_kept_as_the_log_shows() -> None:
    """``with_start`` asks the log how much of the warm prefix other sessions kept through the run's idle gaps under
    the automatic cache's own TTL, as it does under Anthropic's: the least read after a gap past it (the gpt-5.4
    session: 5,504 of 37,376 after 20 minutes); under Anthropic's, all of it or none."""
    from replay.run_arrays import build
    from replay.simulator.run_start import warm_ttl, with_start

    sent = ["2026-04-01T03:52:34Z", "2026-04-01T03:52:46Z", "2026-04-01T03:52:58Z", "2026-04-01T04:13:06Z"]

    def run(after_idle: int):
        items = [{"step": k, "kind": "user_text", "chars": 4_000, "ts": t} for k, t in enumerate(sent)]
        reads = [37_376, 38_016, 38_784, after_idle]
        requests = [
            {"step": k, "ts": t, "cache_read": r, "prompt_tokens": 41_000}
            for k, (r, t) in enumerate(zip(reads, sent, strict=True))
        ]
        return build("r", items, requests, model="gpt-5.4")

    assert warm_ttl(run(5_504), "openai") == make_cache("openai").ttl
    assert with_start(run(5_504), "openai").warm_kept == 5_504  # a part survives under an automatic cache
    assert with_start(run(37_376), "openai").warm_kept == 37_376
    assert with_start(run(40_000), "openai").warm_kept == 37_376  # no more than was warm
    assert with_start(run(5_504), "anthropic").warm_kept == 0  # all or nothing under Anthropic's
