"""The prompt model: what the server counts for a view, beyond the items the log holds.

prompt = prefix + sum over the view's items of round(scale * (tokens + template(role)) + per_item)

``prefix`` is what the harness sends that the log does not hold (system prompt, tool schemas, memory files, the
template's fixed part); ``scale`` maps the chosen tokenizer's counts to the server's; ``per_item`` is the fitted
per-message constant. Where each comes from, in order:

1. ``fit``: the run has recorded per-request prompt usage; its own calibration (``replay.tokens.calibrate``).
2. ``override``: the user's ``--overhead`` (tokens) for every run without a fit.
3. ``log:<format>``: no usage of its own, but the log gives the size of what the harness sends besides its messages
   (``runs.metadata.harness_prefix.tokens``: Copilot CLI's ``toolDefinitionsTokens``): that is the prefix,
   counted by the harness; scale 1. ``totals:<format>``: the log also gives the sum of the run's prompts (its
   session totals, replay.metrics.session_totals): the scale that makes the prefix and the items add up to it
   (``calibrate.fit_totals``), on both.
4. ``profile:<format>``: no usage of its own; the median prefix and scale of the runs of the same format (harness)
   that have usage, counted with the same tokenizer.
5. ``none``: nothing applies; the prompt is the log's items only, and outputs say so.

The prefix enters the run as a leading ``system`` item (never trimmed, cached first, seen by every policy's
estimator with ``chars = 4 * tokens`` so chars/4 counts it exactly), so every policy, cache model and compiled
kernel sees the same prompt.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import duckdb
import numpy as np

from replay.metrics.session_totals import prompt_tokens, session_totals
from replay.tokens.calibrate import SIGNED_BOUNDARIES, TARGET_MEDIAN, counted_items, fit_totals, fit_usage
from replay.tokens.template import DEFAULT_OVERHEAD, Overhead

NONE, FIT, OVERRIDE = "none", "fit", "override"
# boundaries at which the harness prefix changes, sent as prefix segments (their fitted offset may be negative)
PREFIX_CHANGES = SIGNED_BOUNDARIES


@dataclass(frozen=True)
class PromptModel:
    """How one run's items become the server's prompt."""

    prefix: int = 0
    scale: float = 1.0
    per_item: float = 0.0
    drop_reasoning: bool = False
    source: str = NONE
    template: Overhead = DEFAULT_OVERHEAD
    # (from step, tokens, why): content the log does not hold; at a PREFIX_CHANGES step the change of the prefix
    unlogged: tuple[tuple[int, int, str], ...] = ()
    unreconstructable: str = ""  # why the log cannot give the server's prompt, when calibration found it cannot
    median_err: float = 0.0  # the fit's median |error| / recorded on its own run
    # (from step, to step): unlogged content the server no longer counts from that step on (calibrate.content_ends)
    until: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        if self.prefix < 0:
            raise ValueError("prefix must be >= 0; a negative fitted overhead goes into per_item")

    def item_tokens(self, tokens: np.ndarray, roles: list[str | None], kinds: list[str]) -> np.ndarray:
        """Each item's tokens as the server counts them (0 for reasoning the server drops)."""
        if self.source == NONE:
            return np.asarray(tokens, dtype=np.int64)
        tmpl = np.array([self.template.for_role(r) for r in roles], dtype=np.float64)
        out = np.rint(self.scale * (np.asarray(tokens, dtype=np.float64) + tmpl) + self.per_item).astype(np.int64)
        out = np.maximum(out, 0)
        if self.drop_reasoning:
            out[np.array([k == "reasoning" for k in kinds], dtype=bool)] = 0
        return out

    def framing(self, role: str | None) -> int:
        """The tokens an item of ``role`` costs beyond its content: its template share scaled, plus the fitted
        per-item term (calibrate counts every visible item as a message, one sized by the log included)."""
        if self.source == NONE:
            return 0
        return max(int(np.rint(self.scale * self.template.for_role(role) + self.per_item)), 0)

    @property
    def good(self) -> bool:
        """A fit on a log that gives the server's prompt, within the per-request target."""
        return self.source == FIT and not self.unreconstructable and self.median_err <= TARGET_MEDIAN


def _totals_fits(
    con: duckdb.DuckDBPyConnection,
    tokenizer_id: str | None,
    overhead: Overhead,
    logged: dict[str, int],
    totals: dict[str, tuple[int, str | None, dict]],
    formats: dict[str, str],
) -> dict[str, PromptModel]:
    """The ``totals:<format>`` prompt models (module docstring, 3) of the runs in ``totals`` (run -> the sum of its
    prompts, its model, its metadata)."""
    if not totals:
        return {}
    ids = list(totals)
    where = "WHERE i.run_id IN (SELECT unnest(?::VARCHAR[]))"
    items = counted_items(con, tokenizer_id, where, [ids]).partition_by("run_id", as_dict=True)
    steps: dict[str, list[int]] = {}
    for run_id, step in con.execute(
        "SELECT run_id, step FROM requests WHERE run_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY run_id, step", [ids]
    ).fetchall():
        steps.setdefault(run_id, []).append(step)
    out = {}
    for run_id, (total, model, metadata) in totals.items():
        if (run_id,) not in items or run_id not in steps:
            continue
        at = np.array(steps[run_id], dtype=np.int64)
        scale = fit_totals(items[(run_id,)], at, logged[run_id], total, overhead, metadata, model)
        prefix = int(round(scale * (logged[run_id] + overhead.fixed)))
        out[run_id] = PromptModel(prefix, scale, 0.0, False, f"totals:{formats[run_id]}", overhead)
    return out


def _fits(
    con: duckdb.DuckDBPyConnection, tokenizer_id: str | None, overhead: Overhead, fitted: tuple | None = None
) -> dict[str, PromptModel]:
    _, per_run, fits = fitted if fitted is not None else fit_usage(con, tokenizer_id, overhead)
    reasons = dict(zip(per_run["run_id"], per_run["unreconstructable"], strict=True)) if len(per_run) else {}
    errors = dict(zip(per_run["run_id"], per_run["median_err"], strict=True)) if len(per_run) else {}
    out = {}
    for run_id, (f, boundaries) in fits.items():
        prefix = max(f.overhead + f.scale * overhead.fixed, 0.0)  # >= 0 by the fit's bounds, up to rounding
        per_item = f.per_message
        # content from a step on; where the harness prefix itself changed (a model switch, a new tool list) the change
        # may be negative: the prefix of that segment is smaller
        unlogged = tuple(
            (int(s), int(round(t)), boundaries.get(int(s), "unlogged"))
            for s, t in f.offsets
            if t > 0 or boundaries.get(int(s)) in PREFIX_CHANGES
        )
        out[run_id] = PromptModel(
            int(round(prefix)),
            f.scale,
            per_item,
            not f.reasoning_in_prompt,
            FIT,
            overhead,
            unlogged,
            reasons.get(run_id, ""),
            float(errors.get(run_id, 0.0)),
            tuple((s, e) for s, e in f.ends if any(s == u[0] for u in unlogged)),
        )
    return out


def prompt_models(
    con: duckdb.DuckDBPyConnection,
    tokenizer_id: str | None,
    run_ids: list[str],
    overhead: Overhead = DEFAULT_OVERHEAD,
    override: int | None = None,
    fitted: tuple | None = None,
) -> dict[str, PromptModel]:
    """A prompt model for every run in ``run_ids`` (see the module docstring for the order of sources);
    ``fitted``: what ``fit_usage`` already returned for this tokenizer and overhead, to not fit twice."""
    fits = _fits(con, tokenizer_id, overhead, fitted)
    formats, logged, totals = {}, {}, {}
    for run_id, fmt, model, metadata in con.execute("SELECT run_id, format, model, metadata FROM runs").fetchall():
        formats[run_id] = fmt
        if metadata and "harness_prefix" in metadata:
            value = (json.loads(metadata) if isinstance(metadata, str) else metadata) or {}
            tokens = (value.get("harness_prefix") or {}).get("tokens")
            if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0:
                logged[run_id] = tokens
                summed = sum(prompt_tokens(t.counts) for t in session_totals(value))
                if summed and run_id in run_ids and run_id not in fits and override is None:
                    totals[run_id] = (summed, model, value)
    of_totals = _totals_fits(con, tokenizer_id, overhead, logged, totals, formats)
    by_format: dict[str, list[PromptModel]] = {}
    for run_id, pm in fits.items():
        if pm.good:  # a profile learns only from runs whose log gives the server's prompt
            by_format.setdefault(formats.get(run_id, ""), []).append(pm)
    profiles = {
        fmt: PromptModel(
            int(np.median([p.prefix for p in pms])),
            float(np.median([p.scale for p in pms])),
            float(np.median([p.per_item for p in pms])),
            False,
            f"profile:{fmt}",
            overhead,
        )
        for fmt, pms in by_format.items()
        if len(pms) >= 2
    }
    out = {}
    for run_id in run_ids:
        if run_id in fits:
            out[run_id] = fits[run_id]
        elif override is not None:
            out[run_id] = PromptModel(int(override), 1.0, 0.0, False, OVERRIDE, overhead)
        elif run_id in of_totals:
            out[run_id] = of_totals[run_id]
        elif run_id in logged:
            out[run_id] = PromptModel(logged[run_id], 1.0, 0.0, False, f"log:{formats.get(run_id, '')}", overhead)
        else:
            out[run_id] = profiles.get(formats.get(run_id, ""), PromptModel(template=overhead))
    return out
