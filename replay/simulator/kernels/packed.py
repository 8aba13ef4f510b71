"""Many runs packed into flat arrays with offsets: what the compiled loop reads, built once per sweep (or once for
one run's per-request views)."""

from __future__ import annotations

from collections import namedtuple
from dataclasses import dataclass, fields
from functools import cached_property

import numpy as np

from replay.metrics.repeat_reads import RESOURCE_COLUMNS, read_events
from replay.metrics.runs import recorded_totals
from replay.run_arrays import CLEARING_EVENTS, RunArrays
from replay.simulator.idle import request_times
from replay.simulator.request_costs import RequestPlan, plan
from replay.simulator.run_output import recorded_output
from replay.simulator.run_start import split_tail

# The compiled loop's view of a PackedRuns: its array fields, in this order (``PackedRuns.arrays``).
Packed = namedtuple(
    "Packed",
    (
        "item_off",
        "req_off",
        "rr_off",
        "ev_off",
        "evo_off",
        "mask_off",
        "kind",
        "tokens",
        "chars",
        "access",
        "pair",
        "gone_at",
        "step",
        "turn",
        "is_error",
        "lines",
        "resource",
        "tool",
        "recorded_only",
        "req_end",
        "req_ts",
        "first_body",
        "estimated",
        "rr_prev",
        "rr_decide",
        "rr_changed",
        "rr_tokens",
        "ev_step",
        "ev_summary",
        "ev_drop_off",
        "ev_drop",
        "mask_step",
        "mask_pos",
        "mask_chars",
        "usage_offset",
        "harness_est",
        "text_tools",
        "dup_key",
        "dup_chars",
        "media_chars",
        "warm",
        "warm_kept",
        "assistant_bp",
        "tail",
        "req_model",
        "cache_cap",
        "server_read",
        "foreign_read",
        "tail_extra",
        "req_sent",
        "req_done",
        "condenser",
        "framing",
        "harness_keep",
        "req_window",
        "req_limit",
        "req_trigger",
        "req_resumed",
        "req_ttl",
        "req_hit",
        "edit_chars",
        "part_read",
        "file_chars",
        "file_lines",
    ),
)


@dataclass(frozen=True, eq=False)
class PackedRuns:
    """Every run's arrays end to end; ``*_off[r]:*_off[r+1]`` is run r. Positions stay run-local."""

    run_ids: tuple[str, ...]
    item_off: np.ndarray
    req_off: np.ndarray
    rr_off: np.ndarray  # repeat reads
    ev_off: np.ndarray  # the log's own context events
    evo_off: np.ndarray  # per run, its events' drop offsets (n_events + 1 of them)
    mask_off: np.ndarray  # the log's per-request placeholders
    kind: np.ndarray
    tokens: np.ndarray
    chars: np.ndarray
    access: np.ndarray
    pair: np.ndarray  # run-local index of the partner, -1 none
    gone_at: np.ndarray  # per item: the request from which the server drops it, -1 never
    step: np.ndarray
    turn: np.ndarray
    is_error: np.ndarray
    lines: np.ndarray
    resource: np.ndarray
    tool: np.ndarray  # index into ``tool_names`` (shared by all runs), -1 none
    recorded_only: np.ndarray
    req_end: np.ndarray
    req_ts: np.ndarray  # NaN unknown
    first_body: np.ndarray  # per run: first position after the system/tool_defs prefix
    estimated: np.ndarray  # per run: token counts are chars/4 estimates
    rr_prev: np.ndarray  # run-local position of the earlier read's result
    rr_decide: np.ndarray  # request (run-local) whose view decided the repeat read; sorted per run
    rr_changed: np.ndarray
    rr_tokens: np.ndarray
    ev_step: np.ndarray  # request at which each recorded event takes effect
    ev_summary: np.ndarray  # per event: it made a summary (not one of arrays.CLEARING_EVENTS)
    ev_drop_off: np.ndarray  # absolute offsets into ev_drop, per run n_events + 1 of them
    ev_drop: np.ndarray  # run-local positions each recorded event drops, ascending per event
    mask_step: np.ndarray
    mask_pos: np.ndarray
    mask_chars: np.ndarray
    usage_offset: np.ndarray  # per request (replay.run_arrays.RunArrays.usage_offset)
    harness_est: np.ndarray  # per item (replay.run_arrays.RunArrays.harness_est)
    text_tools: np.ndarray  # per run: tool calls are text, not API pairs (replay.run_arrays.RunArrays.text_tools)
    dup_key: np.ndarray  # per item (replay.run_arrays.RunArrays.dup_key)
    dup_chars: np.ndarray  # per item (replay.run_arrays.RunArrays.dup_chars)
    media_chars: np.ndarray  # per item (replay.run_arrays.RunArrays.media_chars)
    warm: np.ndarray  # per run: tokens cached before its first request (replay.simulator.run_start)
    warm_kept: np.ndarray  # per run: tokens of those other sessions keep cached through its idle gaps (RunArrays)
    assistant_bp: np.ndarray  # per run: a breakpoint ends the last assistant message too (RunArrays.assistant_bp)
    tail: np.ndarray  # per run: tokens sent after the last breakpoint, already out of its prefix item's ``tokens``
    req_model: np.ndarray  # per request: run-local code of the model that served it (``model_codes``)
    cache_cap: np.ndarray  # per request: the most the server's cache gives it, -1 no limit (RunArrays.cache_cap)
    server_read: np.ndarray  # per request: what the log shows the server gave, -1 none (RunArrays.server_read)
    foreign_read: np.ndarray  # per request: the log's prompt another session cached, -1 none (RunArrays.foreign_read)
    tail_extra: np.ndarray  # per request: tokens sent after its last breakpoint beyond the tail (RunArrays.tail_extra)
    req_sent: np.ndarray  # per request: when it was sent (replay.simulator.idle), NaN unknown
    req_done: np.ndarray  # per request: when its response ended, NaN unknown
    condenser: np.ndarray  # per run: the harness's summariser prompt (RunArrays.condenser)
    framing: np.ndarray  # per item: tokens beyond its text (RunArrays.framing)
    harness_keep: np.ndarray  # per item (replay.run_arrays.RunArrays.harness_keep)
    req_window: np.ndarray  # per request: its model's window, 0 the budget's (RunArrays.req_window)
    req_limit: np.ndarray  # per request: its model's preset's limit, 0 the policy's (RunArrays.req_limit)
    req_trigger: np.ndarray  # per request: that preset's trigger, -1 the policy's (RunArrays.req_trigger)
    req_resumed: np.ndarray  # per request: a resumed process's first (RunArrays.req_resumed)
    req_ttl: np.ndarray  # per request: its provider's cache TTL, 0 the run's (RunArrays.req_ttl)
    req_hit: np.ndarray  # per request: its model's cache hit rate, -1 the run's (request_hit_rates)
    edit_chars: np.ndarray  # per item (replay.run_arrays.RunArrays.edit_chars)
    part_read: np.ndarray  # per item (replay.run_arrays.RunArrays.part_read)
    file_chars: np.ndarray  # per item (replay.run_arrays.RunArrays.file_chars)
    file_lines: np.ndarray  # per item (replay.run_arrays.RunArrays.file_lines)
    static: dict[str, np.ndarray]  # per run: metrics that do not depend on the policy, as columns
    models: tuple[str | None, ...]
    tool_names: tuple[str, ...] = ()
    cache_ttls: tuple[float | None, ...] = ()  # per run: the TTL its log's cache writes used (None unrecorded)
    cache_fits: tuple = ()  # per run: its calibrated cache model (replay.simulator.cache_fit.CacheFit), or None
    request_plan: RequestPlan | None = None  # per request: what pricing needs (replay.simulator.request_costs)

    @property
    def n_runs(self) -> int:
        return len(self.run_ids)

    @property
    def n_requests(self) -> int:
        return int(self.req_off[-1])

    @cached_property
    def arrays(self) -> Packed:
        """The array fields as the compiled loop takes them (built once: numba unboxes it on every call)."""
        return Packed(*(getattr(self, name) for name in Packed._fields))

    @cached_property
    def no_flags(self) -> np.ndarray:
        return np.zeros(len(self.tool), np.int8)

    @cached_property
    def billing_keys(self) -> tuple[list[tuple], np.ndarray]:
        """The distinct (model, recorded cache TTL, calibrated cache model) of the runs, and each run's index into
        them."""
        ttls = self.cache_ttls or (None,) * self.n_runs
        fits = self.cache_fits or (None,) * self.n_runs
        keys: dict[tuple, int] = {}
        of_run = np.array([keys.setdefault(k, len(keys)) for k in zip(self.models, ttls, fits, strict=True)], np.int64)
        return list(keys), of_run

    def tool_flags(self, by_name: np.ndarray) -> np.ndarray:
        """Per item, the flag of its tool from ``by_name`` (one per ``tool_names``; 0 for items without a tool)."""
        if not len(by_name) or not by_name.any():
            return self.no_flags
        return np.where(self.tool >= 0, by_name[np.maximum(self.tool, 0)], 0).astype(np.int8)


STATIC_TYPES = {
    "recorded_prompt": np.int64,
    "recorded_cache_read": np.int64,
    "recorded_cache_share": np.float64,
    "max_reads_one_resource": np.int64,
    "output_tokens": np.int64,
    "output_source": object,
    "bill_gap": object,
    "token_source": object,
    **dict.fromkeys(RESOURCE_COLUMNS, np.int64),
}


def _static_columns(rows: list[dict]) -> dict[str, np.ndarray]:
    """Row dicts to typed columns (None -> NaN in float columns, stored as null)."""
    return {
        name: np.array([np.nan if r[name] is None else r[name] for r in rows], dtype=typ)
        for name, typ in STATIC_TYPES.items()
    }


def static_row(run: RunArrays, max_reads: int) -> dict:
    """A run's row columns that do not depend on the policy: recorded usage and output, the most reads of one
    resource, where its token counts came from."""
    return {
        **recorded_totals(run.rec_prompt, run.rec_cache_read, run.session_totals),
        "max_reads_one_resource": max_reads,
        **recorded_output(run),
        "token_source": run.token_source,
    }


def _cat(parts: list[np.ndarray], dtype) -> np.ndarray:
    return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)


def _offsets(sizes: list[int]) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


def model_codes(run: RunArrays) -> np.ndarray:
    """Per request, a run-local code of the model that served it (the run's model where the log names none): a
    change of code is a model switch, which the server's cache does not survive."""
    names = run.req_model if len(run.req_model) == run.n_requests else (None,) * run.n_requests
    seen: dict[str | None, int] = {}
    return np.array([seen.setdefault(m or run.model, len(seen)) for m in names], dtype=np.int64)


def request_hit_rates(run: RunArrays) -> np.ndarray:
    """Per request, the hit rate its model's cache was fitted to where the run's cache fit has one for that model
    (replay.simulator.cache_fit.CacheFit.by_model; a request naming no model is the run's model's); -1 (the run's
    rate) elsewhere."""
    if run.cache_fit is None or not run.cache_fit.by_model:
        return np.full(run.n_requests, -1.0)
    names = run.req_model if len(run.req_model) == run.n_requests else (None,) * run.n_requests
    return run.cache_fit.request_rates(tuple(m or run.model for m in names))


def pack(runs: list[RunArrays] | tuple[RunArrays, ...]) -> PackedRuns:
    """Concatenate ``runs``; positions inside each run stay run-local; each run's tail out of its prefix item
    (``replay.simulator.run_start.split_tail``)."""
    runs = [split_tail(r) for r in runs]
    reads = [read_events(r) for r in runs]
    orders = [np.argsort(e.decide, kind="stable") for e in reads]
    recorded = [r.events for r in runs]
    names: dict[str, int] = {}
    tools = [
        np.where(
            r.tool >= 0,
            np.array([names.setdefault(t, len(names)) for t in r.tool_names] + [-1], dtype=np.int64)[r.tool],
            -1,
        )
        for r in runs
    ]
    drop_sizes = [np.array([len(d) for d in ev.drop], dtype=np.int64) for ev in recorded]
    drop_base = np.cumsum([0] + [int(s.sum()) for s in drop_sizes])
    drop_off = [base + _offsets(list(s)) for base, s in zip(drop_base, drop_sizes, strict=False)]
    arrays = {
        "item_off": _offsets([r.n_items for r in runs]),
        "req_off": _offsets([r.n_requests for r in runs]),
        "rr_off": _offsets([len(e.call) for e in reads]),
        "ev_off": _offsets([len(ev.step) for ev in recorded]),
        "evo_off": _offsets([len(ev.step) + 1 for ev in recorded]),
        "mask_off": _offsets([len(ev.mask_pos) for ev in recorded]),
        "kind": _cat([r.kind for r in runs], np.int8),
        "tokens": _cat([r.tokens for r in runs], np.int64),
        "chars": _cat([r.chars for r in runs], np.int64),
        "access": _cat([r.access for r in runs], np.int8),
        "pair": _cat([r.pair for r in runs], np.int64),
        "gone_at": _cat([r.gone_at for r in runs], np.int64),
        "step": _cat([r.step for r in runs], np.int64),
        "turn": _cat([r.turn for r in runs], np.int64),
        "is_error": _cat([r.is_error for r in runs], np.bool_),
        "lines": _cat([r.lines for r in runs], np.int64),
        "resource": _cat([r.resource for r in runs], np.int64),
        "tool": _cat(tools, np.int64),
        "recorded_only": _cat([ev.recorded_only for ev in recorded], np.bool_),
        "req_end": _cat([r.req_end for r in runs], np.int64),
        "req_ts": _cat([r.req_ts for r in runs], np.float64),
        "first_body": np.array([r.first_body for r in runs], dtype=np.int64),
        "estimated": np.array([r.estimated for r in runs], dtype=np.bool_),
        "rr_prev": _cat([e.prev_result[o] for e, o in zip(reads, orders, strict=True)], np.int64),
        "rr_decide": _cat([e.decide[o] for e, o in zip(reads, orders, strict=True)], np.int64),
        "rr_changed": _cat([e.changed[o] for e, o in zip(reads, orders, strict=True)], np.bool_),
        "rr_tokens": _cat([e.tokens[o] for e, o in zip(reads, orders, strict=True)], np.int64),
        "ev_step": _cat([ev.step for ev in recorded], np.int64),
        "ev_summary": _cat([np.array([k not in CLEARING_EVENTS for k in ev.kind], bool) for ev in recorded], np.bool_),
        "ev_drop_off": _cat(drop_off, np.int64),
        "ev_drop": _cat([np.sort(d) for ev in recorded for d in ev.drop], np.int64),
        "mask_step": _cat([ev.mask_step for ev in recorded], np.int64),
        "mask_pos": _cat([ev.mask_pos for ev in recorded], np.int64),
        "mask_chars": _cat([ev.mask_chars for ev in recorded], np.int64),
        "usage_offset": _cat([r.usage_offsets for r in runs], np.int64),
        "harness_est": _cat([r.harness_estimates for r in runs], np.int64),
        "text_tools": np.array([r.text_tools for r in runs], dtype=np.bool_),
        "dup_key": _cat([r.dup_keys for r in runs], np.int64),
        "dup_chars": _cat([r.dup_chars_after for r in runs], np.int64),
        "media_chars": _cat([r.media_chars_of for r in runs], np.int64),
        "warm": np.array([r.warm for r in runs], dtype=np.int64),
        "warm_kept": np.array([r.warm_kept for r in runs], dtype=np.int64),
        "assistant_bp": np.array([r.assistant_bp for r in runs], dtype=np.bool_),
        "tail": np.array([r.tail for r in runs], dtype=np.int64),
        "req_model": _cat([model_codes(r) for r in runs], np.int64),
        "cache_cap": _cat([r.cache_caps for r in runs], np.int64),
        "server_read": _cat([r.server_reads for r in runs], np.int64),
        "foreign_read": _cat([r.foreign_reads for r in runs], np.int64),
        "tail_extra": _cat([r.tail_extras for r in runs], np.int64),
        "req_sent": _cat([request_times(r)[0] for r in runs], np.float64),
        "req_done": _cat([request_times(r)[1] for r in runs], np.float64),
        "condenser": np.array([r.condenser for r in runs], dtype=np.int64),
        "framing": _cat([r.framings for r in runs], np.int64),
        "harness_keep": _cat([r.harness_keeps for r in runs], np.int64),
        "req_window": _cat([r.req_windows for r in runs], np.int64),
        "req_limit": _cat([r.req_limits for r in runs], np.float64),
        "req_trigger": _cat([r.req_triggers for r in runs], np.int64),
        "req_resumed": _cat([r.req_resumes for r in runs], np.bool_),
        "req_ttl": _cat([r.req_ttls for r in runs], np.float64),
        "req_hit": _cat([request_hit_rates(r) for r in runs], np.float64),
        "edit_chars": _cat([r.edit_chars_of for r in runs], np.int64),
        "part_read": _cat([r.part_read_of for r in runs], np.bool_),
        "file_chars": _cat([r.file_chars_of for r in runs], np.int64),
        "file_lines": _cat([r.file_lines_of for r in runs], np.int64),
    }
    assert set(arrays) | {"run_ids", "static", "models", "tool_names", "cache_ttls", "cache_fits", "request_plan"} == {
        f.name for f in fields(PackedRuns)
    }
    return PackedRuns(
        run_ids=tuple(r.run_id for r in runs),
        **arrays,
        static=_static_columns(
            [static_row(r, e.max_reads) | e.same_resource for r, e in zip(runs, reads, strict=True)]
        ),
        models=tuple(r.model for r in runs),
        tool_names=tuple(names),
        cache_ttls=tuple(r.cache_ttl for r in runs),
        cache_fits=tuple(r.cache_fit for r in runs),
        request_plan=plan(runs),
    )
