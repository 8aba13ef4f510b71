"""Fit counted prompts to recorded usage per run.

recorded ≈ overhead + scale * reconstructed [+ per_message * messages] [+ offset_k from each boundary step on]

``reconstructed`` is the real-token sum of the items visible at a request (since the latest summary) plus the
template cost. Boundaries are the points where the server's prompt gains a constant the log does not hold:
compactions (Claude Code re-attaches recently read files after its summary without logging them), model switches,
and what readers note in ``runs.metadata.unlogged`` (a parent message missing from the log, ToolSearch
``tool_reference`` results the server expands into tool schemas). Where the harness keeps attachments for one user
turn only (``runs.metadata.turn_attachments``: Claude Code's SDK loop to 2.0.29), a compaction's offset ends at the
first request of the next user turn (:func:`turn_ends`); any compaction's ends at the next compaction, which
summarises it away (:func:`content_ends`). Each boundary costs one fitted offset, and
only what the prompt model can send is fitted (see :func:`fit`): content the log does not hold is never
negative, so a prompt that shrinks with no event to explain it stays an error, as it is in simulation.

Whether earlier reasoning is part of the prompt is chosen per run by the fit: Anthropic-compatible endpoints of
other vendors (MiniMax) drop thinking blocks from the history; Claude keeps them (here mostly empty, signed).

A run is marked *unreconstructable*, with the reason, when a mechanical check on the log names why it cannot give
the server's prompt: content comes and goes outside the log (the recorded prompt shrinks with no compaction or
other boundary in the log), the recorded prompt grows far more than the log's items, content the log never holds
comes and goes often (reader notes marked ``varies``: Aider's files in the chat), the log's history is far
over the size at which the harness summarises it (``runs.metadata.history_limit``), content the harness sent
and did not log is alone enough to miss the target (``runs.metadata.unlogged_attachments``), or the reader found
compactions the log does not hold (``runs.metadata.unrecorded_compactions``: Cline 4.1 keeps only its latest; the
fit then learns only from the requests outside them, :func:`learnable`); or when unexplained drops of the
recorded prompt, or usage that counts input the prompt did not carry (a hosted web search), are alone enough to
miss the target. The checks read the recorded usage and the log's structure (sizes as chars/4), so the flag is
the same under every tokenizer, and fidelity shows it
(replay.tokens.log_checks). What readers record in ``runs.metadata`` is read by replay.tokens.usage_metadata,
and the results are written by replay.store.calibrations.

A recorded prompt the harness printed rounded ("11k") is an interval, not a point: ``runs.metadata
.usage_resolution`` ([step, half width] pairs) widens it, and a request's error is its distance to that interval
(:func:`interval_errors`), in calibrate and fidelity alike.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import duckdb
import numpy as np
import polars as pl
from scipy.optimize import lsq_linear

from replay.run_arrays import request_turns
from replay.store import frame
from replay.store.calibrations import store_files, store_runs
from replay.tokens.counting import count_items
from replay.tokens.log_checks import (
    NOTICES,
    SIGNED_BOUNDARIES,
    RunCheck,
    check_attachments,
    check_growth,
    check_history,
    check_run,
    check_shrinks,
    check_stalls,
    check_unlogged,
    check_unrecorded,
    check_usage_only,
)
from replay.tokens.template import Overhead, template_overhead
from replay.tokens.tokenizer import CountingTokenizer
from replay.tokens.usage_metadata import (
    context_drops,
    exact_sizes,
    metadata_dict,
    resolutions,
    rollback_drops,
    turn_attachments,
    usage_only_steps,
)

MIN_FIT = 3  # requests needed to fit a scale; fewer fit only the overhead (at the prior scale)
# a model's prior scale: the median scale of the runs of that model fitted together with a free scale, within the
# per-request targets, over this many requests at least, from this many runs at least
PRIOR_MIN_REQUESTS, PRIOR_MIN_RUNS = 10, 3
PRIOR_CHUNK = 500  # runs fitted at a time for the store's prior scales: memory bounded by them
MIN_PER_MESSAGE = 20  # requests needed before a per-message constant is fitted as well
TARGET_MEDIAN, TARGET_P95 = 0.03, 0.10
DROP_REASONING_GAIN = 0.75  # earlier reasoning counts as dropped only when that cuts the squared error by 25%


@dataclass(frozen=True)
class Fit:
    overhead: float
    scale: float
    per_message: float = 0.0
    offsets: tuple[tuple[int, float], ...] = ()  # (from step, tokens)
    reasoning_in_prompt: bool = True
    # (from step, to step): an offset that holds only until that step (the harness drops that content there)
    ends: tuple[tuple[int, int], ...] = ()
    unknowns: int = 1  # the terms fitted (prefix, scale, per-message term, boundary offsets)
    scale_free: bool = False  # the scale was fitted (else it is the prior given to ``fit``)

    def predict(
        self, recon: np.ndarray, messages: np.ndarray | None = None, steps: np.ndarray | None = None
    ) -> np.ndarray:
        out = self.overhead + self.scale * np.asarray(recon, dtype=np.float64)
        if messages is not None:
            out = out + self.per_message * np.asarray(messages, dtype=np.float64)
        if steps is not None:
            ends = dict(self.ends)
            for step, tokens in self.offsets:
                out = out + tokens * held(np.asarray(steps), step, ends.get(step))
        return out


def held(steps: np.ndarray, start: int, end: int | None) -> np.ndarray:
    """Per request step, whether content added at ``start`` is in its prompt: from ``start`` on, until ``end``
    (None: to the end)."""
    on = steps >= start
    return on if end is None else on & (steps < end)


@dataclass(frozen=True)
class Prompts:
    """Per request: tokens counted with the tokenizer (fitted with a scale), messages, and ``exact`` tokens the log
    gives in the model's own units (encrypted reasoning sized by the provider: added as they are)."""

    tokens: np.ndarray
    messages: np.ndarray
    exact: np.ndarray

    @property
    def total(self) -> np.ndarray:
        return self.tokens + self.exact


def visible(
    items: pl.DataFrame,
    steps: np.ndarray,
    overhead: Overhead,
    drop_reasoning: bool = False,
    exact: dict[int, int] | None = None,
    drops: list[tuple[int, np.ndarray]] | None = None,
    undone: list[tuple[int, np.ndarray]] | None = None,
) -> Prompts:
    """What each request's prompt holds: items with step <= s, less what the recorded context events ``drops``
    ((from step, item seqs) from ``runs.metadata.context_events``) removed by then; without events, since the
    latest summary. ``undone`` (same form: ``usage_metadata.rollback_drops``) is what the user's rollbacks took out.

    ``exact`` maps item seq to its size in the model's units (Codex's encrypted reasoning, a remote compaction's
    encrypted summary, Claude Code's hidden thinking, an image): it is not scaled, and reasoning is in the prompt
    only within its own turn (the Responses API drops earlier turns' reasoning) unless the sizes keep it
    (``ExactSizes.kept``).
    """
    items = items.sort("seq")
    step = items["step"].to_numpy()
    seq = items["seq"].to_numpy()
    turn = items["turn"].fill_null(0).to_numpy() if "turn" in items.columns else np.zeros(len(items), dtype=np.int64)
    per_message = np.array([overhead.for_role(r) for r in items["role"]], dtype=np.float64)
    exact = exact or {}
    is_exact = np.array([int(q) in exact for q in seq], dtype=bool)
    exact_tokens = np.array([exact.get(int(q), 0) for q in seq], dtype=np.float64)
    cost = np.where(is_exact, 0.0, items["n_tokens"].fill_null(0).to_numpy()) + per_message
    kind = items["kind"]
    summary = (kind == "summary").to_numpy()
    reasoning = (kind == "reasoning").to_numpy()
    keep = ~reasoning | is_exact if drop_reasoning else np.ones(len(items), dtype=bool)
    kept = np.isin(seq, list(getattr(exact, "kept", ())))  # sized reasoning the server keeps after its turn
    own_turn = is_exact & reasoning & ~kept  # other sized reasoning: counted within its own turn only
    tokens = np.empty(len(steps), dtype=np.float64)
    messages = np.empty(len(steps), dtype=np.float64)
    exact_out = np.zeros(len(steps), dtype=np.float64)
    for i, s in enumerate(steps):
        vis = step <= s
        if drops:
            for from_step, gone in drops:
                if from_step <= s:
                    vis &= ~np.isin(seq, gone)
        else:
            sums = vis & summary
            if sums.any():
                vis &= seq >= seq[sums].max()
        for from_step, rolled_back in undone or ():
            if from_step <= s:
                vis &= ~np.isin(seq, rolled_back)
        vis &= keep
        if is_exact.any() and vis.any():
            vis &= ~own_turn | (turn == turn[vis].max())
            exact_out[i] = exact_tokens[vis].sum()
        tokens[i] = cost[vis].sum() + overhead.fixed
        messages[i] = vis.sum()
    return Prompts(tokens, messages, exact_out)


def reconstruct(
    items: pl.DataFrame,
    steps: np.ndarray,
    overhead: Overhead,
    drop_reasoning: bool = False,
    exact: dict[int, int] | None = None,
) -> np.ndarray:
    """Prompt tokens at each request step: items with step <= s since the latest summary, plus template cost."""
    return visible(items, steps, overhead, drop_reasoning, exact).total


def fit(
    recon: np.ndarray,
    recorded: np.ndarray,
    messages: np.ndarray | None = None,
    steps: np.ndarray | None = None,
    boundaries: list[int] | tuple[int, ...] = (),
    fixed: float = 0.0,
    signed: tuple[int, ...] = (),
    ends: dict[int, int] | None = None,
    prior: float = 1.0,
) -> Fit:
    """Least squares recorded ≈ prefix + b * (recon - fixed) [+ c * messages] [+ offsets from boundary steps on],
    within what the prompt model can send (``replay.simulator.prompt``): the prefix (what the harness adds, with
    the template's ``fixed`` part) is >= 0, b > 0, c >= 0, and an offset is content the log does not hold, so
    >= 0, except at the boundaries in ``signed`` (a model switch changes the prefix either way). No free term
    absorbs a jump the log does not explain: calibration scores the prompt that simulation sends.

    ``ends``: boundary step -> the step from which its content is gone again (``content_ends``); the offset holds in
    between. The per-message term needs MIN_PER_MESSAGE requests; a boundary needs a request on each side. With too
    few points for b beside the boundaries, b = ``prior`` (the scale of the model's other runs, :func:`prior_scales`;
    1 without) and one offset per boundary; with too few or constant points and no boundary, b = ``prior`` and the
    prefix is the mean residual (or b scales alone when that residual is < 0).
    Returns ``overhead`` = prefix - b * fixed, so ``predict`` takes ``recon`` with the fixed part in it.
    """
    recon, recorded = np.asarray(recon, np.float64), np.asarray(recorded, np.float64)
    items = recon - fixed
    n = len(recon)
    ind: list[np.ndarray] = []
    starts: list[int] = []
    if steps is not None:
        for b in sorted(set(boundaries)):
            col = held(np.asarray(steps), b, (ends or {}).get(b)).astype(np.float64)
            if 0 < col.sum() < n and not any(np.array_equal(col, c) for c in ind):
                ind.append(col)
                starts.append(int(b))
    few = n < MIN_FIT or np.ptp(recon) <= 0  # no scale to learn
    if few and not ind:
        return _level(items, recorded, fixed, prior)
    use_msgs = messages is not None and n >= MIN_PER_MESSAGE and len(ind) + 3 < n
    # with too few points for a scale beside the boundaries, b = 1 and each boundary's content the log does not hold
    # (a compaction's re-attached files) is its own offset, not a scale that stretches the logged items to cover it
    # (LAF-US/IDAHO-VAULT agent-a588949810ed5e2c5, three requests and two compactions, fitted 8 tokens per o200k
    # token); with as many unknowns as requests that fit is exact, within the same bounds. So at two requests with a
    # compaction between them (5c04fe06: Haiku 4.5, a 166k prefix, compacted before its second request; the
    # prefix alone, with no offset, left both 5% off)
    free = not few and (not ind or len(ind) + 2 < n)
    ind, starts = ind[: n - 1], starts[: n - 1]
    cols = [np.ones(n), *([items] if free else []), *([np.asarray(messages, np.float64)] if use_msgs else []), *ind]
    lower = [
        0.0,
        *([1e-6] if free else []),
        *([0.0] if use_msgs else []),
        *(-np.inf if s in signed else 0.0 for s in starts),
    ]
    if free and len(cols) >= n:
        return _level(items, recorded, fixed, prior)
    target = recorded if free else recorded - prior * items
    scale = max(float(np.abs(recorded).max()), 1.0)  # columns of ones next to counts in the 100k: condition it
    norms = np.array([max(float(np.abs(c).max()), 1e-9) for c in cols])
    res = lsq_linear(
        np.column_stack(cols) / norms,
        target / scale,
        bounds=(np.array(lower) * norms / scale, np.full(len(cols), np.inf)),
        method="bvls",
    )
    coef = res.x * scale / norms
    if not np.all(np.isfinite(coef)):
        return _level(items, recorded, fixed, prior)
    slope = float(coef[1]) if free else prior
    k = 1 + free + use_msgs
    # a boundary whose content came out nothing held no content the log lacks; without it a short run may have the
    # points for a scale again (olivia215215/cabinet-governance agent-a636c7d3, three requests: its sub-agent
    # attachments fitted at 0 took the scale's place, and the run went from 0.21% to 9.53% at p95)
    empty = {s for s, c in zip(starts, coef[k:], strict=True) if c == 0.0 and s not in signed}
    if empty and not free:
        kept = [b for b in boundaries if b not in empty]
        kept_ends = {b: e for b, e in (ends or {}).items() if b in kept}
        return fit(recon, recorded, messages, steps, kept, fixed, signed, kept_ends, prior)
    return Fit(
        float(coef[0] - slope * fixed),
        slope,
        float(coef[k - 1]) if use_msgs else 0.0,
        tuple((s, float(c)) for s, c in zip(starts, coef[k:], strict=True) if c != 0.0),
        ends=tuple((s, e) for s, e in sorted((ends or {}).items()) if s in starts),
        unknowns=len(cols),
        scale_free=free,
    )


def _level(items: np.ndarray, recorded: np.ndarray, fixed: float, prior: float = 1.0) -> Fit:
    """The prior scale and the mean residual as the prefix; a scale alone when the log holds more than the server
    saw."""
    if not len(items):
        return Fit(-prior * fixed, prior)
    prefix = float(np.mean(recorded - prior * items))
    if prefix >= 0 or not (items > 0).any():
        return Fit(max(prefix, 0.0) - prior * fixed, prior)
    b = float(items @ recorded / (items @ items))
    return Fit(-b * fixed, b, scale_free=True)


def _usage(con: duckdb.DuckDBPyConnection, run_ids: list[str] | None = None) -> pl.DataFrame:
    """Requests with a recorded prompt (of ``run_ids`` only, when given)."""
    only = "" if run_ids is None else " AND q.run_id IN (SELECT unnest(?::VARCHAR[]))"
    return frame(
        con,
        f"""
        SELECT q.run_id, q.step, q.prompt_tokens, q.model AS req_model, r.source_path, r.model, r.metadata
        FROM requests q JOIN runs r USING (run_id)
        WHERE q.prompt_tokens IS NOT NULL AND q.prompt_tokens > 0{only} ORDER BY q.run_id, q.step""",
        None if run_ids is None else [list(run_ids)],
    )


def interval_errors(predicted: np.ndarray, recorded: np.ndarray, half: np.ndarray | None = None) -> np.ndarray:
    """|predicted - recorded| / recorded, less the recorded figure's rounding: 0 inside [recorded ± half]."""
    gap = np.abs(np.asarray(predicted, np.float64) - recorded)
    if half is not None:
        gap = np.maximum(gap - half, 0.0)
    return gap / recorded


def calibrate(
    con: duckdb.DuckDBPyConnection, tok: CountingTokenizer, progress: bool = False, store: bool = True
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per-request fitted predictions and per-run fits (stored in `calibrations`); counts tokens first."""
    count_items(con, tok, progress=progress)
    requests, runs, _ = fit_usage(con, tok.tokenizer_id, template_overhead(tok))
    if store and len(runs):
        store_runs(con, runs)
        store_files(con, tok.tokenizer_id, error_by_file(requests))
    return requests, runs


def counted_items(
    con: duckdb.DuckDBPyConnection, tokenizer_id: str | None, where: str = "", params: list | None = None
) -> pl.DataFrame:
    """Items with ``n_tokens``: the tokenizer's counts (null where not counted), or chars/4 when no tokenizer."""
    tokens = "t.n_tokens" if tokenizer_id else "CAST((i.chars + 3) // 4 AS INTEGER)"
    return frame(
        con,
        f"""
        SELECT i.run_id, i.seq, i.step, i.turn, i.role, i.kind, i.chars,
            strlen(i.text) + coalesce(strlen(i.args), 0) AS bytes, {tokens} AS n_tokens FROM items i
        LEFT JOIN token_counts t ON t.content_hash = i.content_hash AND t.tokenizer_id = ?
        {where}""",
        [tokenizer_id or "", *(params or [])],
    )


@dataclass(frozen=True)
class _RunFit:
    """One run's fit and what it was fitted from (:func:`fit_usage`)."""

    steps: np.ndarray
    recorded: np.ndarray
    metadata: dict
    exact: dict[int, int]
    exact_dropped: dict[int, int]
    drops: list[tuple[int, np.ndarray]]
    undone: list[tuple[int, np.ndarray]]
    check: RunCheck
    ends: dict[int, int]
    fit: Fit
    prompts: Prompts
    prior: float | None  # the model's prior scale it was fitted with (None: none)

    @property
    def wants_prior(self) -> bool:
        """Its scale was not fitted, or a boundary was left out for want of requests beside one."""
        return not self.fit.scale_free or self.check.crowded_out

    def within_targets(self) -> bool:
        """Fitted with a free scale over PRIOR_MIN_REQUESTS requests at least, within the per-request targets."""
        if not self.fit.scale_free or len(self.steps) < PRIOR_MIN_REQUESTS:
            return False
        pred = self.fit.predict(self.prompts.tokens, self.prompts.messages, self.steps) + self.prompts.exact
        err = interval_errors(pred, self.recorded)
        return float(np.median(err)) <= TARGET_MEDIAN and float(np.quantile(err, 0.95)) <= TARGET_P95


def _fit_run(req: pl.DataFrame, run_items: pl.DataFrame, overhead: Overhead, prior: float | None = None) -> _RunFit:
    """Fit one run's recorded prompts (``req``) from its items; ``prior``: its model's prior scale, if known."""
    steps, recorded = req["step"].to_numpy(), req["prompt_tokens"].to_numpy().astype(np.float64)
    metadata = metadata_dict(req["metadata"][0])
    model = req["model"][0]
    exact = exact_sizes(metadata, model=model)
    exact_dropped = exact_sizes(metadata, reasoning_dropped=True, model=model)
    check = check_run(run_items, steps, req["req_model"].to_list(), metadata, scale_known=prior is not None)
    drops, undone = context_drops(metadata), rollback_drops(metadata)
    ends = content_ends(run_items, steps, check.boundaries, metadata)
    f, prompts = _best_fit(
        run_items,
        steps,
        recorded,
        overhead,
        check.boundaries,
        (exact, exact_dropped),
        drops,
        undone,
        learnable(steps, metadata),
        ends,
        1.0 if prior is None else prior,
    )
    return _RunFit(steps, recorded, metadata, exact, exact_dropped, drops, undone, check, ends, f, prompts, prior)


def _model_scales(first: dict[str, _RunFit], reqs: dict[str, pl.DataFrame]) -> dict[str, list[float]]:
    """Model -> the scales of its runs in ``first`` fitted with a free scale within the targets (``within_targets``)."""
    out: dict[str, list[float]] = {}
    for run_id, rf in first.items():
        model = reqs[run_id]["model"][0]
        if model and rf.within_targets():
            out.setdefault(model, []).append(rf.fit.scale)
    return out


def _priors(scales: dict[str, list[float]]) -> dict[str, float]:
    return {m: float(np.median(v)) for m, v in scales.items() if len(v) >= PRIOR_MIN_RUNS}


def prior_scales(
    con: duckdb.DuckDBPyConnection,
    tokenizer_id: str | None,
    overhead: Overhead,
    models: set[str] | None = None,
    fitted: tuple[dict[str, _RunFit], dict[str, pl.DataFrame]] | None = None,
) -> dict[str, float]:
    """Model (of ``models``, or all) -> its prior scale: the median scale of the store's runs of that model fitted
    within the per-request targets with a free scale (PRIOR_MIN_RUNS of PRIOR_MIN_REQUESTS requests at least). It
    is what a tokenizer's count becomes in that model's units on this store's logs, for the runs too short to fit
    a scale of their own (a Claude Code sub-agent of two requests: counted with o200k, Claude's units are ~1.2 of
    it, so scale 1 put the first request 3-13% over and the second under). The same whichever runs a caller fits:
    a shard of a sweep, ``fidelity --runs`` and the whole store give a run the same prompt model. ``fitted``: runs
    the caller has fitted already (first fits, usage rows), not fitted again."""
    only = "" if models is None else " AND r.model IN (SELECT unnest(?::VARCHAR[]))"
    ids = [
        rid
        for (rid,) in con.execute(
            f"""SELECT q.run_id FROM requests q JOIN runs r USING (run_id)
            WHERE q.prompt_tokens IS NOT NULL AND q.prompt_tokens > 0{only}
            GROUP BY q.run_id HAVING count(*) >= ? ORDER BY q.run_id""",
            [*([sorted(models)] if models is not None else []), PRIOR_MIN_REQUESTS],
        ).fetchall()
    ]
    scales: dict[str, list[float]] = {}
    if fitted is not None:
        first, reqs = fitted
        ids = [rid for rid in ids if rid not in first]
        done = {rid: rf for rid, rf in first.items() if models is None or reqs[rid]["model"][0] in models}
        scales = _model_scales(done, reqs)
    for i in range(0, len(ids), PRIOR_CHUNK):
        reqs, _, first = _first_fits(con, tokenizer_id, overhead, ids[i : i + PRIOR_CHUNK])
        for model, v in _model_scales(first, reqs).items():
            scales.setdefault(model, []).extend(v)
    return _priors(scales)


def _first_fits(
    con: duckdb.DuckDBPyConnection, tokenizer_id: str | None, overhead: Overhead, run_ids: list[str] | None
) -> tuple[dict[str, pl.DataFrame], dict[tuple, pl.DataFrame], dict[str, _RunFit]]:
    """The usage rows and items of every run with recorded prompt usage (or those in ``run_ids``), and each one's
    fit without a prior."""
    usage = _usage(con, run_ids)
    where = "WHERE i.run_id IN (SELECT DISTINCT run_id FROM requests WHERE prompt_tokens > 0)"
    if run_ids is not None:  # only these runs' requests and items are read: memory bounded by them
        where += " AND i.run_id IN (SELECT unnest(?::VARCHAR[]))"
    items = counted_items(con, tokenizer_id, where, None if run_ids is None else [list(run_ids)])
    by_run = items.partition_by("run_id", as_dict=True) if len(items) else {}
    reqs = {run_id: req for (run_id,), req in usage.partition_by("run_id", as_dict=True).items() if (run_id,) in by_run}
    return reqs, by_run, {run_id: _fit_run(req, by_run[(run_id,)], overhead) for run_id, req in reqs.items()}


def fit_usage(
    con: duckdb.DuckDBPyConnection,
    tokenizer_id: str | None,
    overhead: Overhead,
    run_ids: list[str] | None = None,
    priors: dict[str, float] | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame, dict[str, tuple[Fit, dict[int, str]]]]:
    """Fit every run with recorded prompt usage (or those in ``run_ids``) from counts already in the store. A run
    too short for a scale of its own takes its model's prior (``priors``, or :func:`prior_scales` of the store).

    Returns per-request rows, per-run rows and, by run id, the fit and what each boundary step is."""
    reqs, by_run, first = _first_fits(con, tokenizer_id, overhead, run_ids)
    if priors is None and run_ids is None:  # every run is here: the store's priors are these runs'
        priors = _priors(_model_scales(first, reqs))
    elif priors is None:
        needed = {reqs[r]["model"][0] for r, rf in first.items() if rf.wants_prior}
        wanted = {m for m in needed if m}
        priors = prior_scales(con, tokenizer_id, overhead, wanted, (first, reqs)) if wanted else {}
    per_request, per_run, fits = [], [], {}
    for run_id, req in reqs.items():
        run_items = by_run[(run_id,)]
        rf = first[run_id]
        prior = priors.get(req["model"][0])
        if prior is not None and rf.wants_prior:
            rf = _fit_run(req, run_items, overhead, prior)
        steps, recorded, metadata, check, f, prompts = rf.steps, rf.recorded, rf.metadata, rf.check, rf.fit, rf.prompts
        exact, exact_dropped, drops, undone, ends = rf.exact, rf.exact_dropped, rf.drops, rf.undone, rf.ends
        check_shrinks(
            check, steps, recorded, f.scale * prompts.tokens + prompts.exact, metadata, (TARGET_MEDIAN, TARGET_P95)
        )
        check_growth(check, steps, recorded, prompts.total)
        check_unlogged(check, steps, metadata)
        if not check.reasons:  # at enough requests check_unlogged names them already
            check_usage_only(
                check, steps, recorded, f.scale * prompts.tokens + prompts.exact, metadata, (TARGET_MEDIAN, TARGET_P95)
            )
        check_history(check, run_items, steps, metadata)
        check_unrecorded(check, metadata)
        check_attachments(check, run_items, steps, recorded, metadata, (TARGET_MEDIAN, TARGET_P95))
        if not check.reasons:  # the log's sizes as chars/4, whatever the tokenizer
            as_chars = run_items.with_columns(((pl.col("chars").fill_null(0) + 3) // 4).alias("n_tokens"))
            sized = exact if f.reasoning_in_prompt else exact_dropped
            log4 = visible(as_chars, steps, overhead, not f.reasoning_in_prompt, sized, drops, undone).total
            check_stalls(check, steps, recorded, log4, (TARGET_MEDIAN, TARGET_P95))
        half = resolutions(metadata, steps)
        oos = walk_forward(
            visible(
                run_items,
                steps,
                overhead,
                not f.reasoning_in_prompt,
                exact if f.reasoning_in_prompt else exact_dropped,
                drops,
                undone,
            ),
            recorded,
            steps,
            check.boundaries,
            overhead.fixed,
            half,
            ends,
            1.0 if rf.prior is None else rf.prior,
        )
        fits[run_id] = (f, check.boundaries)
        recon = prompts.total
        pred = f.predict(prompts.tokens, prompts.messages, steps) + prompts.exact
        err, raw = interval_errors(pred, recorded, half), interval_errors(recon, recorded, half)
        chars4 = _chars4(run_items, steps)
        reason = "; ".join(check.reasons)  # a property of the log: the same whatever the tokenizer or the fit
        per_request.append(
            pl.DataFrame(
                {
                    "run_id": run_id,
                    "source_path": req["source_path"],
                    "step": steps,
                    "recorded": recorded,
                    "reconstructed": recon,
                    "predicted": pred,
                    "err": err,
                    "raw_err": raw,
                    "chars4": chars4,
                    "oos_err": oos,
                    "unreconstructable": reason,
                }
            )
        )
        per_run.append(
            {
                "tokenizer_id": tokenizer_id or "estimate:chars/4",
                "run_id": run_id,
                "source_path": req["source_path"][0],
                "n_requests": len(steps),
                "overhead": f.overhead,
                "scale": f.scale,
                "per_message_tokens": overhead.for_role("user"),
                "median_err": float(np.median(err)),
                "p95_err": float(np.quantile(err, 0.95)),
                "raw_median_err": float(np.median(raw)),
                "fitted_per_message": f.per_message,
                "reasoning_in_prompt": f.reasoning_in_prompt,
                "boundaries": ", ".join(f"{s}:{check.boundaries.get(s, '?')}" for s, _ in f.offsets),
                "unreconstructable": reason,
            }
        )
    requests = pl.concat(per_request) if per_request else pl.DataFrame()
    return requests, pl.DataFrame(per_run), fits


def fit_totals(
    items: pl.DataFrame,
    steps: np.ndarray,
    prefix: int,
    total: int,
    overhead: Overhead,
    metadata: dict,
    model: str | None,
) -> float:
    """The scale of a run whose log records no prompt per request but their sum (``total``: session totals,
    replay.metrics.session_totals) beside the harness prefix it sizes (``prefix`` tokens, sent with every request):
    total = scale * sum over requests of (prefix + what it holds), as :func:`fit_usage` reconstructs each request.
    One figure fits one parameter: no overhead, offset or per-message term, and no check on the fit."""
    exact = exact_sizes(metadata, model=model)
    held = visible(items, steps, overhead, False, exact, context_drops(metadata), rollback_drops(metadata))
    counted = float(len(steps) * prefix + held.tokens.sum())
    return (total - float(held.exact.sum())) / counted if counted > 0 else 1.0


def walk_forward(
    prompts: Prompts,
    recorded: np.ndarray,
    steps: np.ndarray,
    boundaries: dict[int, str],
    fixed: float = 0.0,
    half: np.ndarray | None = None,
    ends: dict[int, int] | None = None,
    prior: float = 1.0,
) -> np.ndarray:
    """|predicted - recorded| / recorded per request (less the recorded figure's rounding ``half``), each
    predicted by a fit on the earlier requests only (overhead and scale, plus the boundaries seen so far; the
    ``prior`` scale where they are too few for one): calibration scored out of sample. NaN for the first two
    requests, which have too little before them."""
    target = recorded - prompts.exact
    out = np.full(len(steps), np.nan)
    for k in range(2, len(steps)):
        seen = [b for b in boundaries if b <= steps[k - 1]]
        f = fit(prompts.tokens[:k], target[:k], None, steps[:k], seen, fixed, signed(boundaries), ends, prior)
        pred = f.predict(prompts.tokens[k : k + 1], None, steps[k : k + 1])[0] + prompts.exact[k]
        out[k] = interval_errors(np.array([pred]), recorded[k : k + 1], None if half is None else half[k : k + 1])[0]
    return out


def out_of_sample_errors(requests: pl.DataFrame) -> dict[str, np.ndarray]:
    """Per run, the out-of-sample errors of :func:`walk_forward` (requests from the 3rd on), from the per-request
    rows of :func:`fit_usage`."""
    if requests.is_empty():
        return {}
    return {
        rid: df["oos_err"].drop_nans().to_numpy()
        for (rid,), df in requests.partition_by("run_id", as_dict=True).items()
    }


def signed(boundaries: dict[int, str]) -> tuple[int, ...]:
    """The boundary steps whose offset may be negative (SIGNED_BOUNDARIES)."""
    return tuple(s for s, why in boundaries.items() if why in SIGNED_BOUNDARIES)


def _best_fit(
    items: pl.DataFrame,
    steps: np.ndarray,
    recorded: np.ndarray,
    overhead: Overhead,
    boundaries: dict[int, str],
    exact: tuple[dict[int, int], dict[int, int]] = ({}, {}),
    drops: list[tuple[int, np.ndarray]] | None = None,
    undone: list[tuple[int, np.ndarray]] | None = None,
    learn: np.ndarray | None = None,
    ends: dict[int, int] | None = None,
    prior: float = 1.0,
) -> tuple[Fit, Prompts]:
    """Fit with earlier reasoning in the prompt and, when the run has counted reasoning, without: the better wins.
    ``exact``: the items the log sizes (usage_metadata.exact_sizes) with reasoning kept, and with it dropped.
    Exact tokens are taken off the recorded figure before the fit and added back to the prediction. ``learn``: the
    requests the fit learns from (all when None); the prompts are every request's. ``prior``: the scale where the
    run has too few requests for its own (``fit``)."""
    kept_exact, dropped_exact = exact

    def attempt(drop: bool) -> tuple[float, Fit, Prompts]:
        p = visible(items, steps, overhead, drop, dropped_exact if drop else kept_exact, drops, undone)
        target = recorded - p.exact
        m = np.ones(len(steps), dtype=bool) if learn is None else learn
        f = fit(
            p.tokens[m],
            target[m],
            p.messages[m],
            steps[m],
            sorted(boundaries),
            overhead.fixed,
            signed(boundaries),
            ends,
            prior,
        )
        return float(np.sum((f.predict(p.tokens[m], p.messages[m], steps[m]) - target[m]) ** 2)), f, p

    sse, f, p = attempt(False)
    counted = items.filter(pl.col("kind") == "reasoning")
    if dropped_exact:  # reasoning the harness resends stays either way
        counted = counted.filter(~pl.col("seq").is_in(list(dropped_exact)))
    sized = sum(v for q, v in kept_exact.items() if q not in dropped_exact)  # sized reasoning the drop takes out
    if counted["n_tokens"].fill_null(0).sum() > 0 or sized > 0:
        sse2, f2, p2 = attempt(True)
        if sse2 < DROP_REASONING_GAIN * sse:  # dropping must clearly explain the usage better, not fit noise
            return replace(f2, reasoning_in_prompt=False), p2
    return f, p


def content_ends(items: pl.DataFrame, steps: np.ndarray, boundaries: dict[int, str], metadata: dict) -> dict[int, int]:
    """Compaction boundary step -> the step from which what the harness sent after that summary and the log does
    not hold is gone: the next compaction's (the harness summarises the whole conversation again, the files it
    re-attached the last time included: Claude Code's ``compactConversation`` replaces every message), or, where
    the harness keeps attachments for their user turn only, the first request of a later user turn
    (``turn_ends``), whichever comes first. A notice in the messages (``NOTICES``) ends at the next compaction too."""
    out = turn_ends(items, steps, boundaries, metadata)
    compactions = sorted(b for b, why in boundaries.items() if why == "compaction")
    for b, after in zip(compactions, compactions[1:], strict=False):
        out[b] = min(out.get(b, after), after)
    for b, why in boundaries.items():  # a notice in the messages is summarised away with them
        later = [c for c in compactions if c > b]
        if why in NOTICES and later:
            out[b] = later[0]
    return out


def turn_ends(items: pl.DataFrame, steps: np.ndarray, boundaries: dict[int, str], metadata: dict) -> dict[int, int]:
    """Compaction boundary step -> the first request step of a later user turn, for a run whose harness keeps
    attachments for their own user turn only (``runs.metadata.turn_attachments``: Claude Code's SDK loop up to
    2.0.29, replay.readers.claude_code_unlogged): what it re-attached after its summary, which the log does not
    hold, is gone there. Empty for any other run."""
    if not turn_attachments(metadata) or items.is_empty():
        return {}
    req_turn = request_turns(items["step"].to_numpy(), items["turn"].fill_null(0).to_numpy(), steps)
    out = {}
    for b, why in boundaries.items():
        if why != "compaction":
            continue
        at = np.flatnonzero(steps >= b)
        if not len(at):
            continue
        later = np.flatnonzero((steps > b) & (req_turn > req_turn[at[0]]))
        if len(later):
            out[b] = int(steps[later[0]])
    return out


def learnable(steps: np.ndarray, metadata: dict) -> np.ndarray | None:
    """The requests a fit may learn from: None (all) but where the reader found compactions the log does not hold
    (``runs.metadata.unrecorded_compactions``): then not those from the first of them up to the next compaction
    the log holds, whose prompts the log cannot give (Cline 4.1 keeps only its latest compaction); nor requests
    whose usage counts input their prompt did not carry (``unlogged`` notes with ``usage_only``: the results of a
    hosted web search Codex's server ran inside the response)."""
    keep = np.ones(len(steps), dtype=bool)
    lost = [s for s in metadata.get("unrecorded_compactions") or [] if isinstance(s, int)]
    if lost:
        first = min(lost)
        held = [
            ev["step"]
            for ev in metadata.get("context_events") or []
            if isinstance(ev, dict) and isinstance(ev.get("step"), int) and ev["step"] > first
        ]
        until = min(held) if held else int(steps.max()) + 1
        keep &= (steps < first) | (steps >= until)
    keep &= ~np.isin(steps, list(usage_only_steps(metadata)))
    return keep if not keep.all() and keep.sum() >= MIN_FIT else None


def _chars4(items: pl.DataFrame, steps: np.ndarray) -> np.ndarray:
    """The chars/4 estimate of each prompt (no summary handling, no overhead): what a naive policy would see."""
    items = items.sort("seq")
    step, chars = items["step"].to_numpy(), items["chars"].fill_null(0).to_numpy()
    return np.array([chars[step <= s].sum() / 4 for s in steps])


def error_by_file(requests: pl.DataFrame) -> pl.DataFrame:
    """Per file: runs, requests, median and p95 of |err|/recorded after the fit (in sample), within target, and
    why a file cannot be reconstructed (its runs' reasons) when it cannot; with ``oos_err`` rows, the same scored
    out of sample (``oos_*``; none for runs of fewer than 3 requests).

    ``file`` is the file name, or the whole source path when several ingested files share that name (it keys
    ``calibration_files``)."""
    if requests.is_empty():
        return pl.DataFrame()
    if "unreconstructable" not in requests.columns:
        requests = requests.with_columns(pl.lit("").alias("unreconstructable"))
    return (
        requests.group_by("source_path")
        .agg(
            pl.col("run_id").n_unique().alias("runs"),
            pl.len().alias("requests"),
            pl.col("err").median().alias("median_err"),
            pl.col("err").quantile(0.95, interpolation="linear").alias("p95_err"),
            pl.col("raw_err").median().alias("raw_median_err"),
            *(
                [
                    pl.col("oos_err").drop_nans().median().alias("oos_median_err"),
                    pl.col("oos_err").drop_nans().quantile(0.95, interpolation="linear").alias("oos_p95_err"),
                    pl.col("oos_err").drop_nans().len().alias("oos_requests"),
                ]
                if "oos_err" in requests.columns
                else []
            ),
            (pl.col("chars4") / pl.col("recorded")).median().alias("chars4_over_recorded"),
            pl.col("unreconstructable")
            .filter(pl.col("unreconstructable") != "")
            .unique()
            .sort()
            .str.join("; ")
            .alias("unreconstructable"),
        )
        .with_columns(
            pl.col("source_path").str.split("/").list.last().alias("name"),
            ((pl.col("median_err") <= TARGET_MEDIAN) & (pl.col("p95_err") <= TARGET_P95)).alias("within_target"),
        )
        .with_columns(
            pl.when(pl.col("name").is_duplicated()).then(pl.col("source_path")).otherwise(pl.col("name")).alias("file")
        )
        .select(
            "file",
            "runs",
            "requests",
            "median_err",
            "p95_err",
            "within_target",
            "unreconstructable",
            "raw_median_err",
            "chars4_over_recorded",
            *(["oos_median_err", "oos_p95_err", "oos_requests"] if "oos_err" in requests.columns else []),
        )
        .sort("file")
    )
