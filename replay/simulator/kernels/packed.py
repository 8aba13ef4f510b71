"""Many runs packed into flat arrays with offsets: what the compiled kernels read, built once per sweep."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from replay.metrics.repeat_reads import RESOURCE_COLUMNS, read_events
from replay.metrics.runs import recorded_totals
from replay.simulator.arrays import TOOL_RESULT, RunArrays
from replay.simulator.run import recorded_output


@dataclass(frozen=True, eq=False)
class PackedRuns:
    """Item, request, repeat-read and error arrays of every run end to end; ``*_off[r]:*_off[r+1]`` is run r."""

    run_ids: tuple[str, ...]
    item_off: np.ndarray
    req_off: np.ndarray
    ev_off: np.ndarray
    err_off: np.ndarray
    kind: np.ndarray
    tokens: np.ndarray
    chars: np.ndarray
    access: np.ndarray
    pair: np.ndarray        # run-local index of the partner, -1 none
    gone_at: np.ndarray     # per item: the request from which the server drops it, -1 never
    req_end: np.ndarray
    req_ts: np.ndarray      # NaN unknown
    ev_prev: np.ndarray     # run-local position of the earlier read's result
    ev_decide: np.ndarray   # request (run-local) whose view decided the repeat read; sorted per run
    ev_changed: np.ndarray
    ev_tokens: np.ndarray
    err_pos: np.ndarray     # run-local positions of failed tool results
    first_body: np.ndarray  # per run: first position after the system/tool_defs prefix
    static: dict[str, np.ndarray]  # per run: metrics that do not depend on the policy, as columns
    models: tuple[str | None, ...]
    cache_ttls: tuple[float | None, ...] = ()  # per run: the TTL its log's cache writes used (None unrecorded)

    @property
    def n_runs(self) -> int:
        return len(self.run_ids)

    @property
    def n_requests(self) -> int:
        return int(self.req_off[-1])


STATIC_TYPES = {"recorded_prompt": np.int64, "recorded_cache_read": np.int64, "recorded_cache_share": np.float64,
                "max_reads_one_resource": np.int64, "output_tokens": np.int64, "output_source": object,
                "token_source": object, **dict.fromkeys(RESOURCE_COLUMNS, np.int64)}


def _static_columns(rows: list[dict]) -> dict[str, np.ndarray]:
    """Row dicts to typed columns (None -> NaN in float columns, stored as null)."""
    return {name: np.array([np.nan if r[name] is None else r[name] for r in rows], dtype=typ)
            for name, typ in STATIC_TYPES.items()}


def _static(run: RunArrays, max_reads: int) -> dict:
    return {**recorded_totals(run.rec_prompt, run.rec_cache_read), "max_reads_one_resource": max_reads,
            **recorded_output(run), "token_source": run.token_source}


def _policy_view(run: RunArrays, values: np.ndarray) -> np.ndarray:
    """``values`` with the harness's recorded-only items at 0, as ``Policy.reset`` sees them."""
    gone = run.events.recorded_only
    return np.where(gone, 0, values) if gone.any() else values


def pack(runs: list[RunArrays] | tuple[RunArrays, ...]) -> PackedRuns:
    """Concatenate ``runs``; positions inside each run stay run-local."""
    events = [read_events(r) for r in runs]
    orders = [np.argsort(e.decide, kind="stable") for e in events]
    errors = [np.flatnonzero(r.is_error & (r.kind == TOOL_RESULT)) for r in runs]

    def cat(parts: list[np.ndarray], dtype) -> np.ndarray:
        return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)

    def offsets(sizes: list[int]) -> np.ndarray:
        return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

    return PackedRuns(
        run_ids=tuple(r.run_id for r in runs),
        item_off=offsets([r.n_items for r in runs]), req_off=offsets([r.n_requests for r in runs]),
        ev_off=offsets([len(e.call) for e in events]), err_off=offsets([len(e) for e in errors]),
        kind=cat([r.kind for r in runs], np.int8), tokens=cat([_policy_view(r, r.tokens) for r in runs], np.int64),
        chars=cat([_policy_view(r, r.chars) for r in runs], np.int64), access=cat([r.access for r in runs], np.int8),
        pair=cat([r.pair for r in runs], np.int64), gone_at=cat([r.gone_at for r in runs], np.int64),
        req_end=cat([r.req_end for r in runs], np.int64),

        req_ts=cat([r.req_ts for r in runs], np.float64),
        ev_prev=cat([e.prev_result[o] for e, o in zip(events, orders, strict=True)], np.int64),
        ev_decide=cat([e.decide[o] for e, o in zip(events, orders, strict=True)], np.int64),
        ev_changed=cat([e.changed[o] for e, o in zip(events, orders, strict=True)], np.bool_),
        ev_tokens=cat([e.tokens[o] for e, o in zip(events, orders, strict=True)], np.int64),
        err_pos=cat(errors, np.int64), first_body=np.array([r.first_body for r in runs], dtype=np.int64),
        static=_static_columns([_static(r, e.max_reads) | e.same_resource for r, e in zip(runs, events, strict=True)]),
        models=tuple(r.model for r in runs), cache_ttls=tuple(r.cache_ttl for r in runs))
