"""A run row's parts that do not depend on how the views were computed: the recorded output, why the recorded bill
cannot be reproduced, whether summary calls read the cache. The row itself is built by replay.simulator.run_rows."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from replay.model import KINDS
from replay.policies.base import AnyPolicy
from replay.policies.condenser_prompt import NO_CONDENSER
from replay.run_arrays import RunArrays
from replay.simulator.cache_kept import cache_kept
from replay.simulator.cache_losses import unexplained_losses
from replay.simulator.caches import Anthropic
from replay.simulator.server_cache import replayed

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
    """Why a replay of the log's own policy cannot reproduce the run's recorded bill like for like
    (``billed_cost_usd`` against ``recorded_cost_usd``), from the log alone ("" when it can). What the bill cannot
    hold by construction is compared apart, not here: requests without recorded usage and summariser calls whose
    usage the log does not record are left out of ``billed_cost_usd`` (the latter in
    ``unbilled_summary_cost_usd``), and a log without cache figures is priced as its bill prices it, all uncached
    (``recorded_cost_note`` says so). Each reason is a fact of the file:

    - the prompt is not reconstructable from the log (calibration's verdict, ``RunArrays.unreconstructable``);
    - the log records the usage of some of its summariser calls and not of others: the bill holds part of them,
      the like-for-like cost none;
    - the log's recorded summariser calls sent another prompt than the history a replay charges them for
      (:func:`summariser_reads`);
    - what the log's cache figures show that a replay cannot reproduce (``cache_reasons``)."""
    reasons = []
    if run.unreconstructable:
        reasons.append(f"prompt not reconstructable from the log ({run.unreconstructable})")
    recorded, made = len(run.summariser_calls), run.summariser_made
    if 0 < recorded < made:
        reasons.append(
            f"the log records the usage of {recorded} of its {made} summariser calls: the bill holds those, the "
            "like-for-like cost leaves every simulated summariser call out (unbilled_summary_cost_usd)"
        )
    read = summariser_reads(run)
    if read:
        reasons.append(read)
    reasons += cache_reasons(run)
    return "; ".join(reasons)


def cache_reasons(run: RunArrays) -> list[str]:
    """What the log's cache figures show that a replay of the run cannot reproduce: losses without a cause in the
    log (replay.simulator.cache_losses), prefixes kept past the TTL or read beyond what the run had cached
    (replay.simulator.cache_kept). A run under breakpoints that replays its server's own losses and keeps
    (replay.simulator.server_cache) reproduces them all; one under an automatic cache, the reads past its
    conversation. ``bill_gap`` and ``fidelity``'s run rows give them."""
    explicit = run.cache_fit is not None and isinstance(run.cache_fit.cache(), Anthropic)
    replays = bool(len(replayed(run)))
    if replays and explicit:
        return []
    lost, kept = unexplained_losses(run).sentence(), cache_kept(run)
    if replays:  # an automatic cache: its reads past the conversation are replayed, the rest is not
        none = np.zeros(0, np.int64)
        kept = replace(kept, beyond=none, beyond_tokens=none)
    return ([lost] if lost else []) + kept.sentences()


SUMMARY_TOLERANCE = 0.03  # the comparison's own target: within 3% of the bill


def summariser_reads(run: RunArrays) -> str:
    """Why the replay's summarisation calls cannot cost what the log's recorded ones did, when the log shows they
    read another prompt than the one a replay charges them ("" when it does not). A run whose harness's condenser
    is known (``RunArrays.condenser``: OpenHands V0 and V1) is charged the prompt that condenser sends
    (replay.policies.condenser_prompt): no such gap. Otherwise a replay's call reads the whole history the request
    before it sent (replay.simulator.request_costs.summary_costs), and the gap is there when the log's calls' own
    prompts (uncached + read + written) differ from that by more than the comparison's 3%."""
    steps = [step for step, _, _ in run.summariser_calls]
    if not steps or len(run.rec_prompt) != run.n_requests or run.condenser != NO_CONDENSER:
        return ""
    before = [int(run.rec_prompt[k - 1]) if 0 < k <= run.n_requests else -1 for k in steps]
    if min(before) <= 0:
        return ""
    sent = sum(sum(counts[:4]) for _, _, counts in run.summariser_calls)
    held = sum(before)
    if abs(sent / held - 1) <= SUMMARY_TOLERANCE:
        return ""
    n = len(steps)
    return (
        f"the log's {n} summariser call{'s' if n > 1 else ''} sent {sent:,} prompt tokens in all where the request"
        f"{'s' if n > 1 else ''} before {'them' if n > 1 else 'it'} sent {held:,}: the harness's summariser reads "
        "another prompt than the history a replay's summarisation call is charged for (summary_cost_usd against "
        "recorded_summary_cost_usd)"
    )


def summary_hits_cache(policy: AnyPolicy) -> bool:
    """Whether the policy's summarisation calls read the cached prefix (a policy says so with a
    ``summary_reads_cache`` knob or attribute; by default they are uncached: no tools, a different prefix)."""
    config = getattr(policy, "config", None)
    return bool(getattr(config, "summary_reads_cache", False) or getattr(policy, "summary_reads_cache", False))
