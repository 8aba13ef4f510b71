"""inspect_ai's compaction rule for one run, from what its eval log records (or why the log does not give it).

Read in inspect_ai's source (model/_compaction/, agent/_react.py, _util/registry.py; 0.3.209 to 0.3.285): an agent
compacts only when given a strategy (``react(compaction=...)``, default None; ``deep_agent()`` defaults to
``"auto"``, i.e. ``CompactionAuto()``). Before each model call the handler counts the prompt about to be sent (the
last call's ``input_context_tokens`` plus its own count of the messages since; 0.3.178 on) and compacts past the
limit (``tokens > limit``): ``int(threshold)`` for an int or a threshold above 1.0, else ``int(threshold x
window)``, the window being the model's input capacity in inspect_ai's model database
(replay.policies.inspect_models). Every strategy's threshold defaults to 0.9. From 0.3.218 (at least to 0.3.260)
the count also adds the encrypted reasoning OpenAI's usage leaves out (``redacted_reasoning_tokens`` in a message's
metadata): such a run gets no preset.

``CompactionSummary`` sends the system messages, the sample's input messages and one summary after them (a later
compaction summarises from the previous summary on); ``CompactionAuto`` tries the provider's native compaction and
falls back to the summary, and the compaction event says which ran (``metadata.strategy_applied``).
``CompactionNative`` on Anthropic (``AnthropicAPI.compact``) sends the system messages, the assistant message
holding the provider's compaction block and a user message "Please continue working.": the input messages are not
kept. ``CompactionTrim`` keeps the newest ``preserve`` share of the messages after those (replay.policies.
trim_messages). On OpenAI the native compacted output is the server's (which user messages it keeps is not in
inspect_ai's source), and ``CompactionEdit`` clears old tool results and thinking by provider-dependent rules: these
two are not reproduced.

The plan in the log records the agent's arguments from 0.3.209 (``_repr_params_``: type, threshold, memory and the
strategy's own fields; "Capture compaction strategy params in eval log", CHANGELOG 0.3.209); earlier logs have
the strategy's class name only. A compaction configured inside a solver of the task's own (or through an agent
bridge) is not in the plan, nor is a ``set_model_info()`` window.
"""

from __future__ import annotations

from typing import Any

from replay.policies.base import Budget
from replay.policies.inspect_models import inspect_window
from replay.readers.inspect_usage import parse_version

PARAMS_LOGGED = (0, 3, 209)
DEFAULT_THRESHOLD = 0.9  # CompactionStrategy(threshold=0.9), CompactionAuto(threshold=0.9)
SUMMARY, NATIVE = "CompactionSummary", "CompactionNative"
AUTO, AUTO_OR_NATIVE = "CompactionAuto", "CompactionAuto or CompactionNative"
TRIM = "CompactionTrim"
PRESET, NATIVE_PRESET, TRIM_PRESET = "inspect-ai-summary", "inspect-ai-native-anthropic", "inspect-ai-trim"
# what the events may say ran under each configured strategy (CompactionAuto: a delegate)
COMPATIBLE = {
    SUMMARY: {SUMMARY},
    AUTO: {SUMMARY, NATIVE},
    AUTO_OR_NATIVE: {SUMMARY, NATIVE},
    TRIM: {TRIM},
    "CompactionEdit": {"CompactionEdit"},
}
BIG = Budget(10**9, 0)


def strategy_of(config: Any) -> str | None:
    """The strategy class a logged ``compaction`` argument names; "CompactionAuto or CompactionNative" when its
    fields fit both; None when it is not a strategy."""
    if config == "auto":
        return AUTO
    if isinstance(config, str):
        return config
    if not isinstance(config, dict):
        return None
    keys = set(config)
    if "prompt" in keys:
        return SUMMARY
    if "preserve" in keys:
        return TRIM
    if "keep_tool_uses" in keys:
        return "CompactionEdit"
    if config.get("memory") == "auto":
        return AUTO
    if "instructions" in keys:
        return AUTO_OR_NATIVE
    return None


def applied_strategy(event: dict) -> str | None:
    """The strategy that made a recorded compaction: the event's (``strategy_applied``, else ``strategy``); for a
    ``CompactionAuto`` event that does not say (before ``strategy_applied``, which 0.3.260 does not log yet), native
    when the next request sends the provider's compaction block, else the summary when it sends inspect_ai's."""
    if event.get("kind") != "compaction" or not isinstance(event.get("strategy"), str):
        return None
    if event["strategy"] != AUTO:
        return event["strategy"]
    if event.get("summary_native"):
        return NATIVE
    return SUMMARY if event.get("summary_seq") is not None else None


def _threshold(config: Any) -> int | float | None:
    if config == "auto":
        return DEFAULT_THRESHOLD
    value = config.get("threshold") if isinstance(config, dict) else None
    if type(value) is int and value > 0 or type(value) is float and value > 0:
        return value
    return None


def inspect_ai_preset(metadata: dict, model: str | None, max_prompt: int = 0) -> tuple[str, Budget, dict] | str:
    """(preset, budget, knobs) of inspect_ai's compaction in a run, or why the log does not give it."""
    if "span" in metadata and "inspect_ai_version" not in metadata:
        return (
            "a side conversation of the sample (another model role, a subagent, a scorer): the plan's compaction "
            "argument is the main agent's; this one's is not logged"
        )
    version = parse_version(metadata.get("inspect_ai_version"))
    if version is None:
        return "the log names no inspect_ai version"
    plan = metadata.get("compaction_plan")
    if not isinstance(plan, list) or not plan:
        return (
            "the log's plan has no agent with a compaction argument (react(), deep_agent()): the strategy and "
            "threshold were set where the log does not record them (a solver of the task's own, an agent bridge)"
        )
    configs = [p.get("compaction") for p in plan if isinstance(p, dict)]
    if any(c != configs[0] for c in configs):
        return "the plan's agents set different compaction strategies: which one compacted is not logged"
    config = configs[0]
    if config is None:
        return "the plan's agent has compaction=None: these compactions came from elsewhere (not logged)"
    if version < PARAMS_LOGGED and config != "auto":
        return (
            f"inspect_ai {'.'.join(map(str, version))} logs the compaction strategy ({config}) but not its "
            "threshold (strategy arguments are logged from 0.3.209)"
        )
    configured = strategy_of(config)
    applied = {applied_strategy(e) for e in metadata.get("context_events") or [] if isinstance(e, dict)} - {None}
    if len(applied) > 1:
        return f"the run's compactions ran different strategies ({', '.join(sorted(map(str, applied)))})"
    if applied and not applied <= COMPATIBLE.get(configured or "", set()):
        return f"the plan sets {configured}, the events say {applied.pop()}: another agent's compaction"
    kept = applied.pop() if applied else configured
    if kept == NATIVE and not (model or "").startswith("anthropic/"):
        return f"{NATIVE} on {model}: what the provider's compaction keeps is not in inspect_ai's source"
    if kept in (AUTO, AUTO_OR_NATIVE):
        return f"{kept} with no compaction logged: whether native or summary compaction would run is not known"
    if kept not in (SUMMARY, NATIVE, TRIM):
        return f"{kept}: what this strategy keeps is not reproduced (CompactionSummary's, CompactionTrim's and "
        "Anthropic's native are)"
    logged = config.get("preserve") if isinstance(config, dict) else None
    preserve = float(logged) if isinstance(logged, (int, float)) and not isinstance(logged, bool) else -1.0
    if kept == TRIM and not 0 <= preserve <= 1:
        return f"the logged CompactionTrim has no preserve share in [0, 1]: {logged}"
    if metadata.get("redacted_reasoning_tokens"):
        return (
            "inspect_ai's count adds the encrypted reasoning its messages' redacted_reasoning_tokens stamp (OpenAI "
            "Responses, store=false; 0.3.218 on): not reproduced"
        )
    threshold = _threshold(config)
    if threshold is None:
        return f"the logged compaction argument has no threshold: {config}"
    window = None
    if isinstance(threshold, float) and threshold <= 1.0:
        found = inspect_window(version, model or "")
        if found.tokens is None:
            return f"the threshold is {threshold} of the window, and {found.why}"
        window = found.tokens
        if max_prompt > window:
            return f"a recorded prompt ({max_prompt}) passes the database window ({window}): another window applied"
        limit = int(threshold * window)
    else:
        limit = int(threshold)
    budget = Budget(window, 0) if window else BIG
    knobs: dict[str, float | int] = {"threshold": 1.0, "context_window": limit}
    if kept == TRIM:
        return TRIM_PRESET, budget, {**knobs, "preserve": preserve}
    return NATIVE_PRESET if kept == NATIVE else PRESET, budget, knobs
