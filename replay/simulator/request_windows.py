"""Per request, the window, limit and trigger of the harness preset of the model the log says served it, where those
are not the run's.

A harness takes its compaction limit from the model serving the current turn, so a session that switches model moves
it. Read in each harness's source:

- Claude Code: the threshold is the model's window less its output reserve (``min(max output, cap)``) less 13,000,
  both of the main loop's model (2.1.332's ``gse``/``ik`` take the model); from 2.1.153 whether it compacts at that
  threshold or only when the API refuses a prompt past the window is the model's too (its window's source).
- codex-rs: the turn's model's window (``model_context_window`` logged per turn). Before a turn whose model's
  ``comp_hash`` differs from the previous turn's, both logged, it compacts whatever the size
  (``maybe_run_previous_model_inline_compact``, ``CompactionReason::CompHashChanged``; turn_context logs the hash,
  ``runs.metadata.comp_hashes``): that turn's first request gets trigger ``COMPACT_NOW``.
- Gemini CLI: ``tokenLimit`` of the turn's active model (``_getActiveModelForCurrentTurn``, 0.61.0).
- Copilot CLI: the CompactionProcessor's ``preRequest`` takes ``max_prompt_tokens`` of the request's ``modelInfo``
  (1.0.34); 1.0.102 logs it per call (``maxPromptTokens``, ``runs.metadata.prompt_limits``).
- Cline 3.x: ``getContextWindowInfo(this.api)``, the task's API handler, rebuilt when the model is changed
  (Controller.updateApiConfiguration); the Cline SDK (4.1): ``context.model.info`` of the turn.

Request k's preset is the one ``harness_preset`` (the run-level choice) gives request k's model: for Claude Code on
the 1M window when a prompt recorded for that model passed 200,000; for Codex with the window logged for that
request's turn (``runs.metadata.context_windows``, [[line, window], ...] in log order), for Copilot CLI with the limit
logged for its call (``prompt_limits``). Requests whose preset has the run's window, limit and trigger, or whose
model the log does not name, get 0 / 0 / -1 (``RunArrays.req_window``, ``req_limit``, ``req_trigger``): the policy's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from replay.policies import make_compiled
from replay.policies.auto_compact import COMPACT_NOW, TRIGGERS
from replay.policies.base import Budget
from replay.simulator.harness_preset import harness_preset

# formats whose preset's limit depends on the model serving the request (the others' is the run's)
PER_MODEL = ("claude-code", "codex-rollout", "codex-tui", "gemini-cli", "copilot-cli", "cline", "cline-sdk")
# per format, the metadata key of a value logged per request ([[line, value], ...]) and the key the preset reads it as
LOGGED = {
    "codex-rollout": ("context_windows", "model_context_window"),
    "codex-tui": ("context_windows", "model_context_window"),
    "copilot-cli": ("prompt_limits", "prompt_limit"),
}


class RequestLimits(NamedTuple):
    """Per request: window (0: the budget's), limit (0: the policy's), auto_compact trigger code (-1: the policy's),
    and whether the log names a model for it that has no preset of the harness (its limit is not known: the
    policy's holds there, and fidelity scores no event it decides); ``preset``: the run's own (``harness_preset`` of
    the run's model), the one the others differ from, None when the log does not say enough for one."""

    window: np.ndarray
    limit: np.ndarray
    trigger: np.ndarray
    unknown: np.ndarray
    preset: tuple[str, Budget, dict] | None = None


def logged_window(
    metadata: dict, line: int | None, rows_key: str = "context_windows", key: str = "model_context_window"
) -> object:
    """The value last logged at or before log line ``line`` (``rows_key``: [[line, value], ...]), else the run's
    (``key``); by default Codex's ``model_context_window``."""
    found: object = metadata.get(key)
    rows = metadata.get(rows_key)
    if line is None or not isinstance(rows, list):
        return found
    for row in rows:
        if isinstance(row, list) and len(row) == 2 and isinstance(row[0], int) and row[0] <= line:
            found = row[1]
    return found


def preset_limits(chosen: tuple[str, object, dict]) -> tuple[int, float, int]:
    """(window, limit, trigger code or -1) of a ``harness_preset`` choice: what its policy compares at a request."""
    name, budget, params = chosen
    window = int(budget.window)  # type: ignore[attr-defined]
    policy = make_compiled(name, params)
    limits = policy.limits(window)
    trigger = getattr(policy.config, "trigger_on", None)
    return window, float(limits[0][1]) if limits else 0.0, TRIGGERS.get(trigger, -1) if trigger else -1


def request_windows(
    fmt: str,
    metadata: dict,
    model: str | None,
    req_models: Sequence[str | None],
    req_lines: Sequence[int | None],
    rec_prompt: np.ndarray,
) -> RequestLimits:
    """Per request, its model's preset's window, limit and trigger where the log names the model and they differ
    from the run's (the preset ``harness_preset`` gives the run's ``model``): the window where it differs, the limit
    where the window or limit does, the trigger where it does; for Codex, ``COMPACT_NOW`` at the first request of a
    turn whose model's ``comp_hash`` changed (``comp_hash_turns``). Nothing for a format whose limit is per run, or a
    run with no preset."""
    out = _request_limits(fmt, metadata, model, req_models, req_lines, rec_prompt)
    if fmt in ("codex-rollout", "codex-tui"):
        for k in comp_hash_turns(metadata, req_lines):
            out.trigger[k] = COMPACT_NOW
    return out


def comp_hash_turns(metadata: dict, req_lines: Sequence[int | None]) -> list[int]:
    """The requests codex-rs compacts before whatever the size: the first request after each turn_context whose
    ``comp_hash`` differs from the previous turn's, both logged (``runs.metadata.comp_hashes`` [[line, hash], ...],
    one row per change; a hash compared with a turn that logged none does not compact)."""
    rows = metadata.get("comp_hashes")
    if not isinstance(rows, list):
        return []
    rows = [row for row in rows if isinstance(row, list) and len(row) == 2 and isinstance(row[0], int)]
    out = []
    for i in range(1, len(rows)):
        (_, before), (line, now) = rows[i - 1], rows[i]
        if not (before and now and before != now):
            continue
        k = next((k for k, at in enumerate(req_lines) if at is not None and at > line), None)
        # the change governs that request only when no later turn (a fork's copy of its parent) came in between
        later = rows[i + 1][0] if i + 1 < len(rows) else None
        if k is not None and (later is None or later > req_lines[k]) and k not in out:
            out.append(k)
    return out


def _request_limits(
    fmt: str,
    metadata: dict,
    model: str | None,
    req_models: Sequence[str | None],
    req_lines: Sequence[int | None],
    rec_prompt: np.ndarray,
) -> RequestLimits:
    """``request_windows`` without the per-turn compactions: each request's model's preset's window, limit and
    trigger where they differ from the run's."""
    n = len(req_models)
    run_choice = harness_preset(fmt, metadata, model, int(rec_prompt.max()) if n else 0)
    out = RequestLimits(
        np.zeros(n, np.int64), np.zeros(n, np.float64), np.full(n, -1, np.int64), np.zeros(n, np.bool_), run_choice
    )
    if fmt not in PER_MODEL or n == 0 or run_choice is None:
        return out
    run = preset_limits(run_choice)
    peak: dict[str | None, int] = {}  # per model, its largest recorded prompt (Claude Code's 1M window shows in it)
    for m, p in zip(req_models, rec_prompt, strict=True):
        peak[m] = max(peak.get(m, 0), int(p))
    rows_key, key = LOGGED.get(fmt, ("", ""))
    chosen: dict[tuple[str, object], tuple[int, float, int] | None] = {}  # per (model, logged value): its preset's
    for k, (m, line) in enumerate(zip(req_models, req_lines, strict=True)):
        if m is None or m.startswith("<"):  # no model named, or a message the harness made itself ("<synthetic>")
            continue
        logged = logged_window(metadata, line, rows_key, key) if rows_key else None
        if (m, logged) not in chosen:
            choice = harness_preset(fmt, {**metadata, key: logged} if rows_key else metadata, m, peak[m])
            chosen[m, logged] = None if choice is None else preset_limits(choice)
        own = chosen[m, logged]
        out.unknown[k] = own is None
        if own is None or own == run:
            continue
        window, lim, trig = own
        if window != run[0]:
            out.window[k] = window
        if window != run[0] or lim != run[1]:
            out.limit[k] = lim
        if trig != run[2]:
            out.trigger[k] = trig
    return out
