"""Requests at which the server's cache lost a prefix the log gives no cause to lose.

After a request the server holds its cached prefix: what it read plus what it wrote. The next request, sent within
the cache's TTL to the same model, reads all of it back unless the prompt changed before its end. The log shows the
causes this project models: a model switch, a change of the thinking setting (replay.simulator.thinking), of the
tool list (replay.simulator.tool_loads) or of the system prompt or a tool's description (a new working directory or
skill listing: replay.simulator.harness_changes), a context event of the harness (compaction, microcompact), a
change of the harness prefix (a prefix segment that ends: ``RunArrays.gone_at``). A request that reads clearly less
than that (``MIN_LOSS`` tokens and ``MIN_SHARE`` of what was held), with none of them, lost the prefix to a change
the log does not record (Claude Code in VS Code: turns opened with an IDE note read only the system prompt); so did
one at a context event alone that reads clearly less than the harness prefix the event leaves in front of the
messages (``prefix_kept``; LAF-US/IDAHO-VAULT 5c04fe06 and b2b82754, Haiku 4.5 after a compaction: 0 of a 171k
prefix, 61 s after it was written); so did a request that reads exactly what its predecessor read, when that one
wrote ``MIN_WRITE`` or more (the whole write is gone, its earlier prefix is not: ccl-worktrees-ef958aa1, Claude
Code 2.1, at 3 requests); a replay of the log keeps reading it, so what the bill pays again there cannot be
reproduced. A log that reads but records no cache
write at all (MiniMax's API, replay.simulator.request_costs.writes_unbilled) held its whole prompt.

Anthropic's API gives back all it held at nearly every request (at most 8 of 98 Claude Code requests within the
TTL read less, across the corpus). The Anthropic-compatible endpoint of the ``ccb-android-avd-*`` files (claude-opus-
4-8, writes beside a zero split) reads 1-3k less at 30 of 30, 37 of 41 and 32 of 34 such requests: a loss at most
of the requests that could read all is the endpoint's way of caching, not a change of the prompt, and every such
loss is named however small it is. Under an automatic prefix cache a read short of the previous prompt by less
than one of the cache's steps is its granularity, and a hit rate fitted below 1 already has the replay miss as the
log does: neither is named (``automatic_step``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from replay.run_arrays import RunArrays
from replay.simulator.caches import OpenAIAuto
from replay.simulator.idle import MIN_CACHEABLE, idle_before
from replay.simulator.request_costs import writes_unbilled

MIN_LOSS = MIN_CACHEABLE  # tokens: Anthropic's largest minimum cacheable prefix
MIN_WRITE = 1024  # tokens: Anthropic's smallest minimum cacheable prefix; a whole write lost below it is not named
MIN_SHARE = 0.10  # of what the previous request left cached: a smaller loss at a few requests changes the bill by
# less than the replay's prompt counts do


@dataclass(frozen=True)
class CacheLosses:
    """The requests (indices) that lost a prefix without a cause in the log, and the tokens they lost."""

    requests: np.ndarray
    tokens: np.ndarray
    endpoint: int = 0  # > 0: the losses are most of this many requests that could read all (no size threshold)
    # of ``requests``, those that read exactly what the request before read: its whole write lost
    whole: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    @property
    def total(self) -> int:
        return int(self.tokens.sum())

    def sentence(self) -> str:
        """One line for ``bill_gap`` ("" when there is none)."""
        n = len(self.requests)
        if not n:
            return ""
        if self.endpoint:
            return (
                f"the server's cache gave back less than the previous request left cached at {n} of the "
                f"{self.endpoint} requests sent within its TTL ({self.total:,} tokens in all), with no cause in the "
                "log: an endpoint that does not keep what it cached; the bill writes them again, a replay reads them"
            )
        return (
            f"the server's cache lost {self.total:,} cached tokens at {requests_phrase(self.requests)} "
            "within its TTL, with no model switch, thinking or tool-list change or context event in the log: the bill "
            "pays for them again, a replay reads them"
        )


def requests_phrase(at: np.ndarray) -> str:
    """'3 requests (4, 10, 12)': how many, and the first six request numbers, for a ``bill_gap`` sentence."""
    n = len(at)
    shown = ", ".join(str(int(k)) for k in at[:6]) + (", ..." if n > 6 else "")
    return f"{n} request{'s' if n > 1 else ''} ({shown})"


def ttl_of(run: RunArrays) -> float:
    """The TTL of the run's cache: an automatic cache's (fitted from its reads or its provider's default:
    replay.simulator.cache_fit), else the one the log's writes used (3,600 s when most were 1 h writes; inferred
    where the split is left at zero: replay.simulator.idle.inferred_ttl), 300 s when neither says. A Claude Code
    log driving DeepSeek records a write split the provider's automatic cache never made."""
    cache = run.cache_fit.cache() if run.cache_fit is not None else None
    if isinstance(cache, OpenAIAuto):
        return float(cache.ttl)
    return float(run.cache_ttl or 300.0)


def ttls_of(run: RunArrays) -> np.ndarray:
    """Per request, the TTL of the cache serving it: ``ttl_of`` the run, its provider's where another provider served
    it (``RunArrays.req_ttl``)."""
    own = run.req_ttls
    return np.where(own > 0, own, ttl_of(run))


def automatic_step(run: RunArrays) -> int | None:
    """Under an automatic prefix cache (OpenAI, Gemini, DeepSeek), the step its reads come in (a shortfall below it is
    the cache's granularity, not a loss); 0 when its hit rate was fitted below 1 (the replay's expected reads already
    miss as the log's do: replay.simulator.cache_fit); None under explicit breakpoints or none."""
    cache = run.cache_fit.cache() if run.cache_fit is not None else None
    if not isinstance(cache, OpenAIAuto):
        return None
    return 0 if cache.hit_rate < 1 else max(cache.step, 1)


def held_after(run: RunArrays) -> np.ndarray:
    """Per request, what the server held cached after it (-1: unknown): what it read plus what it wrote; a log that
    reads but records no write (``writes_unbilled``) held its whole prompt but the uncached tail."""
    read, write = run.rec_cache_read, run.rec_write
    if writes_unbilled(run):
        return np.where(run.rec_prompt >= 0, run.rec_prompt - run.tail, -1)
    return np.where((read >= 0) & (write >= 0), read + write, -1)


def explained_changes(run: RunArrays) -> np.ndarray:
    """Per request, whether the log shows a cause for its prompt to differ from the previous request's inside
    what a context event keeps (``event_requests`` are the others): a model switch, a thinking, tool-list or
    harness change, a rewrite, a prefix change."""
    m = run.n_requests
    models = run.req_model if len(run.req_model) == m else (None,) * m
    switched = np.array([a != b for a, b in zip(models[:-1], models[1:], strict=True)], dtype=bool)
    explained = np.zeros(m, dtype=bool)
    explained[1:] = switched | run.thinking_switches[1:] | run.tools_changes[1:] | run.harness_changes[1:]
    ev = run.events  # an item the log shows rewritten from a request on (Cline's duplicate-read pass): a new prefix
    if len(ev.mask_pos):
        first: dict[int, int] = {}
        for k, q in zip(ev.mask_step.tolist(), ev.mask_pos.tolist(), strict=True):
            first[q] = min(first.get(q, k), k)
        at = np.array(sorted(set(first.values())), dtype=np.int64)
        explained[at[(at >= 0) & (at < m)]] = True
    gone = run.gone_at
    explained[gone[(gone >= 0) & (gone < m)]] = True
    return explained


def event_requests(run: RunArrays) -> np.ndarray:
    """Per request, whether a context event of the harness (compaction, microcompact) takes effect at it."""
    out = np.zeros(run.n_requests, dtype=bool)
    at = run.events.step
    out[at[(at >= 0) & (at < run.n_requests)]] = True
    return out


def unexplained_losses(run: RunArrays) -> CacheLosses:
    """The requests that read at least ``MIN_LOSS`` tokens and ``MIN_SHARE`` less than the previous request left
    cached, within the TTL after it, or exactly what the previous request read when that one wrote ``MIN_WRITE`` or
    more (its whole write lost), with no cause the log shows (see the module docstring); every request that
    read less than that, however little, when they are most of the requests that could read it all (the
    endpoint's cache does not give back what it held: ``CacheLosses.endpoint``)."""
    m = run.n_requests
    empty = CacheLosses(np.zeros(0, np.int64), np.zeros(0, np.int64))
    step = automatic_step(run)
    if m < 2 or len(run.rec_cache_read) != m or len(run.rec_write) != m or step == 0:
        return empty
    read, held = run.rec_cache_read, held_after(run)
    gap = idle_before(run)
    changed, at_event = explained_changes(run), event_requests(run)
    explained = changed | at_event
    # what was held before each request: after the previous one, or after the latest before it whose usage the log
    # has (a request of unknown usage in between sent that prefix again, and read it)
    known = np.maximum.accumulate(np.where(held >= 0, np.arange(m), -1))
    before = np.full(m, -1, dtype=np.int64)
    before[1:] = np.where(known[:-1] >= 0, held[np.maximum(known[:-1], 0)], -1)
    lost = np.where((before >= 0) & (read >= 0), before - read, 0)
    if step:
        lost[lost < step] = 0
    within = np.isfinite(gap) & (gap < ttls_of(run))
    within[0] = False
    share = lost / np.maximum(before, 1)
    could = within & ~explained & (before > 0) & (read >= 0)
    some = could & (lost > 0)
    if 2 * int(some.sum()) > int(could.sum()):  # most requests: the endpoint, not a change of the prompt
        at = np.flatnonzero(some)
        return CacheLosses(at.astype(np.int64), lost[at], endpoint=int(could.sum()))
    # the previous request's whole write gone, what it read still there: the request reads exactly what its
    # predecessor read (ccl-worktrees-ef958aa1 main requests 4 and 10, sub-agent ab1e6 request 12)
    whole = np.zeros(m, dtype=bool)
    whole[1:] = (read[1:] == read[:-1]) & (read[1:] > 0) & (run.rec_write[:-1] >= MIN_WRITE)
    at = np.flatnonzero(((lost >= MIN_LOSS) & (share >= MIN_SHARE) | whole) & could)
    if step is None:  # explicit breakpoints: a context event rewrites the messages, not the prefix before them
        kept = np.minimum(before, prefix_kept(run))
        event = within & at_event & ~changed & (kept > 0) & (read >= 0)
        short = np.where(event, kept - read, 0)
        at = np.union1d(at, np.flatnonzero(event & (short >= MIN_LOSS) & (short >= MIN_SHARE * kept)))
        lost[at] = np.maximum(lost[at], short[at])
    return CacheLosses(at.astype(np.int64), lost[at], whole=np.flatnonzero(whole & could).astype(np.int64))


def prefix_kept(run: RunArrays) -> int:
    """What a context event leaves of the cached prefix under explicit breakpoints: the system-prompt breakpoint
    the log shows (``RunArrays.system_tokens``), else the harness prefix item (what the log does not hold, sent
    before every message); 0 when the run has none."""
    if run.system_tokens > 0:
        return int(run.system_tokens)
    if run.prefix_tokens <= 0 or not run.n_items or run.kind[0] != 0:
        return 0
    return max(int(run.tokens[0]) - int(run.tail), 0)
