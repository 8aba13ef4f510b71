"""Why a recorded Codex compaction the codex-rs preset missed came early: a limit the rollout does not record.

codex-rs compacts when its count (the last response's total tokens plus what was added since) reaches
``ModelInfo::auto_compact_token_limit``: 0.9 of the model's window unless ``model_auto_compact_token_limit`` in
config.toml (or a custom model catalog's ``auto_compact_token_limit``) sets a lower one, which no rollout line
records (turn_context and task_started log the model, its comp_hash and ``model_context_window``, not the limit). The
other causes it has are in the log and the preset replays them: a model with a smaller window
(``CompactionReason::ModelDownshift``) through the turn's logged window, a model with another ``comp_hash``
(``CompHashChanged``, ``replay.simulator.request_windows``). So a compaction the preset did not make where the count
before it was still below the preset's limit was set off by a limit it cannot see; fidelity says so.
"""

from __future__ import annotations

from replay.policies import Budget
from replay.run_arrays import RunArrays
from replay.simulator.request_windows import preset_limits

CODEX_PRESETS = ("codex-rs",)


def unlogged_limit_reason(run: RunArrays, row: dict, preset: tuple[str, Budget, dict] | None) -> str | None:
    """For a scored Codex compaction the preset missed (``row``: ``event_rows``'s), why: the recorded count before
    it (the last request's prompt and output) below the preset's limit there. None when the preset is not
    codex-rs's, the count is not recorded, the model changed there, or the count had reached the limit (then the miss
    is the preset's)."""
    k = row.get("recorded_request")
    if preset is None or preset[0] not in CODEX_PRESETS or not isinstance(k, int) or k < 1:
        return None
    last = k - 1
    if last >= len(run.rec_prompt) or run.rec_prompt[last] <= 0:
        return None
    if k < len(run.req_model) and run.req_model[k] != run.req_model[last]:
        return None  # a model switch: a logged cause the preset should have replayed
    output = max(int(run.rec_output[last]), 0) if last < len(run.rec_output) else 0
    count = int(run.rec_prompt[last]) + output
    own = run.req_limit[last] if last < len(run.req_limit) else 0.0
    limit = float(own) if own > 0 else preset_limits(preset)[1]
    window = int(run.req_window[last]) if last < len(run.req_window) and run.req_window[last] > 0 else 0
    window = window or int(preset[1].window)
    if count <= 0 or limit <= 0 or count >= limit:
        return None
    return (
        f"compacted at {count:,} tokens ({count / window:.2f} of the {window:,} window), below codex-rs's limit "
        f"{limit:,.0f}, with no model or comp_hash change logged: a lower model_auto_compact_token_limit set in "
        "config.toml or a model catalog, which the rollout does not record"
    )
