"""Mechanical checks on a log that name why it cannot give the server's prompt (calibrate's *unreconstructable*
reasons), and the boundaries a prompt fit gets an offset at: compactions, model switches, what readers noted as
unlogged. They read the recorded usage and the log's structure (sizes as chars/4), so a reason is the same under
every tokenizer."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import polars as pl

from replay.tokens.usage_metadata import events_and_rewrites, usage_only_steps

SHRINK_TOKENS, SHRINK_SHARE = 1000, 0.02  # a recorded prompt falling by more than both, with no boundary between
MIN_SHRINKS, MIN_SHRINK_SHARE = 3, 0.05  # ... this often (and in 5% of requests) means the history is not the log's
GROWTH_RATIO, GROWTH_TOKENS = 2.0, 20_000  # the server's prompt grew this much more than the log's items did
# a jump: a request's prompt grew by over JUMP_RATIO times what the log's new items hold (bytes/4) plus the larger
# of JUMP_TOKENS and JUMP_SHARE of the prompt before it
JUMP_RATIO, JUMP_TOKENS, JUMP_SHARE = 2.0, 1000, 0.05
# a stall: the log's new items hold over STALL_TOKENS while the recorded prompt grew by under STALL_SHARE of them
STALL_TOKENS, STALL_SHARE = 1000, 0.25


# where the harness prefix itself changes, so its offset may be negative: a new model (its prefix may be smaller), a
# new tool list (Claude Code's deferred_tools_delta: schemas deferred to ToolSearch); replay.simulator.prompt's
# PREFIX_CHANGES (this tuple) sends them as prefix segments
DEFERRED = "deferred-tools"
SIGNED_BOUNDARIES = ("model switch", DEFERRED)
# a deferred_tools_delta where the model does not switch: Claude Code announces the change of its deferred tools in a
# message (an attachment the log names but does not hold) and sends the same tool list, so the cached prefix holds:
# LAF-US/IDAHO-VAULT ad723d79 (2.1.111, an MCP server's 94-111 tools deferred and withdrawn at 11 requests) read the
# whole previous prompt at each. Content from its step on, summarised away at the next compaction
DEFERRED_NOTICE = "deferred-tools notice"
# the first attachments of a Claude Code sub-agent (replay.readers.claude_code.SUBAGENT_ATTACHMENTS), sent from its
# second request: its deferred tools, MCP instructions and agents announced in messages, summarised away as a notice
# is. LAF-US/IDAHO-VAULT's claude-desktop sub-agents grew 10-16k tokens there beyond their logged tool results (an
# MCP server's many deferred tools), the corpus's ccl-worktrees sub-agents (2.1.114) about 2,750
SUBAGENT_NOTICE = "subagent attachments"
NOTICES = (DEFERRED_NOTICE, SUBAGENT_NOTICE)
# what the Claude Code reader notes as content the log lacks that only enters the prompt (replay.readers.claude_code:
# a message whose parent the log lacks, the tool schemas a ToolSearch reference expands into): no drop follows from it
ENTERING = (*NOTICES, "missing-parent", "tool-reference")


@dataclass
class RunCheck:
    """Why a run cannot be reconstructed from its log (empty when it can), and the boundaries fitted."""

    reasons: list[str] = field(default_factory=list)
    boundaries: dict[int, str] = field(default_factory=dict)
    crowded_out: bool = False  # an inferred boundary was left out for want of requests beside a free scale


def check_run(
    items: pl.DataFrame, steps: np.ndarray, models: list[str | None], metadata: dict, scale_known: bool = False
) -> RunCheck:
    """The boundaries to fit: compactions, model switches and what the reader noted as unlogged. A step holds one
    boundary; a change of the prefix there (``SIGNED_BOUNDARIES``) is the one kept: a compaction's unlogged content
    is never negative, so a prefix that shrinks at a compaction (LAF-US/IDAHO-VAULT 05541cb5, 2.1.92: a /model
    switch right after one deferred 438 tools, 168k to 42k) fits only as the prefix change. A deferred-tools note
    without a model switch at its step is a notice (``DEFERRED_NOTICE``), not a change of the prefix.
    ``scale_known``: the model's prior scale stands in for a fitted one (``calibrate.prior_scales``)."""
    check = RunCheck()
    for s in items.filter(pl.col("kind") == "summary")["step"].to_list():
        check.boundaries.setdefault(int(s), "compaction")
    for ev in metadata.get("context_events") or []:
        if isinstance(ev, dict) and ev.get("kind") == "compaction" and isinstance(ev.get("step"), int):
            check.boundaries.setdefault(ev["step"], "compaction")
    for i in range(1, len(steps)):
        if models[i] and models[i - 1] and models[i] != models[i - 1]:
            check.boundaries[int(steps[i])] = "model switch"
    for note in metadata.get("unlogged") or []:
        if isinstance(note, dict) and isinstance(note.get("step"), int):
            reason = str(note.get("reason") or "unlogged")
            if reason == DEFERRED and check.boundaries.get(note["step"]) != "model switch":
                reason = DEFERRED_NOTICE
            if reason in SIGNED_BOUNDARIES:
                check.boundaries[note["step"]] = reason
            else:
                check.boundaries.setdefault(note["step"], reason)
    # a sub-agent's first attachments are inferred from the harness's code, not logged: their term is fitted where
    # the model's scale is known (calibrate.prior_scales) or stays free beside it (calibrate.fit: boundaries + 2 <
    # requests). Otherwise it takes the scale's place at scale 1 and meets them by construction (Jason-liu-0219/
    # my-claude agent-a126c7b, three requests: 0.85 / 1.04% with a scale, 3.14 / 5.40% with the term instead)
    inferred = [b for b, why in check.boundaries.items() if why == SUBAGENT_NOTICE]
    if inferred and len(check.boundaries) + (0 if scale_known else 2) >= len(steps):
        for b in inferred:
            del check.boundaries[b]
        check.crowded_out = True
    return check


def check_shrinks(
    check: RunCheck,
    steps: np.ndarray,
    recorded: np.ndarray,
    recon: np.ndarray,
    metadata: dict,
    targets: tuple[float, float],
) -> None:
    """Add a reason when the recorded prompt often shrinks with no boundary between, by more than the log's own
    prompt ``recon`` shrank there (a harness dropping what the log shows dropped, such as Codex's earlier
    reasoning at a new turn, or a rewrite a reader derived, ``context_rewrites``, is no sign). ``recon`` is in the
    model's units (the tokenizer's counts times the run's fitted scale): a drop counted in a tokenizer that counts
    a quarter fewer tokens than the model's is no quarter smaller for it.

    Fewer such drops also flag the run when they alone miss the per-request ``targets`` (median, p95): a
    prompt model grows between boundaries as the log does, so an unexplained drop D between two requests leaves
    one of them off by at least D over the sum of their prompts, whatever the fit; those lower bounds (one per
    request) are scored against the targets. A drop the next request climbs back from is a figure logged low, not
    content gone, and is left out of this count. Past those, a run with such a drop is flagged when no prompt that
    grows as the log's items do between boundaries (one scale, one offset per stretch between them:
    ``best_quantile``) can meet the targets: the drop and the log's drift around it together."""
    n = len(steps)
    shrinks = 0
    logged = {
        ev["step"] for ev in events_and_rewrites(metadata) if isinstance(ev, dict) and isinstance(ev.get("step"), int)
    }
    forced = np.zeros(n)  # a lower bound on each request's error that the unexplained drops force
    # a context event or rewrite the log records (Cline's truncation) is a boundary the log shows, and so is a
    # compaction the reader found the log does not hold (check_unrecorded names those)
    logged |= {s for s in metadata.get("unrecorded_compactions") or [] if isinstance(s, int)}
    # content the log lacks that only enters (``ENTERING``) explains no drop (SWORDIntel/claude-backups e4ce568e,
    # 1.0.89: the prompt fell by 35,289 tokens at a resumed request whose parent the log lacks, unflagged at 11%)
    shrinking = {b for b, why in check.boundaries.items() if why not in ENTERING}
    crossed = [i > 0 and any(steps[i - 1] < b <= steps[i] for b in (*shrinking, *logged)) for i in range(n)]
    for i in range(1, n):
        drop = recorded[i - 1] - recorded[i] - max(recon[i - 1] - recon[i], 0.0)
        if drop > SHRINK_TOKENS and drop > SHRINK_SHARE * recorded[i - 1] and not crossed[i]:
            shrinks += 1
            # a prompt logged low once and back at its level next (MiniMax's streaming-start usage) is a figure
            # off, not content gone; drops at neighbouring requests share one request: count it once
            dip = i + 1 < n and recorded[i + 1] >= recorded[i - 1]
            if not dip and forced[i - 1] == 0:
                forced[i] = drop / (recorded[i - 1] + recorded[i])
    if shrinks >= max(MIN_SHRINKS, MIN_SHRINK_SHARE * n):
        provider = metadata.get("model_provider")
        via = f" (served via provider {provider!r})" if provider else ""
        check.reasons.append(
            f"context outside the log{via}: {shrinks} of {n} requests record a prompt smaller by "
            f">{SHRINK_TOKENS:,} tokens than the one before with no compaction or other boundary in the log; "
            "content the server saw comes and goes without a trace in the log"
        )
    elif forced.any():
        k = int(np.argmax(forced))
        fell = (
            f"content outside the log: the recorded prompt fell by {recorded[k - 1] - recorded[k]:,.0f} tokens at "
            f"request {k} (of {n}) with no compaction or other boundary in the log, which did not shrink as much; "
        )
        if np.median(forced) > targets[0] or np.quantile(forced, 0.95) > targets[1]:
            check.reasons.append(
                f"{fell}a prompt model that only grows between boundaries misses one of the two requests by "
                f"{forced[k]:.0%} or more, more than the per-request targets ({targets[0]:.0%} median, "
                f"{targets[1]:.0%} p95) allow in {n} requests"
            )
        else:
            stretch = np.cumsum(crossed)  # which stretch between boundaries each request is in
            median, p95 = (best_quantile(recorded, recon, stretch, q) for q in (0.5, 0.95))
            if median > targets[0] or p95 > targets[1]:
                check.reasons.append(
                    f"{fell}with the log's own drift between boundaries, a prompt that grows as the log's items do "
                    f"(at any one scale, one offset per stretch between boundaries) is off by {median:.0%} or more at "
                    f"the median request and {p95:.0%} at p95, more than the per-request targets "
                    f"({targets[0]:.0%}, {targets[1]:.0%}) allow"
                )


SCALES = np.linspace(0.5, 2.0, 301)  # the log's scales best_quantile tries (steps of 0.005)


def best_quantile(recorded: np.ndarray, recon: np.ndarray, stretch: np.ndarray, q: float) -> float:
    """The smallest ``q`` quantile of per-request relative errors that a model growing as the log's items do can
    reach: ``recon`` (the calibration's prompt of the log) times one scale (``SCALES``) plus one offset per stretch
    between boundaries. The replay that fidelity scores adds what this leaves out (the prefix fitted per model
    segment, the server's uncached tail, what readers note the harness sent), so it can land on either side of
    this figure: SWORDIntel c9a2494a/session-2 replays at 18.7% p95 under o200k where this gives 27%.

    For a scale, the least ``t`` at which the offsets put more requests than the quantile's lower neighbour within
    ``t`` (a request is within ``t`` of offset ``c`` when ``|recorded - scale * recon - c| <= t * recorded``; per
    stretch, the most such requests is the deepest overlap of their intervals), bisected to 0.1%; the least over
    the scales."""
    need = int(np.floor(q * (len(recorded) - 1))) + 1
    groups = [stretch == s for s in np.unique(stretch)]

    def within(excess: np.ndarray, t: float) -> int:
        total = 0
        for mine in groups:
            lo, hi = excess[mine] - t * recorded[mine], excess[mine] + t * recorded[mine]
            ends = np.concatenate([np.stack([lo, np.zeros_like(lo)], 1), np.stack([hi, np.ones_like(hi)], 1)])
            ends = ends[np.lexsort((ends[:, 1], ends[:, 0]))]  # an opening before a closing at one point
            total += int(np.cumsum(np.where(ends[:, 1] == 0, 1, -1)).max())
        return total

    best = 1.0
    for scale in SCALES:
        excess = recorded - scale * recon
        if within(excess, best) < need:  # this scale cannot beat the best so far
            continue
        lo, hi = 0.0, best
        while hi - lo > 1e-3:
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if within(excess, mid) < need else (lo, mid)
        best = lo
    return best


def check_growth(check: RunCheck, steps: np.ndarray, recorded: np.ndarray, recon: np.ndarray) -> None:
    """Add a reason when, between requests with no boundary, the recorded prompt grew by over twice (and 20k
    tokens more than) what the log's items grew: the log holds less than the server was sent."""
    grew_rec = grew_log = 0.0
    for i in range(1, len(steps)):
        if any(steps[i - 1] < b <= steps[i] for b in check.boundaries):
            continue
        grew_rec += max(recorded[i] - recorded[i - 1], 0.0)
        grew_log += max(recon[i] - recon[i - 1], 0.0)
    if grew_rec > GROWTH_RATIO * grew_log + GROWTH_TOKENS:
        check.reasons.append(
            f"content missing from the log: between requests the recorded prompt grew by {grew_rec:,.0f} tokens, "
            f"the log's items by {grew_log:,.0f}; the server was sent content this log does not record"
        )


def check_stalls(
    check: RunCheck, steps: np.ndarray, recorded: np.ndarray, recon: np.ndarray, targets: tuple[float, float]
) -> None:
    """Add a reason when the log holds content the server did not count, enough to miss the per-request
    ``targets`` (median, p95) by that alone: between requests with no boundary, the log's items (``recon``, at
    chars/4) grew by over STALL_TOKENS while the recorded prompt grew, by under STALL_SHARE of that (a prompt that
    fell is check_shrinks'). A prompt model grows as the log does, so from such a request on it runs ahead of the
    recorded prompt by the uncounted content summed so far, D(k); with the best offset c for each stretch between
    boundaries (one fitted prefix), request k is off by |c + D(k)| / recorded(k) at least. Codex Desktop 0.142-0.144
    on a custom provider shows it: each code-mode ``exec`` call whose script applies a patch adds its script (1-5k
    tokens) to the log while the recorded prompt grows by some 45 tokens."""
    n = len(steps)
    deficit, segment, at = np.zeros(n), np.zeros(n, np.int64), 0
    for i in range(1, n):
        crossed = any(steps[i - 1] < b <= steps[i] for b in check.boundaries)
        grew_log, grew_rec = recon[i] - recon[i - 1], recorded[i] - recorded[i - 1]
        segment[i] = segment[i - 1] + crossed
        missing = 0.0
        if not crossed and grew_log > STALL_TOKENS and 0 <= grew_rec < STALL_SHARE * grew_log:
            missing, at = grew_log - grew_rec, at + 1
        deficit[i] = (0.0 if crossed else deficit[i - 1]) + missing
    if not at:
        return
    forced = np.zeros(n)
    for s in np.unique(segment):
        part = segment == s
        forced[part] = _least_forced(deficit[part], np.maximum(recorded[part], 1.0), targets)
    median, p95 = float(np.median(forced)), float(np.quantile(forced, 0.95))
    if median > targets[0] or p95 > targets[1]:
        check.reasons.append(
            f"content the server did not count: at {at} of {n} requests the log's new items grew by over "
            f"{STALL_TOKENS:,} tokens while the recorded prompt grew by under {STALL_SHARE:.0%} of that, with no "
            f"compaction or other boundary between; a prompt model that grows as the log does is off by at least "
            f"{median:.1%} median, {p95:.1%} p95 from that alone, more than the per-request targets "
            f"({targets[0]:.0%} median, {targets[1]:.0%} p95) allow"
        )


def _least_forced(deficit: np.ndarray, recorded: np.ndarray, targets: tuple[float, float]) -> np.ndarray:
    """Per request, |c + deficit| / recorded for the offset c (from -max(deficit) to 0) that keeps the median and
    p95 nearest their ``targets``."""
    best, out = np.inf, np.zeros(len(deficit))
    for c in np.linspace(-float(deficit.max()), 0.0, 201):
        err = np.abs(c + deficit) / recorded
        score = max(float(np.median(err)) / targets[0], float(np.quantile(err, 0.95)) / targets[1])
        if score < best:
            best, out = score, err
    return out


def check_unlogged(check: RunCheck, steps: np.ndarray, metadata: dict) -> None:
    """Add a reason when the reader noted, at MIN_SHRINKS requests or more (and 5% of them), content entering or
    leaving the prompt that the log never holds and whose size varies over the run (notes with ``varies``): one
    fitted offset per note would only hide what the log cannot give."""
    notes = [
        n
        for n in metadata.get("unlogged") or []
        if isinstance(n, dict)
        and n.get("varies")
        and isinstance(n.get("step"), int)
        and 0 < n["step"] <= int(steps[-1])
    ]
    at = {n["step"] for n in notes}
    if len(at) >= max(MIN_SHRINKS, MIN_SHRINK_SHARE * len(steps)):
        kinds = "; ".join(sorted({str(n.get("reason")) for n in notes}))
        check.reasons.append(
            f"content outside the log: at {len(at)} of {len(steps)} requests the log records content entering or "
            f"leaving the prompt that it never holds ({kinds})"
        )


def check_unrecorded(check: RunCheck, metadata: dict) -> None:
    """Add a reason when the reader found compactions the log does not hold (``runs.metadata
    .unrecorded_compactions``, request steps: Cline 4.1 keeps only its latest compaction on disk, and its prompt
    fell by half or more at these with nothing in the log to say what went)."""
    steps = [s for s in metadata.get("unrecorded_compactions") or [] if isinstance(s, int)]
    if steps:
        at = ", ".join(str(s) for s in steps[:5]) + (", ..." if len(steps) > 5 else "")
        check.reasons.append(
            f"compactions outside the log: the recorded prompt fell by half or more at request(s) {at} with no "
            "compaction in the log (the harness keeps only its latest); what they dropped and their summaries "
            "are not in it"
        )


HISTORY_MARGIN = 2.0  # the log's history must exceed the harness's summarising size this many times over


def check_history(check: RunCheck, items: pl.DataFrame, steps: np.ndarray, metadata: dict) -> None:
    """Add a reason when the log's conversation history before a request (its earlier user turns, chars/4) is
    over twice the size above which the harness summarises it (``runs.metadata.history_limit``, tokens): the
    server got a summary the log does not hold."""
    limit = metadata.get("history_limit")
    if not isinstance(limit, int) or limit <= 0 or items.is_empty():
        return
    body = items.filter(~pl.col("kind").is_in(["system", "tool_defs"]))
    step, turn = body["step"].to_numpy(), body["turn"].fill_null(0).to_numpy()
    chars = body["chars"].fill_null(0).to_numpy()
    history = np.zeros(len(steps))
    for k, s in enumerate(steps):
        seen = step <= s
        if seen.any():
            history[k] = chars[seen & (turn < turn[seen].max())].sum() / 4
    k = int(np.argmax(history))
    if history[k] > HISTORY_MARGIN * limit:
        check.reasons.append(
            f"history outside the log: the harness summarises its chat history above {limit:,} tokens at most and "
            f"the log's history before request {k} is ~{history[k]:,.0f} tokens (chars/4); the summary the "
            "server got instead is not in the log"
        )


def check_attachments(
    check: RunCheck,
    items: pl.DataFrame,
    steps: np.ndarray,
    recorded: np.ndarray,
    metadata: dict,
    targets: tuple[float, float],
) -> None:
    """Add a reason when the content a harness sent and did not log (``runs.metadata.unlogged_attachments``:
    Claude Code up to 2.1.96 drops its attachments from the transcript) is alone enough to miss the per-request
    ``targets`` (median, p95 share of the prompt). After the note's ``from_step``, every jump (the recorded
    prompt growing, from the largest one before it, by over JUMP_RATIO times the log's items added since, as
    bytes/4, plus the larger of JUMP_TOKENS and JUMP_SHARE of that prompt, with no boundary between) adds what the
    log does not explain to the prompt until the next boundary; that content's share of each recorded prompt is
    scored against the targets."""
    note = metadata.get("unlogged_attachments")
    if not isinstance(note, dict) or not isinstance(start := note.get("from_step"), int):
        return
    if len(steps) < 2 or items.is_empty():
        return
    step, size = items["step"].to_numpy(), items["bytes"].fill_null(0).to_numpy() / 4
    image = (items["kind"] == "image").to_numpy()
    outside, share, jumps, peak = 0.0, np.zeros(len(steps)), 0, 0
    for i in range(1, len(steps)):
        if any(steps[peak] < b <= steps[i] for b in check.boundaries):
            outside, peak = 0.0, i  # a compaction or another fitted boundary: what entered before is accounted there
            continue
        if steps[i] > start:  # a changed file or new diagnostics show up at a pass after the tool's own
            # growth from the largest prompt since the boundary: a figure logged low (MiniMax's streaming start)
            # and the next one back at its level is no jump
            new = (step > steps[peak]) & (step <= steps[i])
            grew = recorded[i] - recorded[peak] - JUMP_RATIO * size[new].sum()
            if not image[new].any() and grew > max(JUMP_TOKENS, JUMP_SHARE * recorded[peak]):
                outside, jumps = outside + grew, jumps + 1
        peak = i if recorded[i] >= recorded[peak] else peak
        share[i] = outside / recorded[i]
    median, p95 = float(np.median(share)), float(np.quantile(share, 0.95))
    if median > targets[0] or p95 > targets[1]:
        check.reasons.append(
            f"content outside the log: Claude Code {note.get('version')} does not log the attachments it sends "
            f"({note.get('kinds')}); after the first file it watched, the recorded prompt grew at {jumps} request(s) "
            f"by far more than the log's new items hold: content not in the log is {median:.0%} of the prompt at the "
            f"median request, {p95:.0%} at p95"
        )


def check_usage_only(
    check: RunCheck,
    steps: np.ndarray,
    recorded: np.ndarray,
    recon: np.ndarray,
    metadata: dict,
    targets: tuple[float, float],
) -> None:
    """Add a reason when the requests whose usage counts input their prompt did not carry (``unlogged`` notes
    with ``usage_only``: the results of a hosted web search Codex's server ran inside the response) are alone
    enough to miss the per-request ``targets`` (median, p95), at fewer requests than check_unlogged needs. At such
    a request, what the recorded figure holds beyond the last request without one, less what the log's prompt
    (``recon``, model units) grew in between, is input the log never holds; its share of each recorded figure
    (zero elsewhere) is scored against the targets."""
    inflated = usage_only_steps(metadata)
    share, base = np.zeros(len(steps)), None
    for i in range(len(steps)):
        if int(steps[i]) not in inflated:
            base = i
        elif base is not None:
            extra = recorded[i] - recorded[base] - max(recon[i] - recon[base], 0.0)
            share[i] = max(extra, 0.0) / recorded[i]
    if not share.any():
        return
    median, p95 = float(np.median(share)), float(np.quantile(share, 0.95))
    if median > targets[0] or p95 > targets[1]:
        k = int(np.argmax(share))
        check.reasons.append(
            f"usage outside the log: at {int((share > 0).sum())} of {len(steps)} requests the recorded usage "
            f"counts input the prompt did not carry (results of a hosted web search the server ran inside the "
            f"response, never logged): up to {share[k]:.0%} of the recorded figure (request {k}), {p95:.0%} at p95"
        )
