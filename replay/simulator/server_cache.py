"""What the server's cache did on its own, as the log shows it, replayed under every policy.

Under explicit breakpoints (Anthropic's cache, and the providers that honour them) a run's cache is the server's: it
holds what the run wrote and gives it back within the TTL. The log's reads show where the server did otherwise, at
requests whose prompt the log gives no cause to change (replay.simulator.cache_losses, replay.simulator.cache_kept):

- it **lost** a prefix within the TTL (an Anthropic-compatible endpoint at most requests; a turn opened from an IDE;
  a write gone whole);
- it **kept** a prefix past the TTL, which Anthropic documents as a minimum lifetime;
- it **kept past a change** of the harness prefix more than the shortest prefix the log shows kept there;
- it **read beyond** what the run had cached: a request the log does not hold (another session with the same
  prefix, such as a parallel agent forked from the same conversation, or a retried attempt) wrote the log's prompt
  just before.

Those are the provider's doing at that moment, not the policy's, as the requests' times are: a replay of the run
under any policy meets the same server. So each such request gets what the log shows it read
(``RunArrays.server_read``): the cache's entries live through the idle gap before it and hold at most that many
tokens (``kernels.caches.server_gave``). A request that read exactly what the one before read (that one's whole
write lost) gets what the replay read the request before, in the replay's own count. Under the recorded policy the
replay then reads what the bill reads there; under another policy the server gives at most as much of that
policy's own prefix.

A read beyond what the run held is an entry of the log's own prompt, as many tokens as the log shows read
(``RunArrays.foreign_read``, ``kernels.caches.foreign_entry``): the recorded policy reads it as the bill does; a
policy that rewrote an earlier item holds only the part before the rewrite, which its breakpoints may not reach.
Under an automatic cache (OpenAI's, DeepSeek's, Gemini's) the misses are the fitted hit rate, but a read of at least
``MIN_LOSS`` tokens more than the previous request's prompt and response together is another request's write too
(``read_past_conversation``): wjmlong/Codex_Sessions' gpt-5.6-terra sessions read 5-7k past them where their
sub-agents, sent the parent's conversation, had just run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from replay.run_arrays import RunArrays
from replay.simulator.cache_kept import cache_kept
from replay.simulator.cache_losses import MIN_LOSS, requests_phrase, unexplained_losses
from replay.simulator.caches import Anthropic, OpenAIAuto
from replay.simulator.kernels.caches import AS_BEFORE


@dataclass(frozen=True)
class ServerEvents:
    """The requests (indices) at which the log shows the server's cache lost a prefix, kept one past its TTL, or kept
    more than the shortest prefix at a change of the harness prefix."""

    lost: np.ndarray
    past_ttl: np.ndarray
    past_change: np.ndarray
    whole: np.ndarray  # of ``lost``, those that read exactly what the request before read (its write lost)
    beyond: np.ndarray  # read more than the run had cached (another session wrote it)

    @property
    def requests(self) -> np.ndarray:
        """Every such request, ascending."""
        return np.unique(np.concatenate([self.lost, self.past_ttl, self.past_change, self.beyond])).astype(np.int64)


NONE = ServerEvents(*(np.zeros(0, np.int64),) * 5)


def read_past_conversation(run: RunArrays) -> np.ndarray:
    """Requests that read at least ``MIN_LOSS`` tokens more than the previous request's prompt and response hold
    (all an automatic cache can have kept of the run's own conversation): another request wrote them."""
    m = run.n_requests
    if m < 2 or len(run.rec_cache_read) != m or len(run.rec_prompt) != m:
        return np.zeros(0, np.int64)
    out = np.maximum(run.rec_output, 0) if len(run.rec_output) == m else np.zeros(m, np.int64)
    known = (run.rec_prompt[:-1] > 0) & (run.rec_cache_read[1:] >= 0)
    more = run.rec_cache_read[1:] - run.rec_prompt[:-1] - out[:-1]
    return (np.flatnonzero(known & (more >= MIN_LOSS)) + 1).astype(np.int64)


def server_events(run: RunArrays) -> ServerEvents:
    """The requests of ``run`` at which its log shows the server's cache acting on its own (see the module
    docstring); under an automatic cache, whose misses are its fitted hit rate, only reads past the conversation."""
    cache = run.cache_fit.cache() if run.cache_fit is not None else None
    if isinstance(cache, OpenAIAuto):
        return replace(NONE, beyond=read_past_conversation(run))
    if not isinstance(cache, Anthropic):
        return NONE
    kept, losses = cache_kept(run), unexplained_losses(run)
    return ServerEvents(losses.requests, kept.past_ttl, kept.past_change, losses.whole, kept.beyond)


def with_server_cache(run: RunArrays) -> RunArrays:
    """``run`` with what its server's cache gave at each request where it acted on its own (``server_read``; a
    read beyond what the run held: ``foreign_read``); a change of the harness prefix the server kept more of than
    the shortest prefix no longer caps the request's read (``cache_cap``) there."""
    events = server_events(run)
    if not len(events.requests):
        return run
    read = _reads_at(run, np.concatenate([events.lost, events.past_ttl, events.past_change]))
    read[events.whole] = AS_BEFORE  # what the replay read the request before: its own count of that prefix
    caps = run.cache_caps.copy()
    caps[events.past_change] = -1
    return replace(run, server_read=read, foreign_read=_reads_at(run, events.beyond), cache_cap=caps)


def with_reads_past_conversation(run: RunArrays) -> RunArrays:
    """``run`` with its reads past the conversation (``read_past_conversation``) as ``foreign_read``: under an
    automatic cache they are known before its hit rate is fitted, which matches the replay's reads, these
    included, to the log's (replay.simulator.cache_fit)."""
    at = read_past_conversation(run)
    return replace(run, foreign_read=_reads_at(run, at)) if len(at) else run


def _reads_at(run: RunArrays, at: np.ndarray) -> np.ndarray:
    """Per request, what the log shows it read at the requests ``at``, -1 elsewhere."""
    out = np.full(run.n_requests, -1, dtype=np.int64)
    at = at.astype(np.int64)
    out[at] = run.rec_cache_read[at]
    return out


def replayed(run: RunArrays) -> np.ndarray:
    """The requests at which ``run`` replays what its server's cache gave (``with_server_cache``)."""
    return np.flatnonzero((run.server_reads != -1) | (run.foreign_reads >= 0))


def replayed_phrase(run: RunArrays) -> str:
    """For a table's cache column: the requests replayed as the server's cache gave them ("" when none)."""
    at = replayed(run)
    return (
        f"the server's own cache losses, keeps and other sessions' writes replayed at {requests_phrase(at)}"
        if len(at)
        else ""
    )
