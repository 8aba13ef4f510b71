"""A run row's parts that do not depend on how the views were computed: the recorded output, why the recorded bill
cannot be reproduced, whether summary calls read the cache. The row itself is built by replay.simulator.run_rows."""

from __future__ import annotations

import numpy as np

from replay.model import KINDS
from replay.policies.base import AnyPolicy
from replay.run_arrays import CLEARING_EVENTS, RunArrays
from replay.simulator.cache_kept import cache_kept
from replay.simulator.cache_losses import MIN_WRITE, unexplained_losses
from replay.simulator.request_costs import writes_unbilled
from replay.simulator.run_start import uncached_floor

OUTPUT_KINDS = np.array([KINDS.index(k) for k in ("assistant_text", "reasoning", "tool_call")])


def recorded_output(run: RunArrays) -> dict:
    """The run's output tokens: recorded per request (``requests.output_tokens``); a request without a record
    counts the assistant items it produced (text, reasoning, calls appended at the next step).
    ``output_source``: recorded, items or mixed; ``bill_gap``: why the recorded bill cannot be reproduced
    (``bill_gap``)."""
    rec = run.rec_output if len(run.rec_output) == run.n_requests else np.full(run.n_requests, -1)
    known = rec >= 0
    total = int(rec[known].sum())
    if not known.all():
        produced = np.isin(run.kind, OUTPUT_KINDS)
        by_step = np.bincount(run.step[produced], weights=run.tokens[produced], minlength=run.n_requests + 1)
        idx = run.req_step[~known] + 1
        total += int(by_step[idx[idx < len(by_step)]].sum())
    source = "recorded" if known.all() else "items" if not known.any() else "mixed"
    return {"output_tokens": total, "output_source": source, "bill_gap": bill_gap(run)}


def bill_gap(run: RunArrays) -> str:
    """Why a replay of the log's own policy cannot reproduce the run's recorded bill, from the log alone ("" when
    it can): what the bill leaves out or cannot see. Each reason is a fact of the file:

    - the prompt is not reconstructable from the log (calibration's verdict, ``RunArrays.unreconstructable``);
    - requests without recorded usage: the replay prices them, the bill has nothing to price;
    - no cache figure on any request with usage: the bill prices every prompt token as uncached input, the replay
      charges the reads and writes of the run's cache model;
    - compactions that made a summary: the summariser's call is not among the run's requests, so the bill does
      not hold it; a replay charges it (``summary_cost_usd``);
    - requests at which the server's cache lost a prefix with no cause the log shows (replay.simulator.cache_losses):
      the bill writes it again, a replay reads it;
    - requests that read a prefix kept past the TTL, or more than the run had cached (replay.simulator.cache_kept):
      the bill reads it, a replay writes it again."""
    reasons = []
    if run.unreconstructable:
        reasons.append(f"prompt not reconstructable from the log ({run.unreconstructable})")
    m = run.n_requests
    billed = run.rec_prompt >= 0
    if billed.any() and not billed.all():
        reasons.append(f"{m - int(billed.sum())} of {m} requests have no usage in the log: the bill leaves them out")
    read = run.rec_cache_read if len(run.rec_cache_read) == m else np.full(m, -1)
    write = run.rec_write if len(run.rec_write) == m else np.full(m, -1)
    cached = run.cache_fit is None or run.cache_fit.name != "none"
    if billed.any() and cached and (read[billed] < 0).all() and (write[billed] < 0).all():
        reasons.append("the log records no cache reads or writes: the bill prices every prompt token as uncached input")
    calls = sum(1 for k in run.events.kind if k not in CLEARING_EVENTS)
    if calls:
        reasons.append(
            f"{calls} summariser call{'s' if calls > 1 else ''} of the log's compactions not among its requests: "
            "the bill leaves them out, a replay charges them (summary_cost_usd)"
        )
    reasons += cache_reasons(run)
    return "; ".join(reasons)


def cache_reasons(run: RunArrays) -> list[str]:
    """What the log's cache figures show that a replay of the run cannot reproduce: losses without a cause in the
    log (replay.simulator.cache_losses), prefixes kept past the TTL or read beyond what the run had cached
    (replay.simulator.cache_kept). ``bill_gap`` and ``fidelity``'s run rows give them."""
    lost = unexplained_losses(run).sentence()
    return ([lost] if lost else []) + cache_kept(run).sentences() + uncached_extra(run)


def uncached_extra(run: RunArrays) -> list[str]:
    """Requests after the first that sent ``MIN_WRITE`` tokens or more uncached beyond the run's floor (the part of
    the harness prefix every request sends after its last breakpoint, replay.simulator.run_start): content after
    the last cache breakpoint that the next request writes (ccl-coderabbit-agent request 2: 3,104 tokens). A replay
    caches everything up to the floor, so it writes them at once and reads them next."""
    m = run.n_requests
    if m < 2 or len(run.rec_input) != m or len(run.rec_write) != m or writes_unbilled(run):
        return []
    if not (run.rec_write > 0).any():  # no explicit breakpoints: an automatic cache leaves any part uncached
        return []
    extra = run.rec_input - uncached_floor(run)
    at = np.flatnonzero(extra >= MIN_WRITE)
    at = at[at > 0]
    if not len(at):
        return []
    shown = ", ".join(str(int(k)) for k in at[:6]) + (", ..." if len(at) > 6 else "")
    n = len(at)
    return [
        f"{int(extra[at].sum()):,} tokens sent after the last cache breakpoint at {n} request{'s' if n > 1 else ''} "
        f"({shown}): the bill pays them as input and the next request writes them, a replay caches them at once"
    ]


def summary_hits_cache(policy: AnyPolicy) -> bool:
    """Whether the policy's summarisation calls read the cached prefix (a policy says so with a
    ``summary_reads_cache`` attribute; by default they are uncached: no tools, a different prefix)."""
    return bool(getattr(policy, "summary_reads_cache", False))
