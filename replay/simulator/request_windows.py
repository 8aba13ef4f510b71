"""Per request, the context window of the model the log says served it, where that is not the run's own window.

A harness takes its compaction threshold from the window of the model serving the current turn, so a session that
switches model (Claude Code's ``/model``: a 1M-window model, then a 200k one) or a Codex turn logged with another
``model_context_window`` moves it. The window of request k is the one ``harness_preset`` (the run-level choice)
gives request k's model: for Claude Code the harness version's window of that model, on the 1M window when a prompt
recorded for that model passed 200,000; for Codex the window logged for that request's turn
(``runs.metadata.context_windows``, [[line, window], ...] in log order), else its model family's. Requests whose
window is the run's, or whose model the log does not name, get 0: the budget's window (``RunArrays.req_window``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from replay.simulator.harness_preset import harness_preset

# formats whose preset's window depends on the model serving the request (the others' is the run's)
PER_MODEL = ("claude-code", "codex-rollout", "codex-tui")


def logged_window(metadata: dict, line: int | None) -> object:
    """The ``model_context_window`` last logged at or before log line ``line`` (``context_windows``), else the
    run's (``model_context_window``)."""
    found: object = metadata.get("model_context_window")
    rows = metadata.get("context_windows")
    if line is None or not isinstance(rows, list):
        return found
    for row in rows:
        if isinstance(row, list) and len(row) == 2 and isinstance(row[0], int) and row[0] <= line:
            found = row[1]
    return found


def request_windows(
    fmt: str,
    metadata: dict,
    model: str | None,
    req_models: Sequence[str | None],
    req_lines: Sequence[int | None],
    rec_prompt: np.ndarray,
) -> np.ndarray:
    """Per request, its model's window where the log names the model and it differs from the run's window (the
    one ``harness_preset`` gives the run's ``model``), else 0. All zeros for a format whose window is per run, or
    a run with no window the preset knows."""
    n = len(req_models)
    out = np.zeros(n, dtype=np.int64)
    if fmt not in PER_MODEL or n == 0:
        return out
    run = harness_preset(fmt, metadata, model, int(rec_prompt.max()))
    if run is None:
        return out
    peak: dict[str | None, int] = {}  # per model, its largest recorded prompt (Claude Code's 1M window shows in it)
    for m, p in zip(req_models, rec_prompt, strict=True):
        peak[m] = max(peak.get(m, 0), int(p))
    windows: dict[tuple[str, object], int] = {}  # per (model, logged window): the window its preset gives, 0 the run's
    for k, (m, line) in enumerate(zip(req_models, req_lines, strict=True)):
        if m is None or m.startswith("<"):  # no model named, or a message the harness made itself ("<synthetic>")
            continue
        logged = logged_window(metadata, line) if fmt != "claude-code" else None
        if (m, logged) not in windows:
            meta = {**metadata, "model_context_window": logged} if fmt != "claude-code" else metadata
            chosen = harness_preset(fmt, meta, m, peak[m])
            differs = chosen is not None and chosen[1].window != run[1].window
            windows[m, logged] = chosen[1].window if differs and chosen is not None else 0
        out[k] = windows[m, logged]
    return out
