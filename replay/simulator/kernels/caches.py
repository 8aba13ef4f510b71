"""The cache models, compiled: the only definition of what each charges, used by the request loop every policy runs
in (``replay.simulator.kernels.driver``).

Entries are (pos, tokens, expiry) rows in ``pos``/``tok``/``exp``, ``n[0]`` of them live; ``n[1]``/``n[2]`` are
the position and tokens of what was warm before the run (``warm_entry``; tokens 0: nothing). A request is given as
(dirty_from, end, system_end, now) plus the prefix sums of its view; rewriting position p invalidates every cached
prefix longer than p. The model classes in replay.simulator.caches hold the parameters.
"""

from __future__ import annotations

import math

import numpy as np

from replay.jit import compiled
from replay.policies.view import DROPPED, ORIGINAL
from replay.run_arrays import KIND_CODE, TOOL_CALL
from replay.simulator.caches import (
    Anthropic,
    CacheModel,
    DeepSeekDisk,
    GeminiImplicit,
    LlamaCppSlot,
    OpenAIAuto,
    VLLMBlocks,
    anthropic_min_cacheable,
)

NONE, ANTHROPIC, OPENAI, VLLM, LLAMACPP, DEEPSEEK = range(6)
CODES = {
    CacheModel: NONE,
    Anthropic: ANTHROPIC,
    OpenAIAuto: OPENAI,
    DeepSeekDisk: DEEPSEEK,
    GeminiImplicit: OPENAI,
    VLLMBlocks: VLLM,
    LlamaCppSlot: LLAMACPP,
}
# params: code, ttl, min_tokens, lookback, has_system_breakpoint, step, block, capacity, hit_rate, output_cached
N_PARAMS = 10
CP_TTL = 1  # the parameter a request served by another provider replaces (RunArrays.req_ttl)
CP_HIT = 8  # the parameter a request's own model's fitted hit rate replaces (RunArrays.cache_fit.by_model)
CP_OUTPUT = 9  # the response is cached with its prompt (OpenAIAuto.output_cached); AS_LOGGED: as the log holds it
AS_LOGGED = 2  # a CP_OUTPUT: the response's items as logged (OpenAIAuto.output_as_logged)
N_STATE = 4  # n: live entries, warm position, warm tokens, warm tokens other sessions keep (RunArrays.warm_kept)
REASONING, ASSISTANT_TEXT = KIND_CODE["reasoning"], KIND_CODE["assistant_text"]
AS_BEFORE = -2  # a ``RunArrays.server_read``: the server gave what it gave the request before (a whole write lost)
RING = 8  # automatic caches: earlier requests whose prefixes are kept beside the newest


def cache_params(cache: CacheModel, model: str | None) -> np.ndarray:
    """The float vector a kernel reads for ``cache`` on a run of ``model``."""
    code = CODES.get(type(cache))
    if code is None:
        raise TypeError(f"no compiled definition for cache model {type(cache).__name__}")
    p = np.zeros(N_PARAMS, dtype=np.float64)
    p[0] = code
    if isinstance(cache, Anthropic):
        p[1], p[3], p[4] = cache.ttl, cache.lookback, "system" in cache.breakpoints
        p[2] = cache.min_cacheable or anthropic_min_cacheable(model)
    elif isinstance(cache, OpenAIAuto):
        p[1], p[2], p[5], p[CP_HIT] = cache.ttl, cache.min_for(model), cache.step, cache.hit_rate
        p[CP_OUTPUT] = AS_LOGGED if cache.output_as_logged else cache.output_cached
    elif isinstance(cache, VLLMBlocks):
        p[6], p[7] = cache.block, cache.capacity
    return p


@compiled(inline="always")
def cum_at(cumtok, p, overhead, s_at, s_tok):
    """Real tokens before position p of the view: overhead + items + the summary when it sits before p."""
    return overhead + cumtok[p] + (s_tok if s_at >= 0 and p > s_at else 0)


# the expiry of a warm prefix no other session is known to keep cached: it lives until the run reads it, then as
# the run's own entries do
UNTIL_READ = 1e300


@compiled(inline="always")
def refreshed(exp, until):
    """An entry's expiry once a request uses it: ``until``, but a warm prefix other sessions keep cached
    (``warm_entry`` with ``kept``: it never expires) stays so."""
    return exp if exp == np.inf else until


@compiled
def cache_request(cp, pos, tok, exp, n, dirty, end, system_end, ts, cumtok, overhead, s_at, s_tok, sent, done, mid):
    """(cached, written) for one request; updates the entries in place. Under Anthropic's cache an entry lives
    ``ttl`` from the end of the response that last used it (``done``) and is looked up when the request is sent
    (``sent``; replay.simulator.idle), from each breakpoint back ``lookback`` positions: the system prompt's end,
    the end, and ``mid`` where the harness marks the last assistant message too (``assistant_mid``; else ``end``);
    the other models count from the request's own timestamp ``ts``."""
    code = int(cp[0])
    if code == NONE:
        return 0, 0
    now = 0.0 if math.isnan(ts) else ts
    if code == LLAMACPP:
        hit = cum_at(cumtok, min(dirty, end), overhead, s_at, s_tok) if n[0] > 0 else 0
        pos[0], tok[0], exp[0], n[0] = end, 0, np.inf, 1
        return hit, 0
    if code == ANTHROPIC:
        ttl, min_tokens, lookback = cp[1], cp[2], int(cp[3])
        until = now if math.isnan(done) else done  # refreshed entries live ttl from here
        now = now if math.isnan(sent) else sent
        b0 = system_end if cp[4] > 0 else end
        j = 0
        for i in range(n[0]):
            # an entry more than ``lookback`` before both breakpoints can never be read again (the end only grows;
            # the system breakpoint is final once the end is past it): gone, so the entries stay few without
            # timestamps too
            live = (pos[i] >= min(mid, end) - lookback) | ((pos[i] >= b0 - lookback) & (pos[i] <= b0))
            if pos[i] <= dirty and not now > exp[i] and live:
                pos[j], tok[j], exp[j] = pos[i], tok[i], exp[i]
                j += 1
        n[0] = j
        nb = 1 if b0 == end else 2
        bps = (min(b0, end), max(b0, end), mid)  # the last only looked up from (see ``assistant_mid``)
        hit, hit_i = 0, -1
        for bi in range(3):
            b = bps[bi]
            for i in range(n[0]):
                if b - lookback <= pos[i] <= b and tok[i] > hit:
                    hit, hit_i = tok[i], i
        if hit_i >= 0:
            exp[hit_i] = refreshed(exp[hit_i], until + ttl)
        written = 0
        for bi in range(nb):
            b = bps[bi]
            tokens = cum_at(cumtok, b, overhead, s_at, s_tok)
            if tokens < min_tokens:
                continue
            if tokens <= hit:  # a breakpoint inside the prefix read is used too: its entry lives on (Anthropic:
                for i in range(n[0]):  # "refreshed each time the cached content is used"). cc-jason-webtech reads
                    if pos[i] == b:  # its 34,027-token system breakpoint after each compaction, long after the
                        exp[i] = refreshed(exp[i], until + ttl)  # request that last wrote it
                continue
            found = False
            for i in range(n[0]):
                if pos[i] == b:  # written again in full: it held less (``cap_entries``, ``server_gave``)
                    exp[i], tok[i] = refreshed(exp[i], until + ttl), tokens
                    found = True
                    break
            if not found:
                pos[n[0]], tok[n[0]], exp[n[0]] = b, tokens, until + ttl
                n[0] += 1
            written = max(written, tokens - hit)
        return hit, written
    if code == OPENAI or code == DEEPSEEK:
        return auto_request(cp, pos, tok, exp, n, dirty, end, now, cumtok, overhead, s_at, s_tok, code), 0
    # VLLM: truncate at the rewrite, best prefix in full blocks, newest entry first, keep RING more
    j = 0
    for i in range(n[0]):
        pos[j], tok[j], exp[j] = min(pos[i], dirty), tok[i], exp[i]
        j += 1
    best = 0
    for i in range(j):
        best = max(best, cum_at(cumtok, pos[i], overhead, s_at, s_tok))
    block = int(cp[6])
    hit = min(best // block, int(cp[7])) * block
    keep = min(j, RING)
    for i in range(keep - 1, -1, -1):
        pos[i + 1], tok[i + 1], exp[i + 1] = pos[i], tok[i], exp[i]
    pos[0], tok[0], exp[0] = end, cum_at(cumtok, end, overhead, s_at, s_tok), np.inf
    n[0] = keep + 1
    return hit, 0


@compiled(inline="always")
def _cacheable(tokens, min_tokens, step, full):
    """What a cached prefix of ``tokens`` gives a request of ``full`` tokens: whole steps, none under the minimum."""
    if tokens < min_tokens:
        return 0
    return min(tokens // step * step, full)


@compiled(internal=True)
def auto_request(cp, pos, tok, exp, n, dirty, end, now, cumtok, overhead, s_at, s_tok, code):
    """Expected cached tokens of one request under an automatic prefix cache (OpenAI, Gemini, DeepSeek), best
    effort: with probability ``hit_rate`` (q) the request reaches the server holding the conversation, which last
    cached the newest earlier request that reached it too (lag j, probability q(1-q)^(j-1); beyond the kept
    requests, the warm prefix); otherwise it reads the warm prefix only. q = 1: the longest cached prefix. The warm
    prefix expires with the run's own entries (an idle gap past the TTL since the last request) but for the part
    other sessions keep cached (``warm_entry``'s ``kept``): a Codex session of gpt-5.4 read its 37,376 warm tokens
    at four requests 12-25 s apart and 5,504 after 20 minutes idle; one of gpt-5.3-codex 6,528 of its 6,656 after
    19 minutes.

    Entries are the prompts of the last RING + 1 requests, newest first, each refreshed at every request (idle
    expiry ``ttl``). A rewrite at ``dirty`` shortens every longer entry to it (OpenAI, Gemini); under DeepSeek a
    unit must be held whole, so a longer one is lost and the common prefix becomes a unit of its own (kept with
    the warm prefix)."""
    ttl, min_tokens, step, q = cp[1], cp[2], int(cp[5]), cp[8]
    full = cum_at(cumtok, end, overhead, s_at, s_tok)
    if n[2] > n[3] and n[0] > 0 and now > exp[0]:  # idle past the TTL: what no other session keeps expired too
        n[2] = n[3]
        if n[3] == 0:
            n[1] = 0
    if n[2] > 0 and n[1] > dirty:  # a rewrite inside the warm prefix: what precedes it is still common
        n[1], n[2] = dirty, min(n[2], cum_at(cumtok, dirty, overhead, s_at, s_tok))
    common = -1
    j = 0
    for i in range(n[0]):
        if now > exp[i]:
            continue
        p, t = pos[i], tok[i]
        if p > dirty:
            if code == DEEPSEEK:
                common = dirty
                continue
            p, t = dirty, cum_at(cumtok, dirty, overhead, s_at, s_tok)
        pos[j], tok[j], exp[j] = p, t, exp[i]
        j += 1
    warm = _cacheable(n[2], min_tokens, step, full)
    if q >= 1.0:  # every request reaches it: the longest cached prefix
        hit = warm
        for i in range(j):
            hit = max(hit, _cacheable(tok[i], min_tokens, step, full))
    else:
        best, home, miss = warm, 0.0, 1.0 - q
        for i in range(j - 1, -1, -1):  # oldest first: the longest prefix a server holding lags >= i has
            best = max(best, _cacheable(tok[i], min_tokens, step, full))
            home += q * miss**i * best
        home += miss**j * warm
        hit = min(int(round(q * home + miss * warm)), full)
    if common >= 0:
        t = cum_at(cumtok, common, overhead, s_at, s_tok)
        if t > n[2]:
            n[1], n[2] = common, t
    keep = min(j, RING)
    for i in range(keep - 1, -1, -1):
        pos[i + 1], tok[i + 1], exp[i + 1] = pos[i], tok[i], now + ttl
    pos[0], tok[0], exp[0] = end, full, now + ttl
    n[0] = keep + 1
    return hit


@compiled
def assistant_mid(kind, forms, prev_end, end):
    """Where a breakpoint on the last assistant message stands for the cache's look-up, or ``end`` when there is
    none. Claude Code marks the last two messages with a cache breakpoint in some versions
    (replay.simulator.claude_code_breakpoints), on the last block but a thinking block: the second-to-last message
    is the previous response, so the look-up from it reaches the previous prompt's end when the response has no
    more blocks than the cache looks back. The transcript interleaves a response's tool calls with their results,
    where the API sends the calls first, so the position stands ``prev_end`` plus the response's blocks (its items
    of an output kind still in the view) after the previous prompt, and is looked up from only. ``end`` when the
    view ends with the response, when nothing was added, or when the response ends with its reasoning."""
    count, last, closed = 0, -1, False
    for q in range(prev_end, end):
        if forms[q] == DROPPED:
            continue
        k = kind[q]
        output = k == ASSISTANT_TEXT or k == TOOL_CALL or k == REASONING
        if output:
            count, last = count + 1, k
        closed = not output  # the view's last item is the user's: the response is the second-to-last message
    if count == 0 or last == REASONING or not closed:
        return end
    return prev_end + count


@compiled
def output_end(kind, forms, recorded_only, resent, start, end, output_kinds, as_logged):
    """Where the previous response's output items end in this view: from ``start`` (the previous request's end),
    the items of ``output_kinds`` (its reasoning, text and tool calls, logged before the tool results and the next
    input) still in their original form. Unless ``as_logged`` (the log holds the response as the harness sends it
    back), ``start`` when they do not open with the response's reasoning (``output_kinds[0]``) sent back whole, as
    encrypted content the log sizes (``resent`` > 0: codex-rs's estimate of it, RunArrays.harness_est). A model
    that reasons generates its reasoning first; a harness that does not send it back (Chat Completions), or a log
    that keeps only its summary (the Codex TUI session log), leaves the next prompt differing right after the
    previous one, or its size unknown."""
    if start >= end or (not as_logged and (kind[start] != output_kinds[0] or resent[start] <= 0)):
        return start
    q = start
    while q < end and forms[q] == ORIGINAL and not recorded_only[q]:
        found = False
        for c in output_kinds:
            found = found or kind[q] == c
        if not found:
            break
        q += 1
    return q


@compiled
def cache_output(pos, tok, n, prev_end, to, tokens):
    """The server cached the previous response with its prompt: the newest entry (that prompt, ending at
    ``prev_end``) covers the response's output items too, up to ``to`` (``tokens`` in all)."""
    if n[0] > 0 and pos[0] == prev_end and to > prev_end:
        pos[0], tok[0] = to, tokens


@compiled(internal=True)
def first_rewrite(forms, ftok, tokens, end, s_at):
    """The first position of the first request's view that differs from the log (a form other than the original,
    another cost, or the summary), ``end`` if none: what was warm before the run is valid up to there."""
    at = end if s_at < 0 else min(s_at, end)
    for q in range(at):
        f = forms[q]
        if f != ORIGINAL or ftok[f, q] != tokens[q]:
            return q
    return at


@compiled
def warm_entry(overhead, warm, tokens, pos, tok, exp, n, kept):
    """Tokens cached before the run starts, from the start of the prompt (``warm``, overhead first; ``tokens``:
    the first request's items, which its read covers): one entry at the last item boundary they cover (or inside
    the first item; under Anthropic's cache, covering the item they end in at a block boundary within it). The
    automatic caches keep all of them as the warm prefix (n[1], n[2]): valid while the item they end in is
    unchanged, and until an idle gap past the TTL leaves the ``kept`` tokens of it that other sessions keep cached
    (``RunArrays.warm_kept``). Under Anthropic's cache the entry lives until the run reads it, then as the run's
    own do; it never expires when all of it is kept."""
    if warm <= 0:
        return
    full, at = overhead, 0
    for q in range(len(tokens)):
        if full + tokens[q] > warm:
            break
        full += tokens[q]
        at = q + 1
    inside = full < warm and 0 < at < len(tokens)  # they end inside item ``at``: at a block boundary within it
    pos[0], tok[0] = (at + 1, warm) if inside else (at, full if at > 0 else warm)
    exp[0], n[0], n[3] = np.inf if kept >= warm else UNTIL_READ, 1, kept
    n[1], n[2] = (at, full) if full >= warm or at == len(tokens) else (at + 1, warm)


@compiled(inline="always")
def switch_drops(cp):
    """Whether a model switch loses what the cache model holds: every provider keeps cached prefixes per model, as
    the logs show (a read of 0 on the first request after Claude Code's ``/model``, and after Gemini CLI moved a
    session from gemini-3-flash-preview to gemini-3.1-pro-preview). The automatic caches' hit rate is fitted to
    the reads the log shows in tokens (replay.simulator.cache_fit), with the switch already dropping entries."""
    return int(cp[0]) != NONE


@compiled(inline="always")
def shared_server(cp):
    """Whether the cache is a provider's server that other requests' writes reach too (Anthropic's, the automatic
    ones), not a local slot or block pool: what another session wrote is there (``foreign_entry``)."""
    code = int(cp[0])
    return code == ANTHROPIC or code == OPENAI or code == DEEPSEEK


@compiled(inline="always")
def server_resets(cp):
    """Whether a request's ``cache_cap`` applies: Anthropic's cache, where a change of the thinking setting or of
    the tool list invalidates what the log shows it does (replay.simulator.run_start.cache_caps)."""
    return int(cp[0]) == ANTHROPIC


@compiled
def cap_entries(tok, pos, n, dirty, cap):
    """Entries ending at or before ``dirty`` (the end of the prefix item) hold at most ``cap`` tokens: what
    reaches past the point where the server's prompt changed is gone (0: nothing is read)."""
    for i in range(n[0]):
        if pos[i] <= dirty:
            tok[i] = min(tok[i], cap)


@compiled
def server_gave(tok, exp, n, ts, sent, read):
    """The log shows what the server's cache gave a request where the server lost or kept a prefix on its own
    (``RunArrays.server_read``): every entry lives through the idle gap before it (the request's look-up time, as
    ``cache_request`` takes it) and holds at most ``read`` tokens."""
    now = sent if not math.isnan(sent) else (0.0 if math.isnan(ts) else ts)
    for i in range(n[0]):
        exp[i] = max(exp[i], now)
        tok[i] = min(tok[i], read)


@compiled
def foreign_entry(pos, tok, exp, n, overhead, read, tokens, forms, ftok, end, s_at, until, partial):
    """A request the log does not hold (another session with the same prefix, a retried attempt) cached the log's
    own prompt, ``read`` tokens of it, just before this request (``RunArrays.foreign_read``): one entry at the item
    boundary nearest those tokens in the replay's own count (the server's count ends on a breakpoint, an item
    boundary, that another tokenizer puts a little off), living ``until``; returns that boundary (0: none). With
    ``partial`` (an automatic cache, whose prefixes end anywhere) it holds the ``read`` tokens, ending in the item
    they end in. It holds the log's content,
    so it reaches only as far as this view still sends what the log sent (``first_rewrite``): a view that rewrote
    an earlier item has a shorter entry, one the request's breakpoints may no longer reach."""
    valid = first_rewrite(forms, ftok, tokens, end, s_at)
    full, at, held, off = overhead, 0, 0, read
    for q in range(valid):
        full += tokens[q]
        if partial:
            at, held = q + 1, min(full, read)
            if full >= read:
                break
        elif abs(full - read) < off:
            at, held, off = q + 1, full, abs(full - read)
        elif full > read:
            break
    if at == 0:
        return 0
    for i in range(n[0]):
        if pos[i] == at:
            tok[i], exp[i] = max(tok[i], held), max(exp[i], until)
            return at
    pos[n[0]], tok[n[0]], exp[n[0]] = at, held, until
    n[0] += 1
    return at


@compiled
def sent_after_breakpoint(tok, pos, n, end, extra, written):
    """The request sent ``extra`` tokens after its last breakpoint (``RunArrays.tail_extra``): the entry it wrote at
    its end holds that much less, and its write shrinks by as much (they are billed as input); returns the write."""
    if written <= 0:
        return written
    for i in range(n[0]):
        if pos[i] == end:
            tok[i] = max(tok[i] - extra, 0)
    return max(written - extra, 0)


@compiled(inline="always")
def drop_entries(n, pos, tok, exp, keep_warm):
    """Forget every entry and the warm prefix: the request goes to another model, whose cache holds none of them
    (a switch back within the TTL would find the first model's entries again; not modelled). With ``keep_warm`` the
    warm prefix other sessions keep cached (``warm_entry``'s kept entry, which never expires) stays: the log shows
    them keeping it on every model the run used (``RunArrays.warm_kept``)."""
    j = 0
    if keep_warm:
        for i in range(n[0]):
            if exp[i] == np.inf:
                pos[j], tok[j], exp[j] = pos[i], tok[i], exp[i]
                j += 1
    n[0] = j
    n[1] = n[2] = 0
