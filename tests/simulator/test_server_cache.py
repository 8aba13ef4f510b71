"""The server's cache acting on its own, as the log shows it, replayed under every policy (replay.simulator.
server_cache): a prefix kept past the TTL, a prefix lost within it. The compiled cache meets the same server
whatever the policy sends."""

from __future__ import annotations

from datetime import UTC, datetime

import numpy as np

from replay.policies import Budget, make_policy
from replay.policies.view import ORIGINAL, SHRUNK
from replay.run_arrays import build
from replay.simulator.cache_fit import fit_caches
from replay.simulator.caches import make_cache
from replay.simulator.kernels.caches import foreign_entry, sent_after_breakpoint, server_gave
from replay.simulator.kernels.packed import pack
from replay.simulator.run import simulate_run
from replay.simulator.server_cache import read_past_conversation, replayed, server_events
from tests.simulator.cache_state import CacheState

SIZES = np.array([3000, 500, 700, 900], dtype=np.int64)  # the prefix item (system prompt and tools), then messages
MODEL = "claude-sonnet-4-5-20250929"


def _cum(end: int) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(SIZES[:end])]).astype(np.int64)


def _request(state: CacheState, k: int, t: float, gave: int = -1) -> int:
    """Cached tokens of request k (items 0..k, system breakpoint after item 0) sent at ``t``; ``gave`` >= 0: the
    log shows the server's cache gave that much."""
    if gave >= 0:
        server_gave(state.tok, state.exp, state.n, t, t, gave)
    return state.request(max(k, 1), k + 1, 1, t, _cum(k + 1), -1, 0, sent=t, done=t)[0]


def test_the_server_keeps_past_the_ttl_and_loses_within_it():
    state = CacheState(make_cache("anthropic"), MODEL, 4, 0, 0, SIZES)
    assert _request(state, 0, 0.0) == 0 and _request(state, 1, 10.0) == 3000
    # 1,000 s idle (TTL 300 s): the run's entries have expired, but the log shows the server kept 3,500
    assert _request(state, 2, 1010.0, gave=3500) == 3500
    # within the TTL the server gave only the system prompt: the entries hold 3,000 at most; the request writes
    # its whole prompt again, so the next one reads all of it
    assert _request(state, 3, 1020.0, gave=3000) == 3000
    fresh = CacheState(make_cache("anthropic"), MODEL, 4, 0, 0, SIZES)
    reads = [_request(fresh, k, t) for k, t in enumerate([0.0, 10.0, 1010.0, 1020.0])]
    assert reads == [0, 3000, 0, 4200]  # the cache model alone: expired after the gap, all of it within the TTL


def test_what_a_request_sends_after_its_last_breakpoint_is_written_by_the_next():
    state = CacheState(make_cache("anthropic"), MODEL, 3, 0, 0, SIZES)
    assert _request(state, 0, 0.0) == 0
    # request 1 writes items 0-1 (3,500) less the 400 tokens sent after its breakpoint, billed as input
    hit, written = state.request(1, 2, 1, 10.0, _cum(2), -1, 0, sent=10.0, done=10.0)
    assert (hit, sent_after_breakpoint(state.tok, state.pos, state.n, 2, 400, written)) == (3000, 100)
    assert _request(state, 2, 20.0) == 3100  # the next request reads what was written and writes the rest


def _at(seconds: float) -> str:
    return datetime.fromtimestamp(1_760_000_000 + seconds, tz=UTC).isoformat().replace("+00:00", "Z")


def _run(reads: list[int], writes: list[int], sent: list[float], model: str = MODEL, fmt: str = "claude-code-jsonl"):
    """One request per step, each after a user message of 10,000 tokens; request k sent at ``sent[k]`` s, its
    response 5 s later."""
    items, reqs = [], []
    for k, (r, w, t) in enumerate(zip(reads, writes, sent, strict=True)):
        items.append({"step": k, "kind": "user_text", "tokens": 10_000, "chars": 40_000, "ts": _at(t)})
        items.append({"step": k + 1, "kind": "assistant_text", "tokens": 50, "chars": 200, "ts": _at(t + 5)})
        reqs.append(
            {"step": k, "ts": _at(t), "prompt_tokens": r + w + 3, "input_tokens": 3, "cache_read": r, "cache_write": w}
        )
    run = build("synthetic", items, reqs, model=model, cache_ttl=300.0)
    return fit_caches([run], {"synthetic": fmt})[0]


def test_a_run_replays_what_its_server_kept_and_lost_under_every_policy():
    """Request 2 comes 995 s after request 1's response and reads all it held: kept past the TTL. Request 3, 10 s
    later, reads only 10,000 of the 30,103 held: lost. The replay reads what the log reads there; a policy that keeps
    less reads at most that much."""
    reads, writes = [0, 10_003, 20_053, 10_000], [10_003, 10_050, 10_050, 30_103]
    run = _run(reads, writes, [0.0, 10.0, 1010.0, 1025.0])
    events = server_events(run)
    assert events.past_ttl.tolist() == [2] and events.lost.tolist() == [3]
    assert replayed(run).tolist() == [2, 3] and run.server_reads.tolist() == [-1, -1, 20_053, 10_000]
    cols, row = simulate_run(run, make_policy("recorded"), None, Budget(200_000))
    assert cols["cached_tokens"].tolist()[2:] == [20_050, 10_000]
    assert row["bill_gap"] == ""
    for name in ("last_n", "auto_compact"):
        other, _ = simulate_run(run, make_policy(name), None, Budget(200_000))
        assert (other["cached_tokens"][[2, 3]] <= [20_050, 10_000]).all(), name
    # the sweep's packed runs carry the same requests
    assert pack([run]).server_read.tolist() == run.server_reads.tolist()


def test_another_sessions_write_is_the_logs_prompt_up_to_the_nearest_item_boundary():
    """An entry another session wrote holds the log's prompt: it ends at the item boundary nearest the tokens the
    log shows read (3,000 + 500 + 700 = 4,200 for a read of 4,150), and no further than the view still sends the
    log's items: a view that shrank item 2 holds only items 0-1."""
    forms = np.full(4, ORIGINAL, np.int64)
    ftok = np.zeros((SHRUNK + 1, 4), np.int64)
    ftok[ORIGINAL] = SIZES
    pos, tok, exp, n = np.zeros(8, np.int64), np.zeros(8, np.int64), np.zeros(8), np.zeros(3, np.int64)
    assert foreign_entry(pos, tok, exp, n, 0, 4150, SIZES, forms, ftok, 4, -1, 100.0, False) == 3
    assert (n[0], pos[0], tok[0], exp[0]) == (1, 3, 4200, 100.0)
    forms[2], ftok[SHRUNK, 2] = SHRUNK, 100
    n[0] = 0
    assert foreign_entry(pos, tok, exp, n, 0, 4150, SIZES, forms, ftok, 4, -1, 100.0, False) == 2
    assert (n[0], tok[0]) == (1, 3500)


def test_a_read_another_session_wrote_is_replayed():
    """Request 1 reads 20,050 tokens where request 0 left 10,003 cached: another session (a parallel agent forked
    from the same conversation) sent the same prompt just before. The recorded policy reads it as the bill does."""
    reads, writes = [0, 20_050, 20_100], [10_003, 3, 10_050]
    run = _run(reads, writes, [0.0, 10.0, 20.0])
    assert server_events(run).beyond.tolist() == [1] and run.foreign_reads.tolist() == [-1, 20_050, -1]
    cols, row = simulate_run(run, make_policy("recorded"), None, Budget(200_000))
    assert cols["cached_tokens"].tolist()[:2] == [0, 20_050] and row["bill_gap"] == ""
    assert pack([run]).foreign_read.tolist() == run.foreign_reads.tolist()


def test_an_automatic_cache_holds_another_requests_prefix_as_far_as_it_read():
    """Under an automatic cache a prefix ends anywhere: the entry holds exactly the tokens read (4,150 of the
    4,200 up to item 3), ending in the item they end in."""
    forms = np.full(4, ORIGINAL, np.int64)
    ftok = np.zeros((SHRUNK + 1, 4), np.int64)
    ftok[ORIGINAL] = SIZES
    pos, tok, exp, n = np.zeros(8, np.int64), np.zeros(8, np.int64), np.zeros(8), np.zeros(3, np.int64)
    assert foreign_entry(pos, tok, exp, n, 0, 4150, SIZES, forms, ftok, 4, -1, 100.0, True) == 3
    assert (n[0], pos[0], tok[0]) == (1, 3, 4150)


def test_an_automatic_cache_replays_reads_past_the_conversation():
    """Codex sub-agents are sent the parent's conversation: a parent request then reads past its previous prompt
    and response together (wjmlong/Codex_Sessions gpt-5.6-terra: 24,832 read after an 18,299-token prompt and a
    1,220-token response; +7.9% like for like before, +0.3% now). Request 2 here reads 25,000 where request 1's
    prompt (20,053) and response (50) hold 20,103; the fitted hit rate stays the misses' alone."""
    items, reqs = [], []
    for k, r in enumerate([0, 10_000, 25_000, 30_000]):
        items.append({"step": k, "kind": "user_text", "tokens": 10_000, "chars": 40_000, "ts": _at(10.0 * k)})
        items.append({"step": k + 1, "kind": "assistant_text", "tokens": 50, "chars": 200, "ts": _at(10.0 * k + 5)})
        prompt = 10_000 * (k + 1) + 50 * k + 3
        reqs.append({"step": k, "ts": _at(10.0 * k), "prompt_tokens": prompt, "cache_read": r, "output_tokens": 50})
    run = fit_caches([build("synthetic", items, reqs, model="gpt-4.1")], {"synthetic": "openai-messages"})[0]
    assert read_past_conversation(run).tolist() == [2]
    assert replayed(run).tolist() == [2] and run.foreign_reads.tolist() == [-1, -1, 25_000, -1]
    cols, row = simulate_run(run, make_policy("recorded"), None, Budget(200_000))
    assert 24_832 <= cols["cached_tokens"][2] <= 24_960  # 25,000 in 128-token steps, at the fitted hit rate
    assert cols["cached_tokens"][1] <= 10_003  # the others read at most the conversation's own
    assert "more than the run had cached" not in row["bill_gap"]


def test_an_automatic_cache_fits_its_misses_instead():
    """Under an automatic prefix cache (OpenAI's) the misses are the fitted hit rate: nothing is replayed request by
    request."""
    reads, writes = [0, 10_003, 20_053, 10_000], [10_003, 10_050, 10_050, 30_103]
    run = _run(reads, writes, [0.0, 10.0, 1010.0, 1025.0], model="gpt-4.1", fmt="openai-messages")
    assert run.cache_fit is not None and run.cache_fit.name == "openai"
    assert replayed(run).size == 0
