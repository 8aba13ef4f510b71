"""Requests at which the server's cache gave more than the run itself can have kept there.

Two facts of a log that a replay of one run cannot reproduce (its cache holds only what the run wrote, and expires
it the TTL after the response that last used it, replay.simulator.idle):

- **kept past the TTL**: a request sent at least the TTL after the previous response ended still read at least
  ``MIN_LOSS`` tokens more than what was warm before the run (the shared prompt other sessions keep warm,
  replay.simulator.run_start). Anthropic documents 5 minutes as the cache's *minimum* lifetime, so the server may
  keep a prefix longer; ccl-deep-manifest reads its whole 93k prefix 301.8 s after a response, where requests
  313.8 s and more after one read nothing (ccs-livecd-gen request 76). A log whose writes do not say their
  duration (``ccb-android-avd-*``: a zero split) shows it after 6 to 93 minutes.
- **read beyond what it held**: a request read at least ``MIN_LOSS`` tokens more than the previous request left
  cached and than was warm before the run: a request the log does not hold wrote them (the parallel workflow
  agents of ``ccb-android-avd-3e89eb15``, which share their parent's conversation; a retried attempt).
- **kept past a change**: at a request whose harness prefix changed (its cache read limited:
  replay.simulator.run_start.cache_caps) the server gave back at least ``MIN_LOSS`` tokens more than that limit,
  the shortest prefix the log shows kept. Claude Code 2.1.23 on may cache the static part of its system prompt
  apart from the part that names the working directory (cli.js: when its ``tengu_system_prompt_global_cache``
  gate is on, a feature gate the log does not record): cc-jason-webtech-48244adb request 149 reads 29,257 after
  its turn moved to another directory, where the system breakpoint is at 10,359.

The bill reads those tokens; a replay of the run's own cache would write them again (or send them uncached), so
replay.simulator.server_cache replays them as the server gave them."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from replay.run_arrays import RunArrays
from replay.simulator.cache_losses import MIN_LOSS, held_after, requests_phrase, ttls_of
from replay.simulator.idle import idle_before
from replay.simulator.run_start import warm_tokens


@dataclass(frozen=True)
class CacheKept:
    """Requests (indices) that read a prefix kept past the TTL, and those that read more than the run held; with
    the tokens each read beyond what a replay can hold there."""

    past_ttl: np.ndarray
    past_ttl_tokens: np.ndarray
    beyond: np.ndarray
    beyond_tokens: np.ndarray
    past_change: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    past_change_tokens: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def sentences(self) -> list[str]:
        """Lines for ``bill_gap`` (none when there is nothing to say)."""
        out = []
        if len(self.past_ttl):
            out.append(
                f"the server's cache kept {int(self.past_ttl_tokens.sum()):,} cached tokens past its TTL at "
                f"{requests_phrase(self.past_ttl)}: the bill reads them, a replay's cache has expired them"
            )
        if len(self.beyond):
            out.append(
                f"the server read {int(self.beyond_tokens.sum()):,} tokens more than the run had cached at "
                f"{requests_phrase(self.beyond)} (a request this log does not hold wrote them: another session with "
                "the same prefix, or a retried attempt): the bill reads them, a replay of the run alone cannot"
            )
        if len(self.past_change):
            out.append(
                f"the server kept {int(self.past_change_tokens.sum()):,} tokens more than the shortest prefix the "
                f"log shows kept at a change of the harness prefix, at {requests_phrase(self.past_change)}: the bill "
                "reads them, a replay writes them again"
            )
        return out


def cache_kept(run: RunArrays) -> CacheKept:
    """What the log's reads show the server held beyond the run's own cache (see the module docstring)."""
    m = run.n_requests
    none = np.zeros(0, np.int64)
    if m < 2 or len(run.rec_cache_read) != m or len(run.rec_write) != m:
        return CacheKept(none, none, none, none)
    read, held = run.rec_cache_read, held_after(run)
    warm = warm_tokens(run)
    gap = idle_before(run)
    expired = np.isfinite(gap) & (gap > ttls_of(run))  # as the replay expires an entry
    past = np.flatnonzero(expired & (read - warm >= MIN_LOSS))
    more = np.zeros(m, dtype=np.int64)
    more[1:] = read[1:] - np.maximum(held[:-1], warm)
    known = np.zeros(m, dtype=bool)
    known[1:] = held[:-1] >= 0
    beyond = np.flatnonzero(~expired & known & (more >= MIN_LOSS))
    caps = run.cache_caps
    over = np.where(caps >= 0, read - caps, 0)
    changed = np.flatnonzero(~expired & (caps >= 0) & (over >= MIN_LOSS))
    return CacheKept(
        past, (read[past] - warm).astype(np.int64), beyond, more[beyond], changed, over[changed].astype(np.int64)
    )
