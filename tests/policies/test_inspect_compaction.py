"""inspect_ai's compaction rule from a log's plan and version (replay.policies.inspect_compaction) and the window
from inspect_ai's own model database of that version (replay.policies.inspect_models)."""

from __future__ import annotations

import pytest

from replay.policies import Budget, make_policy
from replay.policies.inspect_compaction import PRESET, inspect_ai_preset, strategy_of
from replay.policies.inspect_models import inspect_window
from tests.readers import inspect_fixture as F


def meta(compaction: object, version: str = "0.3.285", applied: tuple[str, ...] = ()) -> dict:
    events = [{"kind": "compaction", "step": 3 + i, "strategy": s} for i, s in enumerate(applied)]
    return {
        "inspect_ai_version": version,
        "compaction_plan": [{"solver": "react", "compaction": compaction}],
        "context_events": events,
    }


@pytest.mark.parametrize(
    ("version", "model", "window"),
    [
        ((0, 3, 285), "openai/gpt-4o", 128_000),
        ((0, 3, 285), "anthropic/claude-sonnet-4-5-20250929", 200_000),
        ((0, 3, 285), "google/gemini-2.5-pro", 1_048_576),
        # 0.3.216's CHANGELOG: gpt-5.4's input_tokens fixed from 778,000 to 922,000 (in the database from 0.3.217)
        ((0, 3, 216), "openai/gpt-5.4", 778_000),
        ((0, 3, 217), "openai/gpt-5.4", 922_000),
        # not read (0.3.261-0.3.284): taken where 0.3.260 and 0.3.285 agree
        ((0, 3, 270), "openai/gpt-4o", 128_000),
        # case-insensitive, "_" as "-" (inspect_ai's lookup index)
        ((0, 3, 285), "anthropic/Claude-Sonnet-4_5", 200_000),
    ],
)
def test_window_from_inspect_database(version: tuple[int, int, int], model: str, window: int) -> None:
    assert inspect_window(version, model).tokens == window


@pytest.mark.parametrize(
    ("version", "model", "why"),
    [
        ((0, 3, 290), "openai/gpt-4o", "was not read"),
        ((0, 3, 200), "openai/gpt-4o", "was not read"),
        ((0, 3, 285), "vllm/Qwen/Qwen3-32B", "not reproduced"),
        ((0, 3, 285), "openai/azure/gpt-4o", "not reproduced"),
        ((0, 3, 285), "openai/gpt-4o-codename-x", "not in inspect_ai 0.3.285's model database"),
        # GLM-5.2 left the database after 0.3.260: a version between differs at its ends
        ((0, 3, 270), "together/zai-org/GLM-5.2", "differs between 0.3.260 and 0.3.285"),
    ],
)
def test_no_window_without_the_database_entry(version: tuple[int, int, int], model: str, why: str) -> None:
    found = inspect_window(version, model)
    assert found.tokens is None and why in found.why, found


def test_summary_threshold_share_and_tokens() -> None:
    name, budget, knobs = inspect_ai_preset(meta(F.summary_params(0.9)), "openai/gpt-4o")  # type: ignore[misc]
    assert (name, budget.window, knobs) == (PRESET, 128_000, {"threshold": 1.0, "context_window": 115_200})
    name, budget, knobs = inspect_ai_preset(meta(F.summary_params(50_000)), "vllm/local")  # type: ignore[misc]
    assert knobs == {"threshold": 1.0, "context_window": 50_000}
    policy = make_policy(name, knobs)
    assert policy.limits(budget.window) == [("threshold", 50_000.0)]


def test_auto_is_scored_where_it_fell_back_to_the_summary() -> None:
    """CompactionAuto (deep_agent()'s "auto" or the object): its threshold is the summary's; the events say which
    delegate ran (metadata.strategy_applied)."""
    auto = {"type": "summary", "threshold": 0.5, "memory": "auto", "instructions": None}
    assert strategy_of(auto) == "CompactionAuto" and strategy_of("auto") == "CompactionAuto"
    chosen = inspect_ai_preset(meta(auto, applied=("CompactionSummary",)), "openai/gpt-4o")
    assert not isinstance(chosen, str) and chosen[2]["context_window"] == 64_000
    chosen = inspect_ai_preset(meta("auto", applied=("CompactionSummary",)), "openai/gpt-4o")
    assert not isinstance(chosen, str) and chosen[2]["context_window"] == 115_200
    native = inspect_ai_preset(meta(auto, applied=("CompactionNative",)), "openai/gpt-4o")
    assert isinstance(native, str) and native.startswith("CompactionNative on openai/gpt-4o: what the provider")
    chosen = inspect_ai_preset(meta(auto, applied=("CompactionNative",)), "anthropic/claude-sonnet-4-5")
    assert not isinstance(chosen, str) and chosen[0] == "inspect-ai-native-anthropic"
    both = inspect_ai_preset(meta(auto, applied=("CompactionNative", "CompactionSummary")), "anthropic/claude-opus-4-1")
    assert isinstance(both, str) and "different strategies" in both
    # the plan's strategy and the events disagree: another agent compacted
    other = inspect_ai_preset(meta(F.summary_params(0.9), applied=("CompactionTrim",)), "openai/gpt-4o")
    assert isinstance(other, str) and "the events say CompactionTrim" in other


@pytest.mark.parametrize(
    ("compaction", "version", "why"),
    [
        ({"type": "trim", "threshold": 0.9, "memory": True, "preserve": 1.5}, "0.3.285", "no preserve share"),
        (
            {"type": "edit", "threshold": 0.9, "memory": True, "keep_thinking_turns": 1, "keep_tool_uses": 3},
            "0.3.285",
            "CompactionEdit",
        ),
        ("CompactionSummary", "0.3.205", "not its threshold"),
        (None, "0.3.285", "compaction=None"),
    ],
)
def test_what_the_log_does_not_give(compaction: object, version: str, why: str) -> None:
    chosen = inspect_ai_preset(meta(compaction, version), "openai/gpt-4o")
    assert isinstance(chosen, str) and why in chosen, chosen


def test_trim_takes_the_logged_preserve() -> None:
    chosen = inspect_ai_preset(
        meta({"type": "trim", "threshold": 0.5, "memory": True, "preserve": 0.7}), "openai/gpt-4o"
    )
    assert chosen == (
        "inspect-ai-trim",
        Budget(128_000, 0),
        {"threshold": 1.0, "context_window": 64_000, "preserve": 0.7},
    )


def test_side_conversation_is_not_the_plans_agent() -> None:
    side = inspect_ai_preset({"span": "scorer", "sample_id": 1}, "openai/gpt-4o")
    assert isinstance(side, str) and side.startswith("a side conversation of the sample")


def test_no_plan_entry_and_a_larger_window() -> None:
    assert "plan has no agent" in str(inspect_ai_preset({"inspect_ai_version": "0.3.285"}, "openai/gpt-4o"))
    big = inspect_ai_preset(meta(F.summary_params(0.9)), "openai/gpt-4o", max_prompt=150_000)
    assert isinstance(big, str) and "passes the database window" in big
    two = meta(F.summary_params(0.9))
    two["compaction_plan"].append({"solver": "react", "compaction": F.summary_params(0.5)})
    assert "different compaction strategies" in str(inspect_ai_preset(two, "openai/gpt-4o"))


def test_redacted_reasoning_in_the_count_is_not_reproduced() -> None:
    """0.3.218 on (to 0.3.260 at least) the handler adds the encrypted reasoning OpenAI's usage leaves out
    (``redacted_reasoning_tokens`` stamped in a message's metadata): the reader flags it, no preset is chosen."""
    flagged = {**meta(F.summary_params(0.9), "0.3.230"), "redacted_reasoning_tokens": True}
    chosen = inspect_ai_preset(flagged, "openai/gpt-4o")
    assert isinstance(chosen, str) and "redacted_reasoning_tokens" in chosen
