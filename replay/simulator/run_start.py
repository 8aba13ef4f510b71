"""How a run starts, from its own log: what the server already held cached before its first request (the warm
prefix) and the part of the harness prefix sent after the last cache breakpoint (the uncached tail).

Both are per run and travel with it (``RunArrays.warm``/``tail``, packed for the compiled loop), so every policy
in ``simulate``, ``sweep`` and ``fidelity`` starts each run as the log shows it started: a sub-agent whose parent
kept the harness prefix warm reads it on its first request, and the few tokens Claude Code sends uncached on every
request are never charged as a cache read.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from replay.run_arrays import TOOL_RESULT, RunArrays
from replay.simulator.caches import make_cache
from replay.simulator.idle import request_times

WHOLE = 2**62  # a cap that keeps the whole prefix item
ANTHROPIC_TTL = 300.0  # seconds: a cache entry's life where the log records no write duration


def warm_tokens(run: RunArrays) -> int:
    """What was cached before the run started: its first request's recorded read (0 when unknown)."""
    return int(max(run.rec_cache_read[0], 0)) if run.n_requests else 0


def warm_ttl(run: RunArrays, cache: str) -> float:
    """How long the warm prefix outlives the run's last use of it under cache model ``cache``: Anthropic's write
    duration as the log shows it; an automatic cache's TTL, its fit's when the run has one for that model."""
    if cache == "anthropic":
        return run.cache_ttl or ANTHROPIC_TTL
    fit = run.cache_fit
    own = fit.cache() if fit is not None and fit.name == cache else make_cache(cache)
    return float(getattr(own, "ttl", math.inf))


def warm_kept(run: RunArrays, warm: int, ttl: float, partial: bool = False) -> int:
    """The tokens of the warm prefix other sessions kept cached through the run's idle gaps and on the models it
    switched to, as its log shows at the requests whose own entries were gone (sent more than ``ttl`` seconds after
    the previous response ended, or the first on another model): ``warm`` when each read at least that, else 0;
    under an automatic cache (``partial``), whose prefixes survive in part, the least such a request read, up to
    ``warm``. 0 when no request shows it. What they kept is not the policy's doing: it holds for every policy
    replayed on the run. Claude Code logs show both: bradymholt/dotfiles (2.0.2) reads its 10,981 warm tokens after
    every gap, up to 21 h, and on Opus 4.1 after a switch from Sonnet 4.5 (058a90bd); a sub-agent of corpus
    ccl-worktrees-ef958aa1 reads 0 after its one gap."""
    if warm <= 0 or run.n_requests < 2:
        return 0
    sent, done = request_times(run)
    named = run.req_model if len(run.req_model) == run.n_requests else (None,) * run.n_requests
    models = [m or run.model for m in named]
    idle = [
        k
        for k in range(1, run.n_requests)
        if (sent[k] - done[k - 1] > ttl or models[k] != models[k - 1]) and run.rec_cache_read[k] >= 0
    ]
    if not idle:
        return 0
    least = int(min(run.rec_cache_read[k] for k in idle))
    return min(least, warm) if partial else warm if least >= warm else 0


def writes_recorded(run: RunArrays) -> bool:
    """Whether the log records a cache write: only then does a request's uncached input stop at a breakpoint. A
    server that reports no write (MiniMax's passive cache) counts what it stored as uncached input, so that input
    is the request's new content, not a block sent after the last breakpoint."""
    return len(run.rec_write) == run.n_requests and bool((run.rec_write > 0).any())


def uncached_floor(run: RunArrays) -> int:
    """Uncached input the server reported on every request after the first, and on the first where it records a
    cache write (a breakpoint the server honoured): its minimum.

    Claude Code writes each new message to the cache, so its floor is a few tokens; a harness that sends a
    block after its last breakpoint (re-sent, never cached) shows that block's size here. A first request that
    wrote is as good a witness as any: LAF-US/IDAHO-VAULT agent-a19967 sent 3 tokens uncached there and 3,337 at
    its one later request (results logged out of order), and a floor of 3,337 kept its second request from
    reading the first's prompt (+12% on its bill)."""
    wrote = len(run.rec_write) == run.n_requests and run.n_requests > 0 and run.rec_write[0] > 0
    rec = run.rec_input if wrote else run.rec_input[1:]
    rec = rec[rec >= 0]
    return int(rec.min()) if len(rec) else 0


MIN_EXTRA = 1024  # tokens: Anthropic's smallest minimum cacheable prefix; less beyond the floor is left alone


def results_after_breakpoint(run: RunArrays) -> np.ndarray:
    """Per request, the tokens of tool results the server puts after the request's last cache breakpoint because
    the log holds them before a result of an earlier call of the same response (0 elsewhere).

    A harness marks the last block of its last message, and Claude Code sends a round's tool results in the order
    they finished, as it logs them. The server reads them in the order of the calls, so the results of later calls
    that finished first stand after the marked block: sent uncached, written by the next request. Across the
    unseen Claude Code logs (2.0.8 to 2.1.146, breakpoints honoured) the request after such a round reported
    about that much uncached input at 76 of 96 rounds (bradymholt/dotfiles d91b43b5 request 2: a 2,955-character
    Read finished before a Grep called ahead of it; 837 tokens uncached)."""
    m = run.n_requests
    extra = np.zeros(m, np.int64)
    if run.text_tools or m < 2:
        return extra
    for k in range(1, m):
        start, last = int(run.req_end[k - 1]), int(run.req_end[k]) - 1
        if last < start or run.kind[last] != TOOL_RESULT or run.pair[last] < 0:
            continue
        new = np.arange(start, last)
        later = new[(run.kind[new] == TOOL_RESULT) & (run.pair[new] > run.pair[last])]
        extra[k] = int(run.tokens[later].sum())
    return extra


def tail_extras(run: RunArrays, cache: str) -> np.ndarray:
    """Per request, under explicit breakpoints (the ``anthropic`` cache model) and a log that records writes, the
    tokens it sent after its last breakpoint beyond the run's uncached tail (0 elsewhere; empty when no request has
    any), which the next request writes. The harness's doing, whatever the policy keeps; the first two from the
    second request on:

    - tool results the server orders after the marked one (``results_after_breakpoint``), where the server
      honours the harness's breakpoints: a floor of ``MIN_EXTRA`` or more shows something between them (a
      gateway: austinweitao/claude-backup, 2.1.68, sends 27k uncached at every request whatever the round);
    - content the harness put there: the uncached input the server reported beyond the floor when it is
      ``MIN_EXTRA`` or more (ccl-coderabbit-agent request 2: 3,099 tokens). The larger of the two is taken;
    - at every request, the first included, the floor beyond the uncached tail (``tail_tokens``: at most the prefix
      item) when it is ``MIN_EXTRA`` or more: messages a gateway sends uncached with the prefix. austinweitao/
      claude-backup 6e42724d (claude-opus-4-8 behind a gateway) reports 32.7k uncached at each of its requests
      against a 29.6k prefix, and each reads what the request before sent less those 32.7k."""
    m = run.n_requests
    if cache != "anthropic" or m < 2 or len(run.rec_input) != m or not writes_recorded(run):
        return np.zeros(0, np.int64)
    floor = uncached_floor(run)
    reported = np.where(run.rec_input >= 0, run.rec_input - floor, 0).astype(np.int64)
    reported[reported < MIN_EXTRA] = 0
    extra = np.maximum(reported, results_after_breakpoint(run)) if floor < MIN_EXTRA else reported
    extra[0] = 0
    beyond = floor - tail_tokens(run, cache)
    if beyond >= MIN_EXTRA:
        extra += beyond
    return extra if extra.any() else np.zeros(0, np.int64)


def tail_tokens(run: RunArrays, cache: str) -> int:
    """Tokens of the harness prefix sent after the last cache breakpoint: under explicit breakpoints (the
    ``anthropic`` cache model) the server's uncached floor, at most the prefix the prompt model put first; 0
    under an automatic prefix cache, which needs no breakpoint."""
    if cache != "anthropic" or run.prefix_tokens <= 0 or not run.n_items or run.kind[0] != 0:
        return 0
    if not writes_recorded(run):  # no breakpoint the log shows
        return 0
    return max(min(uncached_floor(run), run.prefix_tokens), 0)


def system_tokens(run: RunArrays, cache: str) -> int:
    """Under explicit breakpoints, the prefix up to the system-prompt breakpoint when the log shows it shorter than
    the prefix item (0: the whole item): the shortest positive read the server reported that stops inside that item.

    The prompt model's prefix is all the harness sends that the log does not hold; Claude Code sends part of it
    (its context: memory files, environment) as the first user message, after the breakpoint that closes the system
    prompt and tools. A request that can read only the system prompt and tools (the thinking setting changed:
    replay.simulator.thinking; the messages expired while other sessions kept the shared prompt warm) reads that
    much, and the log's reads give it."""
    if cache != "anthropic" or run.prefix_tokens <= 0 or not run.n_items or run.kind[0] != 0:
        return 0
    item = run.tokens[0] - tail_tokens(run, cache)  # the prefix item as the cache sees it
    reads = run.rec_cache_read[(run.rec_cache_read > 0) & (run.rec_cache_read < item)]
    return int(reads.min()) if len(reads) else 0


def cache_caps(run: RunArrays, cache: str, warm: int, system: int) -> np.ndarray:
    """Per request, the most the server's cache can give it where the log shows its prompt changed inside the
    harness prefix (-1: no such limit), under explicit breakpoints only:

    - the thinking setting changed (replay.simulator.thinking): the system prompt and tools, ``system`` tokens
      (the whole prefix item when the log does not show that breakpoint);
    - the tool list changed (replay.simulator.tool_loads): what was warm before the run, ``warm`` tokens;
    - the system prompt or a tool's description changed (replay.simulator.harness_changes: a new working directory,
      a new skill listing): the shortest prefix the log shows the server keeping, ``system`` tokens, else ``warm``."""
    caps = np.full(run.n_requests, -1, dtype=np.int64)
    if cache != "anthropic":
        return caps
    caps[run.thinking_switches] = system if system > 0 else WHOLE
    for changed, keep in ((run.tools_changes, warm), (run.harness_changes, system if system > 0 else warm)):
        caps[changed] = np.where(caps[changed] >= 0, np.minimum(caps[changed], keep), keep)
    return caps


def with_start(run: RunArrays, cache: str) -> RunArrays:
    """``run`` with its warm prefix, uncached tail, system-prompt breakpoint, per-request cache limits and what each
    request sent after its last breakpoint, under cache model ``cache`` (its provider's)."""
    warm, system = warm_tokens(run), system_tokens(run, cache)
    return replace(
        run,
        warm=warm,
        warm_kept=warm_kept(run, warm, warm_ttl(run, cache), partial=cache != "anthropic"),
        tail=tail_tokens(run, cache),
        system_tokens=system,
        cache_cap=cache_caps(run, cache, warm, system),
        tail_extra=tail_extras(run, cache),
    )


def split_tail(run: RunArrays) -> RunArrays:
    """``run`` as the cache sees it: the tail taken out of the prefix item (the caller adds ``run.tail`` to each
    prompt, after every breakpoint); ``run`` itself when it has none."""
    if run.tail <= 0:
        return run
    tokens = run.tokens.copy()
    tokens[0] -= run.tail
    return replace(run, tokens=tokens)
