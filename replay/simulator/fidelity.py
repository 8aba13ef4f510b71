"""Fidelity: replay each run under the policy that recorded it and compare with what the server counted.

Per run: the per-request prompt error under the ``recorded`` policy with the prompt model (median, p95 of
|simulated - recorded| / recorded), the calibration scored out of sample (each request predicted from a fit on
the earlier requests only), and the cache-read share under the run's provider cache model. Per recorded context
event (compaction, condensation): the recorded request and prompt after it against the harness preset's, and the
cache-read share replayed vs recorded at the event request, before it (since the previous event) and after it
(``cache_share_recorded``/``_simulated``: from the event to the next one or the end).
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import replace

import numpy as np
import polars as pl

from replay.policies import Budget, make_compiled, make_policy
from replay.policies.kernel import SUMMARY_CLEARED
from replay.run_arrays import RunArrays
from replay.simulator.cache_fit import fit_run, predictive, provider_cache
from replay.simulator.cache_losses import ttl_of
from replay.simulator.caches import CacheModel, make_cache
from replay.simulator.harness_preset import BIG, missing_preset
from replay.simulator.own_window import own_choice
from replay.simulator.run import simulate_run
from replay.simulator.run_output import cache_reasons
from replay.simulator.server_cache import replayed_phrase
from replay.simulator.unlogged_limit import unlogged_limit_reason

TARGET_MEDIAN, TARGET_P95 = 0.03, 0.10  # per-request prompt error under the recorded policy
TARGET_EVENT_REQUESTS, TARGET_EVENT_AFTER = 3, 0.10  # a preset's event: within 3 requests, prompt after within 10%
# presets whose trigger reads the usage the server reported for the last request (codex-rs: last_token_usage); by
# name prefix, but cline-sdk's, which estimates the request from its characters
READS_USAGE = ("claude-code", "cline", "codex", "inspect-ai")
OWN_ESTIMATE = ("cline-sdk",)
# presets whose events clear history without a summary (Cline's truncation, inspect_ai's CompactionTrim)
CLEARS_ONLY = ("cline", "inspect-ai-trim")
COLUMNS = {
    "file": pl.String,
    "run_id": pl.String,
    "kind": pl.String,
    "requests": pl.Int64,
    "scored": pl.Int64,
    "median_abs_pct": pl.Float64,
    "p95_abs_pct": pl.Float64,
    "oos_median_abs_pct": pl.Float64,
    "oos_p95_abs_pct": pl.Float64,
    "recorded_request": pl.Int64,
    "simulated_request": pl.Int64,
    "recorded_after": pl.Int64,
    "replayed_after": pl.Int64,
    "simulated_after": pl.Int64,
    "cache_share_recorded": pl.Float64,
    "cache_share_simulated": pl.Float64,
    "within": pl.Boolean,
    "cache_share_before_recorded": pl.Float64,
    "cache_share_before_simulated": pl.Float64,
    "cache_share_at_recorded": pl.Float64,
    "cache_share_at_simulated": pl.Float64,
    "format": pl.String,
    "cache_model": pl.String,
    "prompt_source": pl.String,
    "prefix": pl.Int64,
    "token_source": pl.String,
    "unreconstructable": pl.String,
    "preset": pl.String,
    "cache_fit": pl.String,
    "cache_oos_recorded": pl.Float64,
    "cache_oos_simulated": pl.Float64,
    "harness_version": pl.String,
    "reason": pl.String,
}


def run_cache(run: RunArrays, cache: str) -> CacheModel:
    """The cache model ``cache`` for ``run``: Anthropic's with the TTL its writes used (``RunArrays.cache_ttl``:
    recorded, else inferred from its reads; 5 minutes when neither says, as ``simulate`` has it); the run's calibrated
    parameters when its cache fit is for that model (replay.simulator.cache_fit); else the model's defaults."""
    if cache == "anthropic":
        return make_cache(cache, ttl=ttl_of(run))
    if run.cache_fit is not None and run.cache_fit.name == cache:
        return run.cache_fit.cache()
    return make_cache(cache)


def replay_recorded(
    run: RunArrays, cache: str = "anthropic", policy: str = "recorded", budget: Budget = BIG, params: dict | None = None
) -> tuple[dict[str, np.ndarray], dict]:
    """Per-request columns and run row of ``run`` under ``policy`` (the log's own by default; a preset's
    window in ``budget``), with the run's cache model: TTL from its gaps, best-effort hit rate from its reads; the
    run starts with the warm prefix and uncached tail its log shows (replay.simulator.run_start)."""
    return simulate_run(run, make_policy(policy, params), run_cache(run, cache), budget)


def harness_version(metadata: dict) -> str | None:
    """The harness version the log records (Claude Code's ``version``, Codex's ``cli_version``, the Cline SDK
    session's client version, Copilot CLI's ``copilotVersion``, mini-swe-agent's ``info.mini_version``, SWE-agent's
    ``info.swe_agent_version``, the inspect_ai package that wrote an eval log), else None."""
    for key in (
        "cc_version",
        "cli_version",
        "cline_version",
        "copilot_version",
        "mini_version",
        "swe_agent_version",
        "inspect_ai_version",
    ):
        if isinstance(metadata.get(key), str) and metadata[key]:
            return metadata[key]
    return None


def prompt_errors(cols: dict[str, np.ndarray], half: np.ndarray | None = None) -> np.ndarray:
    """|simulated - recorded| / recorded for every request with a recorded prompt; with ``half`` (per request,
    the recorded figure's rounding: ``calibrate.resolutions``) the distance to that interval, as calibrate
    scores it."""
    from replay.tokens.calibrate import interval_errors

    have = cols["recorded_prompt"] > 0
    return interval_errors(
        cols["prompt_tokens"][have],
        cols["recorded_prompt"][have].astype(np.float64),
        None if half is None else half[have],
    )


def cache_share(run: RunArrays, cache: str = "anthropic") -> dict:
    """Simulated vs recorded cache-read share (sum cache_read / sum prompt) under the recorded policy."""
    cols, row = replay_recorded(run, cache)
    err = prompt_errors(cols)
    return {
        "run_id": run.run_id,
        "requests": run.n_requests,
        "prefix": run.prefix_tokens,
        "tail": run.tail,
        "ttl": ttl_of(run) if cache == "anthropic" else None,
        "simulated": row["cache_hit_rate"],
        "recorded": row["recorded_cache_share"],
        "prompt_error": float(np.median(err)) if len(err) else None,
    }


def _share(cols: dict[str, np.ndarray], lo: int, hi: int, recorded: bool) -> float | None:
    prompt = cols["recorded_prompt" if recorded else "prompt_tokens"][lo:hi]
    read = cols["recorded_cache_read" if recorded else "cached_tokens"][lo:hi]
    have = (cols["recorded_prompt"][lo:hi] > 0) & (cols["recorded_cache_read"][lo:hi] >= 0)
    total = prompt[have].sum()
    return round(float(read[have].sum() / total), 3) if total > 0 else None


def out_of_sample_share(run: RunArrays, cache: str, provider: str) -> tuple[float | None, float | None]:
    """Recorded and simulated cache-read share of the second half of ``run``'s requests, its cache model fitted on
    the first half only and taken as a prediction (``cache_fit.predictive``: a hit rate from fewer than 20
    informative requests gives way to the provider's); runs whose own reads fit ``provider``'s cache model or show
    it uncached; None otherwise."""
    fit = run.cache_fit
    half = run.n_requests // 2
    if fit is None or fit.source not in ("fit", "uncached") or fit.name != cache or half < 2:
        return None, None
    first = fit_run(run, provider, upto=half)
    if first is None:
        return None, None
    first = predictive(first)
    cols, _ = replay_recorded(replace(run, cache_fit=first), first.name)
    return _share(cols, half, run.n_requests, True), _share(cols, half, run.n_requests, False)


EXACT = "exact by construction"  # what a run row's reason says of a prompt fit with a term per request


def exact_fit(fitted: tuple | None, requests: int) -> list[str]:
    """What to say of a run whose prompt fit has as many terms as it has requests (``fitted``: its fit and
    boundaries from ``fit_usage``): it meets them exactly by construction, so its prompt score shows only that the
    fit needed no negative prefix or content."""
    if fitted is None or fitted[0].unknowns < requests:
        return []
    return [
        f"prompt fitted with {fitted[0].unknowns} terms to {requests} requests: {EXACT} (its score only shows that "
        "no prefix or content the log lacks had to be negative)"
    ]


def session_row(run: RunArrays, row: dict) -> dict:
    """The row (kind 'session') of a run whose log records usage only for the whole session
    (replay.metrics.session_totals): no prompt to score per request; its cache-read share against the totals',
    and in ``reason`` the sum of its prompts against theirs."""
    recorded, simulated = row["recorded_prompt"], int(row["prompt_tokens"])
    gap = f"{100 * (simulated / recorded - 1):+.1f}%" if recorded else "n/a"
    return {
        "kind": "session",
        "requests": run.n_requests,
        "scored": 0,
        "cache_share_recorded": row["recorded_cache_share"],
        "cache_share_simulated": row["cache_hit_rate"],
        "within": None,
        "reason": f"no per-request usage, only session totals: its {run.n_requests} prompts add up to {recorded:,} "
        f"recorded, {simulated:,} replayed ({gap}); the cache share is theirs",
    }


def _pct(x: np.ndarray, q: float) -> float | None:
    return round(100 * float(np.quantile(x, q)), 2) if len(x) else None


def with_reported_usage(run: RunArrays, cols: dict[str, np.ndarray]) -> RunArrays:
    """``run`` with each request's ``usage_offset``: the recorded prompt less the one replayed under the recorded
    policy (``cols``), 0 where none was recorded. Claude Code's compaction and microcompact read the usage the
    server reported for the last response, so a preset replayed with these offsets sees the recorded prompt
    wherever its view is the recorded one, and its own view's difference from it elsewhere."""
    have = cols["recorded_prompt"] > 0
    offset = np.where(have, cols["recorded_prompt"] - cols["prompt_tokens"], 0).astype(np.int64)
    return replace(run, usage_offset=offset)


def preset_cleared(run: RunArrays, preset: tuple[str, Budget, dict], cache: str) -> tuple[np.ndarray, np.ndarray]:
    """(requests at which ``preset`` cleared tool results without summarising (Claude Code's microcompact), the
    prompt at each request) of ``run`` replayed under it, as ``replay_recorded`` replays it."""
    from replay.simulator.kernels.driver import T_PROMPT, T_SUMMARISED
    from replay.simulator.kernels.trace import trace_run

    name, budget, params = preset
    trace = trace_run(run, make_compiled(name, params), budget)
    return np.flatnonzero(trace.columns[:, T_SUMMARISED] & SUMMARY_CLEARED), trace.columns[:, T_PROMPT]


def event_rows(
    run: RunArrays,
    cols: dict[str, np.ndarray],
    preset: tuple[str, Budget, dict] | None,
    cache: str,
    logged_after: list[int | None] | None = None,
    logged_steps: list[int] | None = None,
) -> list[dict]:
    """One row per recorded context event: recorded request and prompt after it; the preset's nearest event of the
    same sort (a microcompact against the preset's microcompacts, any other event against its summaries).
    ``logged_after``: per event, the prompt after it as the harness counted it, for requests without usage
    (Copilot CLI's breakdown after a compaction). ``logged_steps``: per event, its step as the log places it; one
    after the last request (the session ended on it) is charged its summariser call at the last request, dropping
    nothing there (``replay.simulator.load.recorded_events``), and reported after it, with no prompt. A Claude Code,
    Cline or Codex preset reads the usage the server reported (``with_reported_usage``); a Cline preset's events are
    its truncations (no summary)."""
    ev = run.events
    sim_steps: np.ndarray = np.zeros(0, dtype=np.int64)
    micro_steps, micro_prompt = sim_steps, sim_steps
    sim_cols = None
    if preset is not None and len(ev.step):
        reads = preset[0].startswith(READS_USAGE) and preset[0] not in OWN_ESTIMATE
        harness_run = with_reported_usage(run, cols) if reads else run
        sim_cols, _ = replay_recorded(harness_run, cache, *preset)
        sim_steps = np.flatnonzero(sim_cols["summarised"])
        if "microcompact" in ev.kind or preset[0] in CLEARS_ONLY:
            micro_steps, micro_prompt = preset_cleared(harness_run, preset, cache)
    out = []
    order = [int(e) for e in np.argsort(ev.step, kind="stable")]
    bounds = [0, *(int(ev.step[e]) for e in order), run.n_requests]
    for i, e in enumerate(order):
        k, before, after = int(ev.step[e]), bounds[i], bounds[i + 2]
        last = logged_steps is not None and e < len(logged_steps) and logged_steps[e] >= run.n_requests
        k = run.n_requests if last else k  # after the last request: no prompt shows it
        size = None if last or cols["recorded_prompt"][k] <= 0 else int(cols["recorded_prompt"][k])
        if size is None and logged_after and e < len(logged_after):
            size = logged_after[e]
        row = {
            "kind": ev.kind[e],
            "requests": run.n_requests,
            "recorded_request": k,
            "recorded_after": size,
            "replayed_after": None if last else int(cols["prompt_tokens"][k]),
            "cache_share_recorded": _share(cols, k, after, True),
            "cache_share_simulated": _share(cols, k, after, False),
            "cache_share_before_recorded": _share(cols, before, k, True),
            "cache_share_before_simulated": _share(cols, before, k, False),
            "cache_share_at_recorded": _share(cols, k, k + 1, True),
            "cache_share_at_simulated": _share(cols, k, k + 1, False),
            "simulated_request": None,
            "simulated_after": None,
        }
        steps, prompts = (
            (micro_steps, micro_prompt)
            if ev.kind[e] == "microcompact" or preset is not None and preset[0] in CLEARS_ONLY
            else (sim_steps, sim_cols["prompt_tokens"] if sim_cols is not None else sim_steps)
        )
        if len(steps):
            near = int(steps[np.argmin(np.abs(steps - k))])
            row["simulated_request"] = near
            row["simulated_after"] = int(prompts[near])
        out.append(row)
    return out


# automatic compactions the log says something other than the threshold caused (Copilot CLI 1.0.102's ``trigger``:
# a switch to a model with a smaller window, a context-limit error, process memory): no threshold preset makes them
# inspect_ai's ``forced``: react() compacts at once when the model stops with model_length (its prompt overflowed)
NOT_THRESHOLD = ("model_switch", "context_limit_retry", "memory_pressure", "forced")


# why a compaction Claude Code made while the session sat idle (the event's ``cause``) is not scored: it fires on
# conditions the log does not hold (Claude Code 2.1.283-2.1.332, docs/guide.md)
IDLE_REASON = (
    "idle compaction, not a threshold: Claude Code made it while the session sat idle, on conditions the log "
    "does not hold (the session still open, the user away, a setting or server flag): replayed as recorded"
)


# why a compaction in a forked Codex rollout's copy of its parent is not scored (readers/codex_rollout.py ``Fork``)
FORKED_REASON = "made by the parent thread before this fork (the rollout's copy of it): replayed as recorded"


# why a compaction a resume logged again in another transcript of the folder is not scored there
# (readers/claude_code_continued.py)
RESUMED_REASON = (
    "made in another transcript of the project folder, where the history it compacted is logged (scored there); "
    "a resume logged it here again: replayed as recorded"
)


def unscored_reason(
    row: dict,
    trigger: str | None,
    missing: str | None,
    logged: str | None = None,
    cause: str | None = None,
    unknown_models: Collection[str] = (),
) -> str:
    """Why a recorded event is not scored against the preset ("" when it is): a compaction made while the session
    sat idle (``cause`` "idle"), one a forked Codex rollout copied from its parent (``cause`` "forked"), one a resume
    logged again in another Claude Code transcript (``cause`` "resumed") or a manual
    one is not a threshold's, nor is one whose logged cause (``logged``:
    ``trigger_logged``) is in ``NOT_THRESHOLD``; without a preset (``missing``: why there is none), a prompt after
    it or a request before it there is nothing to compare; nor where requests that decide it were served by models
    the harness's presets do not know (``unknown_models``: their limit is not known)."""
    k = row["recorded_request"]
    if cause == "idle":
        return IDLE_REASON
    if cause == "forked":
        return FORKED_REASON
    if cause == "resumed":
        return RESUMED_REASON
    if logged in NOT_THRESHOLD:
        return f"{logged}, not the threshold: replayed as recorded"
    if trigger == "manual":
        return "manual, not a threshold: replayed as recorded"
    if missing is not None:
        return missing
    if unknown_models:
        names = ", ".join(sorted(unknown_models))
        return f"requests up to it were served by {names}, a model with no preset: the harness's limit there is unknown"
    if k >= row["requests"]:
        return "after the last request: the log ends before a request that would show it"
    if row["recorded_after"] is None:
        return f"no recorded prompt after it: request {k} has no usage in the log"
    if k == 0:
        return "at the first request: the threshold was crossed before the log begins"
    return ""


def unknown_limit_models(run: RunArrays, start: int, stop: int) -> set[str]:
    """The models the log names for requests ``start`` to ``stop`` - 1 that have no preset of the harness
    (``RunArrays.req_unknown_limit``)."""
    flags = run.req_unknown_limit
    return {str(run.req_model[j]) for j in range(start, min(stop, len(flags))) if flags[j]}


def event_within(row: dict) -> bool:
    """A scored recorded event (``unscored_reason`` ""): whether the preset fired within the targets of it; a preset
    that did not fire near it missed it."""
    if row["simulated_request"] is None:
        return False
    close = abs(row["simulated_request"] - row["recorded_request"]) <= TARGET_EVENT_REQUESTS
    return close and abs(row["simulated_after"] - row["recorded_after"]) / row["recorded_after"] <= TARGET_EVENT_AFTER


def fidelity_frame(
    con, tokenizer_id: str | None, cache: str | None = None, pattern: str | None = None, ids: list[str] | None = None
) -> pl.DataFrame:
    """Rows for every run with recorded prompt usage (kind 'run') or session totals (kind 'session') and every
    recorded context event, where the harness's preset (``harness_preset``) is replayed to find the request it
    would have fired at (a run with no per-request usage but recorded events has those event rows only: scored
    where the harness logged the size after the event, else listed with why not).

    ``cache``: one cache model for every run; None: each run under its harness's provider (Anthropic for Claude
    Code, OpenAI for Codex and OpenAI-style logs). ``ids``: only these runs (fitted and replayed alone)."""
    from replay.simulator.load import load_runs
    from replay.tokens.calibrate import fit_usage, out_of_sample_errors, resolutions
    from replay.tokens.template import DEFAULT_OVERHEAD

    meta = {
        r[0]: r[1:] for r in con.execute("SELECT run_id, source_path, format, model, metadata FROM runs").fetchall()
    }
    fitted = fit_usage(con, tokenizer_id, DEFAULT_OVERHEAD, ids)  # once: the prompt model and the out-of-sample score
    oos = out_of_sample_errors(fitted[0])
    rows = []
    for run in load_runs(con, tokenizer_id, pattern, fitted=fitted, ids=ids, own_windows=True):
        usage = bool((run.rec_prompt > 0).any())
        path, fmt, model, metadata = meta[run.run_id]
        metadata = json.loads(metadata) if isinstance(metadata, str) else (metadata or {})
        recorded_events = [
            ev
            for ev in metadata.get("context_events") or []
            if isinstance(ev, dict) and isinstance(ev.get("step"), int)
        ]
        logged = [ev.get("after_tokens") for ev in recorded_events]
        if not usage and not recorded_events and not run.session_totals:
            continue  # nothing recorded to score against
        chosen = cache or (run.cache_fit.name if run.cache_fit is not None else provider_cache(fmt, model))
        cols, row = replay_recorded(run, chosen)
        err = prompt_errors(cols, resolutions(metadata, np.arange(run.n_requests)))
        o = oos.get(run.run_id, np.zeros(0))
        peak = int(run.rec_prompt.max()) if run.n_requests else 0
        preset = own_choice(run)  # the preset its per-request windows were chosen against
        base = {
            "file": path.rsplit("/", 1)[-1],
            "run_id": run.run_id,
            "format": fmt,
            "cache_model": chosen,
            "preset": f"{preset[0]}@{preset[1].window}" if preset else None,
            "harness_version": harness_version(metadata),
            "prompt_source": run.prompt_source,
            "prefix": run.prefix_tokens,
            "token_source": run.token_source,
            "unreconstructable": run.unreconstructable,
        }
        if usage:
            oos_recorded, oos_simulated = out_of_sample_share(run, chosen, provider_cache(fmt, model))
            rows.append(
                {
                    **base,
                    "kind": "run",
                    "requests": run.n_requests,
                    "scored": len(err),
                    "median_abs_pct": _pct(err, 0.5),
                    "p95_abs_pct": _pct(err, 0.95),
                    "oos_median_abs_pct": _pct(o, 0.5),
                    "oos_p95_abs_pct": _pct(o, 0.95),
                    "cache_share_recorded": _share(cols, 0, run.n_requests, True),
                    "cache_share_simulated": _share(cols, 0, run.n_requests, False),
                    "cache_fit": "; ".join(
                        x for x in (run.cache_fit.label() if run.cache_fit else "", replayed_phrase(run)) if x
                    )
                    or None,
                    "cache_oos_recorded": oos_recorded,
                    "cache_oos_simulated": oos_simulated,
                    "within": bool(len(err))
                    and float(np.median(err)) <= TARGET_MEDIAN
                    and float(np.quantile(err, 0.95)) <= TARGET_P95,
                    # why the cache share cannot match; a prompt fitted exactly by construction
                    "reason": "; ".join([*exact_fit(fitted[2].get(run.run_id), len(err)), *cache_reasons(run)]) or None,
                }
            )
        elif run.session_totals:
            rows.append({**base, **session_row(run, row)})
        previous = 0
        steps = [ev["step"] for ev in recorded_events]
        for i, ev in enumerate(event_rows(run, cols, preset, chosen, logged, steps)):
            recorded = recorded_events[i] if i < len(recorded_events) else {}
            k = ev["recorded_request"]
            reason = unscored_reason(
                ev,
                recorded.get("trigger"),
                None if preset else missing_preset(fmt, metadata, model, peak),
                recorded.get("trigger_logged"),
                recorded.get("cause"),
                unknown_limit_models(run, previous, k + TARGET_EVENT_REQUESTS + 1),
            )
            previous = k
            within = None if reason else event_within(ev)
            if within is False:  # a miss the log can explain: a limit it does not record
                reason = unlogged_limit_reason(run, ev, preset) or ""
            rows.append({**base, **ev, "within": within, "reason": reason or None})
    return pl.DataFrame([{c: r.get(c) for c in COLUMNS} for r in rows], schema=COLUMNS)
