"""What a run's requests cost, request by request: the simulated prompt (uncached, read, written) and output of each
request priced at the model its log names for it, on its day, with its writes split into 5 minute and 1 hour
ones as the log's own writes at that point of the run were (replay.metrics.bill). The recorded bill of the same
requests comes out of the same prices, so a replay of the recorded policy is compared with what the log cost.

Shared by the per-request loop (replay.simulator.run) and the sweep kernels, which must give the same run rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

import numpy as np

from replay.metrics.bill import RequestBill, day_of, price_keyed
from replay.metrics.prices import Pricing
from replay.model import KINDS
from replay.run_arrays import RunArrays
from replay.simulator.billing import HOUR, Billing
from replay.simulator.provider_caches import provider_cache_of

OUTPUT_KINDS = np.array([KINDS.index(k) for k in ("assistant_text", "reasoning", "tool_call")])


def output_per_request(run: RunArrays) -> np.ndarray:
    """Output tokens of each request: recorded (``requests.output_tokens``), else the assistant items it produced
    (text, reasoning, calls appended at the next step)."""
    m = run.n_requests
    rec = run.rec_output if len(run.rec_output) == m else np.full(m, -1, np.int64)
    out = rec.astype(np.int64).copy()
    if (rec < 0).any():
        produced = np.isin(run.kind, OUTPUT_KINDS)
        by_step = np.bincount(run.step[produced], weights=run.tokens[produced], minlength=m + 1)
        idx = run.req_step + 1
        made = np.where(idx < len(by_step), by_step[np.minimum(idx, len(by_step) - 1)], 0).astype(np.int64)
        out = np.where(rec >= 0, rec, made)
    return out


def one_hour_share(run: RunArrays) -> np.ndarray:
    """Per request, the share of its cache writes the log wrote for 1 hour: the request's own split where it wrote
    something, else the nearest earlier request's (the harness keeps its TTL), else the nearest later one's; NaN
    when the log never splits writes (the cache model's TTL decides)."""
    m = run.n_requests
    write = run.rec_write if len(run.rec_write) == m else np.full(m, -1, np.int64)
    hour = run.rec_write_1h if len(run.rec_write_1h) == m else np.full(m, -1, np.int64)
    known = (write > 0) & (hour >= 0)
    share = np.full(m, np.nan)
    share[known] = np.minimum(hour[known], write[known]) / write[known]
    if not known.any():
        return share
    at = np.where(known, np.arange(m), -1)
    np.maximum.accumulate(at, out=at)
    first = int(np.flatnonzero(known)[0])
    return np.where(at >= 0, share[np.maximum(at, 0)], share[first])


@dataclass(frozen=True, eq=False)
class RequestPlan:
    """What pricing needs of every request of one or more runs, independent of the policy: its (model, day) key,
    1 h write share, output tokens, and its recorded counts (uncached, read, 5 min, 1 h, output; ``billed``:
    the log recorded its usage)."""

    keys: list[tuple[str | None, date | None]]
    key_of: np.ndarray
    run_of: np.ndarray
    share_1h: np.ndarray
    output: np.ndarray
    recorded: np.ndarray  # (n, 5) int64
    billed: np.ndarray
    read_known: np.ndarray  # the log records the request's cache reads (0 included)
    write_known: np.ndarray  # the log records the request's cache writes (0 included)
    # the summariser calls the logs record (RunArrays.summariser_calls): (model, day) key, run, the five counts
    call_key_of: np.ndarray
    call_run_of: np.ndarray
    call_counts: np.ndarray  # (calls, 5) int64
    calls_made: np.ndarray  # per run: summariser calls its events made, recorded or not
    # the server-side iterations the logs record (RunArrays.server_calls): (model, day) key, run, the five counts
    server_key_of: np.ndarray
    server_run_of: np.ndarray
    server_counts: np.ndarray  # (calls, 5) int64
    # the session totals that bill runs none of whose requests records usage (RunArrays.session_totals): (model,
    # day) key, run, the five counts; and per run whether they bill it
    session_key_of: np.ndarray
    session_run_of: np.ndarray
    session_counts: np.ndarray  # (totals, 5) int64
    session_billed: np.ndarray  # per run
    # per run: its bill reads from the cache and never records a write (:func:`writes_unreported`)
    writes_unreported: np.ndarray
    # per run: its harness's summariser call reads the cached conversation (RunArrays.summary_reads_cache)
    summary_cached: np.ndarray


def plan(runs: list[RunArrays] | tuple[RunArrays, ...]) -> RequestPlan:
    keys: dict[tuple[str | None, date | None], int] = {}
    key_of, run_of, share, output, recorded, billed, read_known = [], [], [], [], [], [], []
    write_known, call_key, call_run, call_counts = [], [], [], []
    server_key, server_run, server_counts = [], [], []
    session_key, session_run, session_counts = [], [], []
    unreported = []
    for i, run in enumerate(runs):
        m = run.n_requests
        models = run.req_model if len(run.req_model) == m else (None,) * m
        key_of.append(
            np.array(
                [
                    keys.setdefault((mod or run.model, day_of(float(t))), len(keys))
                    for mod, t in zip(models, run.req_ts, strict=True)
                ],
                dtype=np.int64,
            )
        )
        for step, model, counts in run.summariser_calls:
            call_key.append(_side_key(keys, run, models, step, model))
            call_run.append(i)
            call_counts.append(counts)
        for step, model, counts in run.server_calls:
            server_key.append(_side_key(keys, run, models, step, model))
            server_run.append(i)
            server_counts.append(counts)
        write_known.append(run.rec_write >= 0 if len(run.rec_write) == m else np.zeros(m, np.bool_))
        run_of.append(np.full(m, i, np.int64))
        share.append(one_hour_share(run))
        output.append(output_per_request(run))
        rec, ok = recorded_counts(run)
        recorded.append(rec)
        billed.append(ok)
        totals = run.session_totals if m and not ok.any() else ()
        for model, _, counts in totals:
            session_key.append(_side_key(keys, run, models, m - 1, model))
            session_run.append(i)
            session_counts.append(counts)
        unreported.append(writes_unreported(run, [counts for _, _, counts in totals]))
        read_known.append(run.rec_cache_read >= 0 if len(run.rec_cache_read) == m else np.zeros(m, np.bool_))

    def cat(parts: list, dt: type) -> np.ndarray:
        return np.concatenate(parts).astype(dt) if parts else np.zeros(0, dt)

    return RequestPlan(
        list(keys),
        cat(key_of, np.int64),
        cat(run_of, np.int64),
        cat(share, np.float64),
        cat(output, np.int64),
        np.concatenate(recorded) if recorded else np.zeros((0, 5), np.int64),
        cat(billed, np.bool_),
        cat(read_known, np.bool_),
        cat(write_known, np.bool_),
        np.array(call_key, np.int64),
        np.array(call_run, np.int64),
        np.array(call_counts, np.int64).reshape(-1, 5),
        np.array([run.summariser_made for run in runs], np.int64),
        np.array(server_key, np.int64),
        np.array(server_run, np.int64),
        np.array(server_counts, np.int64).reshape(-1, 5),
        np.array(session_key, np.int64),
        np.array(session_run, np.int64),
        np.array(session_counts, np.int64).reshape(-1, 5),
        np.bincount(np.array(session_run, np.int64), minlength=len(runs)) > 0,
        np.array(unreported, np.bool_),
        np.array([run.summary_reads_cache for run in runs], np.bool_),
    )


def _side_key(keys: dict, run: RunArrays, models: tuple, step: int, model: str | None) -> int:
    """The (model, day) key of a call the log records beside the requests (a summariser call, a server-side
    iteration): its own model, else the model of the run's request at its step, else the run's; on that request's
    day (the last request's when the call comes after every request)."""
    at = min(step, run.n_requests - 1)
    own = (models[at] if at >= 0 else None) or run.model
    day = day_of(float(run.req_ts[at])) if at >= 0 else None
    return keys.setdefault((model or own, day), len(keys))


def writes_unreported(run: RunArrays, totals: list[tuple[int, int, int, int, int]]) -> bool:
    """Whether the run's bill reads from the cache and never records a write: its requests' usage
    (:func:`writes_unbilled`) or the session totals that bill it (uncached, read, 5 min and 1 h writes, output;
    the Copilot CLI's totals of Anthropic models report no write). Such a bill holds what the server wrote as
    uncached input, so a replay is compared with it like for like by pricing its writes so."""
    if totals:
        return sum(t[1] for t in totals) > 0 and sum(t[2] + t[3] for t in totals) == 0
    return writes_unbilled(run)


def writes_unbilled(run: RunArrays) -> bool:
    """Whether the run's log reads from the cache and records a write of 0 on every request with usage: its server
    held what it read and wrote without reporting the write (MiniMax, whose writes are billed as input:
    replay.simulator.provider_caches; an automatic cache). What the log shows the server held
    (replay.simulator.cache_losses), not how a replay is priced: that is the provider's definition."""
    m = run.n_requests
    if len(run.rec_write) != m or len(run.rec_cache_read) != m:
        return False
    billed = run.rec_prompt >= 0
    return bool(billed.any() and (run.rec_write[billed] == 0).all() and (run.rec_cache_read[billed] > 0).any())


def own_caches(prices: list, bills: list[Billing], key_of: np.ndarray, run_of: np.ndarray) -> np.ndarray:
    """Per request, whether its run's cache model is one of its own model's provider's (``billing.is_own``): reads
    and writes at the listed cache prices, writes billed only where that provider bills them."""
    names = sorted({b.cache.name for b in bills})
    table = np.array(
        [[n in provider_cache_of(x.provider, x.cache_read is not None).models() for n in names] for x in prices],
        np.bool_,
    )
    table = table.reshape(len(prices), len(names))
    of_run = np.array([names.index(b.cache.name) for b in bills], np.int64)
    return table[key_of, of_run[run_of]] if len(key_of) else np.zeros(0, np.bool_)


def recorded_counts(run: RunArrays) -> tuple[np.ndarray, np.ndarray]:
    """(m, 5) recorded uncached, read, 5 min writes, 1 h writes, output per request; and which requests recorded
    usage (the recorded bill's rules: replay.metrics.recorded_bill)."""
    m = run.n_requests

    def col(a: np.ndarray) -> np.ndarray:
        return a.astype(np.int64) if len(a) == m else np.full(m, -1, np.int64)

    prompt, inp, read = col(run.rec_prompt), col(run.rec_input), np.maximum(col(run.rec_cache_read), 0)
    write, out = np.maximum(col(run.rec_write), 0), np.maximum(col(run.rec_output), 0)
    hour = np.clip(col(run.rec_write_1h), 0, write)
    uncached = np.where(inp >= 0, inp, np.maximum(prompt - read - write, 0))
    return np.stack([uncached, read, write - hour, hour, out], axis=1), prompt >= 0


@dataclass(frozen=True)
class RunCosts:
    """Per run: simulated prompt and output USD, the recorded bill, the 1 h writes charged, unpriced requests, and
    the unpriced models' reasons (model -> why)."""

    prompt_usd: np.ndarray
    output_usd: np.ndarray
    recorded_usd: np.ndarray  # NaN: a billed request unpriced, or nothing billed; recorded summariser calls included
    written_1h: np.ndarray
    unpriced: np.ndarray
    why: list[dict[str, str]]
    bill_notes: list[str]  # per run: why the recorded bill is not what the replay can reproduce ("" when it is)
    billed_usd: np.ndarray  # simulated prompt and output of the requests the bill covers, priced as the bill prices
    recorded_summary_usd: np.ndarray  # the bill's recorded summariser calls (0: none recorded)
    summaries_billed: np.ndarray  # bool: the log records every summariser call its events made (at least one)
    server_usd: np.ndarray  # the recorded server-side iterations, charged as recorded by every policy (0: none)


def run_costs(
    p: RequestPlan,
    n_runs: int,
    bills: list[Billing],
    prompt: np.ndarray,
    cached: np.ndarray,
    written: np.ndarray,
    pricing: Pricing,
) -> RunCosts:
    """Price every request of ``p`` (``bills[i]``: run i's cache model) and sum per run."""
    prices = [pricing.prices(model, day) for model, day in p.keys]
    own, override = _cache_rules(p, bills, prices)
    hour_ttl = np.array([getattr(b.cache, "ttl", 0.0) >= HOUR for b in bills], np.float64)[p.run_of]
    share = np.where(np.isnan(p.share_1h), hour_ttl, p.share_1h)
    unbilled = np.array(
        [not provider_cache_of(x.provider, x.cache_read is not None).writes_billed for x in prices], np.bool_
    )
    uncached, read, write_5m, write_1h, output = p.recorded.T
    # a provider that bills no write reports none; a request whose usage reports one took its API's explicit path
    # (MiniMax's cache_control breakpoints), which bills it as a write
    reported = write_5m + write_1h > 0
    if len(prices):
        written = np.where(own & unbilled[p.key_of] & ~reported, 0, written)  # billed as input
    w1h = written * share
    sim = price_keyed(
        p.keys, p.key_of, prompt - cached - written, cached, written - w1h, w1h, p.output, pricing, override, prices
    )
    rec = price_keyed(p.keys, p.key_of, uncached, read, write_5m, write_1h, output, pricing=pricing, prices=prices)
    u = sim.usd

    def by_run(v: np.ndarray) -> np.ndarray:
        return np.bincount(p.run_of, weights=v, minlength=n_runs).astype(np.float64)  # int64 when there is none

    rec_total = np.where(p.billed, rec.total, 0.0)

    def side(run_of: np.ndarray, key_of: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Per run, the USD of its rows of recorded calls or totals beside the requests (NaN: one unpriced)."""
        if not len(key_of):
            return np.zeros(n_runs, np.float64)
        uncached, read, write_5m, write_1h, output = counts.T
        usd = price_keyed(p.keys, key_of, uncached, read, write_5m, write_1h, output, pricing, None, prices).total
        return np.bincount(run_of, weights=usd, minlength=n_runs).astype(np.float64)

    calls = side(p.call_run_of, p.call_key_of, p.call_counts)
    recorded_calls = np.bincount(p.call_run_of, minlength=n_runs)
    server = side(p.server_run_of, p.server_key_of, p.server_counts)
    session = side(p.session_run_of, p.session_key_of, p.session_counts)
    rec_usd = by_run(rec_total) + calls + server + session
    rec_usd[(by_run(p.billed.astype(np.float64)) == 0) & (recorded_calls == 0) & ~p.session_billed] = np.nan
    # like for like: where the log records neither reads nor writes, the bill prices the whole prompt uncached
    blind = p.billed & ~p.read_known & ~p.write_known
    zero = 0 * prompt
    flat = price_keyed(p.keys, p.key_of, prompt, zero, zero, zero, p.output, pricing, None, prices)
    like = np.where(blind, flat.total, sim.total)
    # where the bill records reads and never a write, what the replay writes is priced as the bill prices it: input
    unwritten = p.writes_unreported[p.run_of] & ~blind
    if unwritten.any():
        as_input = price_keyed(p.keys, p.key_of, prompt - cached, cached, zero, zero, p.output, pricing, None, prices)
        like = np.where(unwritten, as_input.total, like)
    return RunCosts(
        by_run(u["input"] + u["cache_read"] + u["cache_write"] + u["cache_write_1h"]),
        by_run(u["output"]),
        rec_usd,
        by_run(w1h),
        by_run((~sim.priced).astype(np.float64)),
        _reasons(p, n_runs, sim, pricing),
        bill_notes(p, n_runs, cached),
        by_run(np.where(covered(p), like, 0.0)),
        calls,
        (p.calls_made > 0) & (recorded_calls == p.calls_made),
        server.astype(np.float64),
    )


def _cache_rules(
    p: RequestPlan, bills: list[Billing], prices: list
) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray]]:
    """Per request, whether its run's cache model is its provider's own, and the (read, write) multipliers on its
    input price where it is not (NaN where it is: the listed cache prices apply)."""
    own = own_caches(prices, bills, p.key_of, p.run_of)
    read_x = np.array([b.cache.read_multiplier for b in bills], np.float64)[p.run_of]
    write_x = np.array([b.cache.write_multiplier for b in bills], np.float64)[p.run_of]
    return own, (np.where(own, np.nan, read_x), np.where(own, np.nan, write_x))


def summary_costs(
    p: RequestPlan,
    n_runs: int,
    bills: list[Billing],
    sent: np.ndarray,
    written: np.ndarray,
    output: np.ndarray,
    hits_cache: bool,
    pricing: Pricing,
) -> np.ndarray:
    """Per run, the USD of the summariser calls a policy made: per request, the call made before it (its prompt
    ``sent``, or ``written`` to the cache, and its ``output``; 0: none), at that request's model and day (the
    harness summarises with the model it is running: a Codex session that switched to gpt-5.6-luna compacted with
    it, and a call priced at the run's gpt-5.5 put the session 19% over its bill).

    The prompt sent is read from the cache in the share the run's own recorded summariser calls read (Codex's
    remote compaction, 0.81-0.90 of it; none: Codex 0.116's local one), else whole where the run's harness
    forks the conversation for it (``RequestPlan.summary_cached``: Claude Code 2.1.38 on, whichever policy's
    summaries it makes, the recorded one's included) or the policy says so (``hits_cache``, its
    ``summary_reads_cache``: replay.simulator.run_output.summary_hits_cache), else uncached."""
    prices = [pricing.prices(model, day) for model, day in p.keys]
    _, override = _cache_rules(p, bills, prices)
    recorded_prompt = np.bincount(p.call_run_of, weights=p.call_counts[:, :4].sum(axis=1), minlength=n_runs)
    recorded_read = np.bincount(p.call_run_of, weights=p.call_counts[:, 1], minlength=n_runs)
    own = np.divide(recorded_read, recorded_prompt, out=np.zeros(n_runs), where=recorded_prompt > 0)
    share = np.where(recorded_prompt > 0, own, (hits_cache | p.summary_cached).astype(np.float64))[p.run_of]
    zero = np.zeros(len(sent), np.int64)
    read = np.rint(sent * share).astype(np.int64)
    uncached = sent - read
    usd = price_keyed(p.keys, p.key_of, uncached, read, written, zero, output, pricing, override, prices).total
    made = (sent + written + output) > 0  # a request with no call before it costs none, even at an unknown price
    return np.bincount(p.run_of, weights=np.where(made, usd, 0.0), minlength=n_runs).astype(np.float64)


def covered(p: RequestPlan) -> np.ndarray:
    """Per request, whether the recorded bill holds its usage: its own, or its run's session totals."""
    return p.billed | p.session_billed[p.run_of]


def bill_notes(p: RequestPlan, n_runs: int, cached: np.ndarray) -> list[str]:
    """Per run, what the recorded bill leaves out that the simulated cost counts, so the two cannot agree whatever
    the replay does (``billed_cost_usd`` leaves it out, or prices it as the bill does): requests whose log records
    no usage (the bill has no figure for them; the replay prices them), cache reads the log never records while
    the replay's cache reads some (the bill prices every prompt token at the full input price; e.g. aider's token
    line, which never reports an OpenAI model's cached tokens), and summariser calls whose usage the log does not
    record (Claude Code 1.0 and 2.0, Gemini CLI)."""

    def by_run(v: np.ndarray) -> np.ndarray:
        return np.bincount(p.run_of, weights=v, minlength=n_runs)

    requests = by_run(np.ones(len(p.run_of)))
    recorded_calls = np.bincount(p.call_run_of, minlength=n_runs)
    billed = by_run(covered(p).astype(np.float64))
    unread = by_run((p.billed & ~p.read_known).astype(np.float64))
    replay_read = by_run(np.where(p.billed & ~p.read_known, cached, 0).astype(np.float64))
    notes = []
    for i in range(n_runs):
        parts = []
        if billed[i] < requests[i] and (billed[i] > 0 or recorded_calls[i] > 0):  # a bill without them
            parts.append(
                f"{int(requests[i] - billed[i])} of {int(requests[i])} requests record no usage: the bill leaves "
                "them out, the replay prices them"
                + ("" if billed[i] else " (the bill is the log's summariser calls alone)")
            )
        if billed[i] and unread[i] == billed[i] and replay_read[i] > 0:
            parts.append(
                "the log records no cache reads: its bill prices every prompt token uncached, the replay's cache "
                f"reads {int(replay_read[i]):,} tokens (billed_cost_usd prices them as the bill does)"
            )
        if p.calls_made[i] > recorded_calls[i]:
            unrecorded = int(p.calls_made[i] - recorded_calls[i])
            parts.append(
                f"{unrecorded} of the log's {int(p.calls_made[i])} summariser calls record no usage: the bill leaves "
                "them out, the replay charges them (unbilled_summary_cost_usd)"
            )
        notes.append("; ".join(parts))
    return notes


def _reasons(p: RequestPlan, n_runs: int, bill: RequestBill, pricing: Pricing) -> list[dict[str, str]]:
    out: list[dict[str, str]] = [{} for _ in range(n_runs)]
    gap = ~bill.priced
    pairs = np.unique(np.stack([p.run_of[gap], p.key_of[gap]], axis=1), axis=0) if gap.any() else ()
    for i, k in pairs:
        name = pricing.model or p.keys[k][0] or "(none)"
        out[i][name] = bill.unpriced.get(name, "")
    return out


def billing_note(bill: Billing, why: dict[str, str]) -> str:
    """The run's billing note: its cache model's note, and each model of its requests that has no price (the run's
    own model's price is per request now: a run named after an unpriced model whose requests all name priced
    models is priced)."""
    notes = [n for n in bill.note.split("; ") if n and not n.startswith("no price for model")]
    notes += [
        f"no price for model {m!r}{f' ({why[m]})' if why[m] else ''}: its requests' cost is NaN (pass --prices FILE "
        "or --price input=.. --price output=..)"
        for m in sorted(why)
    ]
    return "; ".join(notes)


def cost_row(costs: RunCosts, i: int) -> dict:
    """Run ``i``'s columns of ``costs`` for a run row (NaN recorded bill as None)."""
    rec = float(costs.recorded_usd[i])
    return {
        "recorded_cost_usd": None if np.isnan(rec) else rec,
        "written_1h_tokens": int(round(costs.written_1h[i])),
        "unpriced_requests": int(costs.unpriced[i]),
        "recorded_cost_note": costs.bill_notes[i],
    }
