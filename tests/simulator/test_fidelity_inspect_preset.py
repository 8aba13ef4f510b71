"""inspect_ai's CompactionSummary, chosen from what the log's plan records (react(compaction=...), 0.3.209 on), fires
within 3 requests of each recorded compaction with the prompt after it within 10%. Main gave inspect_ai logs no
preset ("no preset for this harness and model: the log does not give its window"): every compaction unscored.
Fixtures: tests/readers/inspect_fixture.py ``threshold_agent`` (the handler's rule as inspect_ai's source runs it)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from replay.ingest import ingest
from replay.simulator.fidelity import fidelity_frame
from replay.store import open_store
from tests.readers import inspect_fixture as F

GPT_4O_WINDOW = 128_000  # inspect_ai's model database: openai/gpt-4o


@pytest.fixture(scope="module")
def tok() -> Any:
    from replay.tokens.loading import load_tokenizer

    return load_tokenizer("o200k")


def fidelity(root: Path, tok: Any, logs: dict[str, tuple[dict, dict | None, str]], model: str = "openai/gpt-4o"):
    """Event rows of ``fidelity`` over logs {file name: (sample, plan, inspect_ai version)}."""
    from replay.tokens.counting import count_items

    (root / "logs").mkdir()
    for name, (sample, plan, version) in logs.items():
        write = F.write_eval if name.endswith(".eval") else F.write_json
        write(root / "logs" / name, [sample], plan=plan, model=model, version=version)
    con = open_store(root / "s.duckdb")
    ingest(con, [root / "logs"])
    count_items(con, tok)
    rows = fidelity_frame(con, tok.tokenizer_id).to_dicts()
    con.close()
    return [r for r in rows if r["kind"] == "compaction"]


@pytest.fixture(scope="module")
def share_rows(tmp_path_factory, tok) -> list[dict]:
    """threshold=0.05 of gpt-4o's 128,000: compactions past 6,400 tokens; .json and .eval."""
    sample = F.threshold_agent(tok.count, int(0.05 * GPT_4O_WINDOW))
    plan = F.react_plan(F.summary_params(0.05))
    logs = {"agent.json": (sample, plan, F.VERSION), "agent.eval": (sample, plan, F.VERSION)}
    return fidelity(tmp_path_factory.mktemp("share"), tok, logs)


def test_preset_fires_at_every_compaction(share_rows: list[dict]) -> None:
    assert len(share_rows) == 8  # four compactions in each of the two logs
    for r in share_rows:
        assert r["preset"] == f"inspect-ai-summary@{GPT_4O_WINDOW}" and r["harness_version"] == F.VERSION, r
        assert r["reason"] is None and r["within"] is True, r
        assert abs(r["simulated_request"] - r["recorded_request"]) <= 3, r
        assert abs(r["simulated_after"] - r["recorded_after"]) / r["recorded_after"] <= 0.10, r


def test_token_threshold_and_negatives(tmp_path: Path, tok) -> None:
    """A threshold above 1 is a token count (no window needed); a plan whose threshold is not the one the run
    compacted at misses (the preset is what the log says, not fitted); a log without the strategy's arguments, or
    from before 0.3.209 (class name only), is unscored and says what is missing, and so is a forced compaction
    (main: "manual, not a threshold")."""
    sample = F.threshold_agent(tok.count, 7_000)
    forced = copy.deepcopy(sample)  # react() compacts at once when the model stops with model_length
    for e in forced["events"]:
        if e["event"] == "compaction":
            e["metadata"]["trigger"] = "forced"
    logs = {
        "forced.json": (forced, F.react_plan(F.summary_params(7_000)), F.VERSION),
        "tokens.json": (sample, F.react_plan(F.summary_params(7_000)), F.VERSION),
        "other.json": (sample, F.react_plan(F.summary_params(0.2)), F.VERSION),
        "noplan.json": (sample, None, F.VERSION),
        "old.json": (sample, F.react_plan("CompactionSummary"), "0.3.205"),
    }
    rows = fidelity(tmp_path, tok, logs)
    by_file: dict[str, list[dict]] = {}
    for r in rows:
        by_file.setdefault(r["file"], []).append(r)
    assert all(len(v) == 4 for v in by_file.values()) and len(by_file) == 5
    assert all(r["within"] is True and r["preset"] == "inspect-ai-summary@1000000000" for r in by_file["tokens.json"])
    # 0.2 of the window (25,600) is never reached: the preset makes no compaction to match
    assert all(r["within"] is not True and r["simulated_request"] is None for r in by_file["other.json"])
    assert all(
        r["within"] is None and r["reason"].startswith("forced, not the threshold") for r in by_file["forced.json"]
    )
    for r in by_file["noplan.json"]:
        assert r["within"] is None and "plan has no agent with a compaction argument" in r["reason"], r
    for r in by_file["old.json"]:
        assert r["within"] is None and "not its threshold" in r["reason"] and "0.3.209" in r["reason"], r


def test_anthropic_native_compaction(tmp_path: Path, tok) -> None:
    """CompactionNative on Anthropic (0.04 of claude-sonnet-4-5's 200,000 = 8,000): the system messages and the
    provider's compaction block follow, the input is not kept. CompactionAuto events of a version that does not log
    which delegate ran are native by the block the next request sends."""
    model = "anthropic/claude-sonnet-4-5"
    sample = F.threshold_agent(tok.count, 8_000, native=True, model=model)
    native = {"type": "summary", "threshold": 0.04, "memory": False, "instructions": None}
    auto = copy.deepcopy(sample)
    for e in auto["events"]:
        if e["event"] == "compaction":
            e["metadata"]["strategy"] = "CompactionAuto"
    logs = {
        "native.json": (sample, F.react_plan(native), F.VERSION),
        "auto.json": (auto, F.react_plan({**native, "memory": "auto"}), "0.3.250"),
    }
    rows = fidelity(tmp_path, tok, logs, model)
    assert len(rows) == 4  # two compactions in each log
    for r in rows:
        assert r["preset"] == "inspect-ai-native-anthropic@200000" and r["within"] is True, r


def test_openai_native_is_not_reproduced(tmp_path: Path, tok) -> None:
    sample = F.threshold_agent(tok.count, 8_000, native=True)
    native = {"type": "summary", "threshold": 8_000, "memory": False, "instructions": None}
    rows = fidelity(tmp_path, tok, {"native.json": (sample, F.react_plan(native), F.VERSION)})
    assert rows and all(r["within"] is None and "CompactionNative on openai/gpt-4o" in r["reason"] for r in rows)


@pytest.mark.parametrize("preserve", [0.8, 0.5])
def test_trim_compaction(tmp_path: Path, tok, preserve: float) -> None:
    """CompactionTrim (no summary): the newest ``preserve`` share of the messages after the system and input ones
    stays, again while past the limit; each trim is matched by the preset's (replay.policies.trim_messages)."""
    sample = F.threshold_agent(tok.count, 6_400, preserve=preserve)
    trim = {"type": "trim", "threshold": 0.05, "memory": True, "preserve": preserve}
    rows = fidelity(tmp_path, tok, {"trim.json": (sample, F.react_plan(trim), F.VERSION)})
    assert len(rows) >= 6
    for r in rows:
        assert r["preset"] == "inspect-ai-trim@128000" and r["reason"] is None and r["within"] is True, r
        # the trim keeps a call whose result comes after it: the result is the original call's partner, not its
        # re-sent copy's (main: +7% at 0.5, -9% at 0.8, the result kept without its call or cut with the copy)
        assert abs(r["simulated_after"] - r["recorded_after"]) / r["recorded_after"] <= 0.01, r
