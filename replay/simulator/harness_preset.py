"""The preset of the harness that recorded a run, with the window it ran against (``replay fidelity`` replays it;
``replay.simulator.request_windows`` takes each request's window from the same choice)."""

from __future__ import annotations

from replay.policies.base import Budget
from replay.policies.cline_sdk_models import cline_sdk_input_limit
from replay.policies.inspect_compaction import inspect_ai_preset
from replay.policies.presets import (
    claude_code_preset,
    cline_window,
    codex_window,
    copilot_prompt_limit,
    gemini_token_limit,
    sdk_read_state,
)
from replay.tokens.usage_metadata import turn_attachments

BIG = Budget(10**9, 0)


def harness_preset(
    fmt: str, metadata: dict, model: str | None = None, max_prompt: int = 0
) -> tuple[str, Budget, dict] | None:
    """The preset of the harness that recorded a run, with the window it ran against and the knobs its model sets;
    None when the log does not say enough (a Codex log with neither ``model_context_window`` nor a model of a known
    family, a Claude Code log without a version). ``model``: the run's model (the Codex window by family, Gemini CLI
    and Copilot CLI limits, Claude Code's output reserve are per model); ``max_prompt``: the run's largest recorded
    prompt (Claude Code: past 200,000 the run had the 1M window; replay.policies.presets.claude_code_preset)."""
    if fmt == "claude-code":
        surface = metadata.get("entrypoint") if isinstance(metadata.get("entrypoint"), str) else None
        chosen = claude_code_preset(str(metadata.get("cc_version") or ""), model, max_prompt > 200_000, surface)
        if chosen is None:
            return None
        name, params, window = chosen
        if turn_attachments(metadata):  # the SDK loop rebuilds its read-file state per turn
            params = {**params, **sdk_read_state(str(metadata.get("cc_version") or ""))}
        return name, Budget(window, 0), params
    if fmt in ("codex-rollout", "codex-tui"):
        limit = codex_window(metadata.get("model_context_window"), model)
        return ("codex-rs", Budget(limit, 0), {}) if limit else None
    if fmt == "gemini-cli":
        return "gemini-cli", Budget(gemini_token_limit(model), 0), {}
    if fmt == "copilot-cli":  # the window the log says its calls ran against (1.0.102 on), else the CLI's table
        logged = metadata.get("prompt_limit")
        limit = logged if type(logged) is int and logged > 0 else copilot_prompt_limit(model)
        return "copilot-cli", Budget(limit, 0), {}
    if fmt == "cline":
        provider = metadata.get("provider")
        limit = cline_window(model, provider if isinstance(provider, str) else None)
        return ("cline", Budget(limit, 0), {}) if limit else None
    if fmt == "cline-sdk":
        limit = cline_sdk_input_limit(metadata.get("provider"), model)
        return ("cline-sdk", Budget(limit, 0), {}) if limit else None
    if fmt == "openhands":
        return "openhands-v0", BIG, {}
    if fmt == "openhands-v1":
        knobs = recorded_condenser(metadata)
        return None if knobs is None else ("openhands-v1", BIG, knobs)
    if fmt == "swe-agent":
        return "swe-agent-last-n", BIG, {}
    if fmt == "inspect-ai":
        found = inspect_ai_preset(metadata, model, max_prompt)
        return None if isinstance(found, str) else found
    return None


def missing_preset(fmt: str, metadata: dict, model: str | None = None, max_prompt: int = 0) -> str:
    """Why ``harness_preset`` gives a run no preset: what its log does not record."""
    if fmt == "inspect-ai":
        found = inspect_ai_preset(metadata, model, max_prompt)
        if isinstance(found, str):
            return f"no preset: {found}"
    return "no preset for this harness and model: the log does not give its window"


def recorded_condenser(metadata: dict) -> dict | None:
    """The knobs an OpenHands V1 log's own condenser settings set (``runs.metadata.condenser``, from
    ``base_state.json``): ``max_size`` and ``keep_first`` of an LLMSummarizingCondenser, which the SDK's class
    defaults (120/4, then 240/2 from 2025-12-28) or the agent-server settings may give instead of the default
    agent's 80/4, its ``max_tokens`` (software-agent-sdk 3bd0250ab, 2025-12-23 on; None, or no such field before,
    is no token limit) and its ``minimum_progress`` (b9c0e1f6a, v1.11.5 on, always written: no such field is an SDK
    before it, which made any condensation); {} when the log records none. None when it records a condenser of
    another kind, which the preset does not replay: a NoOpCondenser never condenses, a PipelineCondenser's steps
    are not recorded, and the AgentResetCondenser and NotesRetrievalCondenser of sources newer than 611629e6
    condense on the agent's ``new_context`` call or by their own rules."""
    c = metadata.get("condenser")
    if not isinstance(c, dict):
        return {}
    if c.get("kind") != "LLMSummarizingCondenser":
        return None
    size, first = c.get("max_size"), c.get("keep_first")
    if type(size) is not int or type(first) is not int or not 0 <= first < size // 2 - 1:
        return {}  # not settings the SDK accepts (keep_first < max_size // 2 leaves room for the tail)
    knobs: dict[str, int | float] = {"max_size": size, "keep_first": first}
    tokens = c.get("max_tokens")  # the reader keeps only an integer (0, like null, set no limit until c11602d12)
    if type(tokens) is int and tokens > 0:
        knobs["max_tokens"] = tokens
    progress = c.get("minimum_progress")  # the SDK accepts 0 < share < 1
    if isinstance(progress, int | float) and not isinstance(progress, bool) and 0 < progress < 1:
        knobs["minimum_progress"] = float(progress)
    return knobs
