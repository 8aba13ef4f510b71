"""Presets chosen from what a log records (harness, model, window), as ``replay fidelity`` chooses them, and the
Gemini CLI preset's split of the history (chatCompressionService: the newest 30% of the characters stay)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from replay.policies import Budget, make_compiled, make_policy
from replay.policies.cline import cline_max_allowed
from replay.policies.presets import PRESETS, copilot_prompt_limit, gemini_token_limit
from replay.simulator.caches import make_cache
from replay.simulator.fidelity import with_reported_usage
from replay.simulator.harness_preset import harness_preset
from replay.simulator.load import load_runs
from replay.simulator.run import simulate_run

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


@pytest.mark.parametrize(
    ("fmt", "metadata", "model", "expected"),
    [
        # codex-rs: the rollout's model_context_window is 95% of the model's window; the limit is 0.9 of the window
        (
            "codex-rollout",
            {"model_context_window": 258_400, "originator": "codex_cli_rs"},
            "gpt-5.3-codex",
            ("codex-rs", 272_000),
        ),
        ("codex-rollout", {"model_context_window": 0}, "gpt-5.6-luna", ("codex-rs", 272_000)),  # by model family
        ("codex-tui", {}, "o4-mini", ("codex-rs", 200_000)),
        ("codex-rollout", {}, "mindflow-custom", None),  # neither a window in the log nor a known family: no preset
        ("gemini-cli", {}, "gemini-3-flash-preview", ("gemini-cli", 1_048_576)),
        ("gemini-cli", {}, "gemma-4-31b-it", ("gemini-cli", 256_000)),
        ("copilot-cli", {}, "claude-sonnet-4.6", ("copilot-cli", 168_000)),
        ("copilot-cli", {}, "some-new-model", ("copilot-cli", 128_000)),
        ("cline", {}, "claude-opus-4-6", ("cline", 200_000)),  # Cline's table: every Claude model 200k
        ("cline", {}, "claude-opus-4-6:1m", ("cline", 1_000_000)),
        ("cline", {}, "some-local-model", None),  # a window the log does not let us know: no preset
        # the OpenAI-compatible provider takes the model info the user configures: 128k by default, whatever the name
        ("cline", {"provider": "openai"}, "claude_4_5_opus", ("cline", 128_000)),
        # Cline 4.x (SDK): the catalog's input limit per provider; "cline" takes OpenRouter's entries
        ("cline-sdk", {"provider": "anthropic"}, "claude-haiku-4-5", ("cline-sdk", 200_000)),
        ("cline-sdk", {"provider": "anthropic"}, "claude-sonnet-4-5", ("cline-sdk", 1_000_000)),
        ("cline-sdk", {"provider": "cline"}, "openai/gpt-5.2", ("cline-sdk", 272_000)),  # maxInputTokens < window
        ("cline-sdk", {"provider": "cline"}, "claude-haiku-4-5", None),  # not the id that provider lists
        ("cline-sdk", {"provider": "lmstudio"}, "qwen3-coder-30b", None),
    ],
)
def test_preset_from_the_log(fmt, metadata, model, expected):
    got = harness_preset(fmt, metadata, model)
    assert (got[0], got[1].window) == expected if expected else got is None


def test_openhands_v1_preset_takes_the_recorded_condenser() -> None:
    """base_state.json records the agent's condenser (openhands-sdk LLMSummarizingCondenser: max_size 240,
    keep_first 2 as the class defaults from 2025-12-28): the preset replays those, not the default agent's 80/4."""
    recorded = {"condenser": {"kind": "LLMSummarizingCondenser", "max_size": 240, "keep_first": 2, "max_tokens": 0}}
    assert harness_preset("openhands-v1", recorded)[2] == {"max_size": 240, "keep_first": 2}
    assert harness_preset("openhands-v1", {})[2] == {}
    bad = {"condenser": {"kind": "LLMSummarizingCondenser", "max_size": 8, "keep_first": 4}}
    assert harness_preset("openhands-v1", bad)[2] == {}


@pytest.mark.parametrize("kind", ["NoOpCondenser", "PipelineCondenser", "AgentResetCondenser"])
def test_openhands_v1_log_with_another_condenser_has_no_preset(kind: str) -> None:
    """base_state.json records the agent's condenser by its ``kind``; one the preset does not replay (a NoOpCondenser
    never condenses; a pipeline's steps are not recorded; the AgentResetCondenser of sources newer than 611629e6
    condenses when the agent calls ``new_context``) gets no preset, not the default agent's 80/4."""
    assert harness_preset("openhands-v1", {"condenser": {"kind": kind}}) is None


def test_source_limits():
    assert [cline_max_allowed(w) for w in (64_000, 128_000, 200_000, 1_000_000)] == [37_000, 98_000, 160_000, 960_000]
    assert PRESETS["codex-rs"].params["threshold"] * 272_000 == pytest.approx(244_800)  # (window * 9) / 10
    assert PRESETS["gemini-cli"].params["threshold"] == 0.5  # DEFAULT_COMPRESSION_TOKEN_THRESHOLD, 0.17 on
    assert PRESETS["copilot-cli"].params["threshold"] == 0.8  # COPILOT_BACKGROUND_COMPACTION_THRESHOLD default
    assert gemini_token_limit(None) == 1_048_576 and copilot_prompt_limit("gpt-5.2") == 272_000


def test_gemini_preset_keeps_the_newest_30_percent(tmp_path: Path) -> None:
    """On the hand-made session the preset fires where the previous prompt passed half the window and keeps the
    history from the same user message as the CLI did; the prompt after differs from the recorded one by the
    summary sizes only (the log does not give the summary's); the recorded policy reproduces the recorded one."""
    from readers.gemini_fixture import PREFIX, SUMMARY, write_json

    from replay.ingest import ingest
    from replay.store import open_store

    path, prompts, facts = write_json(tmp_path / "session-p.json")
    con = open_store(tmp_path / "p.duckdb")
    ingest(con, [path])
    (run,) = load_runs(con, None, overhead=PREFIX)
    k = facts["compressed_at"]
    window = prompts[k - 1] + prompts[k - 2]  # half of it lies between the last two prompts before the note
    cols, _ = simulate_run(run, make_policy("gemini-cli"), make_cache("none"), Budget(window))
    assert np.flatnonzero(cols["summarised"]).tolist() == [k]
    expected = prompts[k] - SUMMARY + PRESETS["gemini-cli"].params["summary_tokens"]
    assert abs(cols["prompt_tokens"][k] - expected) <= 0.03 * expected
    recorded, _ = simulate_run(run, make_policy("recorded"), make_cache("none"), Budget(window))
    # the recorded policy drops what the note's split dropped; calibration's offset at the event stands in for the
    # summary the log does not hold
    assert abs(recorded["prompt_tokens"][k] - prompts[k]) <= 0.01 * prompts[k]


def test_gemini_preset_cuts_old_large_kept_results(tmp_path: Path) -> None:
    """Two 120k-character reads kept by the split: the preset cuts the older to 40,000 characters as the CLI did, so
    its prompt after is the recorded one (a server counting four characters a token) but for the summary sizes."""
    import json

    from replay.ingest import ingest
    from replay.store import open_store
    from tests.readers.gemini_fixture import message as msg
    from tests.readers.gemini_fixture import read_call

    def gemini(mid: str, prompt: int, *calls) -> dict:
        tokens = {"input": prompt, "output": 10, "cached": 0, "thoughts": 0}
        return msg(mid, "gemini", "", toolCalls=list(calls), tokens=tokens, model="gemma-4-31b-it")

    prefix, summary = 5_000, 1_000  # the server's: 200 + 30,000 tokens of reads, then 10,000 + 30,000 kept
    prompts = [prefix + 5, prefix + 215, prefix + 30_225, prefix + summary + 40_020]
    lines = [
        {"sessionId": "s", "projectHash": "p", "startTime": "2026-04-01T00:00:00.000Z"},
        msg("u0", "user", [{"text": "look around"}]),
        gemini("g0", prompts[0], read_call("a", 800)),
        msg("u1", "user", [{"text": "now the big files"}]),
        gemini("g1", prompts[1], read_call("b", 120_000)),
        gemini("g2", prompts[2], read_call("c", 120_000)),
        msg("n", "info", "Context compressed from 14% to 18%."),
        gemini("g3", prompts[3]),
    ]
    path = tmp_path / "session-cut.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    con = open_store(tmp_path / "cut.duckdb")
    ingest(con, [path])
    (run,) = load_runs(con, None)
    window = 60_000  # half of it lies between the prompts of requests 1 and 2
    cols, _ = simulate_run(run, make_policy("gemini-cli"), make_cache("none"), Budget(window))
    assert np.flatnonzero(cols["summarised"]).tolist() == [3]
    expected = prompts[3] - summary + PRESETS["gemini-cli"].params["summary_tokens"]
    assert abs(cols["prompt_tokens"][3] - expected) <= 0.03 * expected
    whole, _ = simulate_run(
        run,
        make_policy("gemini-cli", {"cut_results_after": 0, "microcompact": False}),
        make_cache("none"),
        Budget(window),
    )
    assert whole["prompt_tokens"][3] - cols["prompt_tokens"][3] > 19_000  # the 80,000 characters cut off


def test_gemini_preset_masks_old_tool_outputs(tmp_path: Path) -> None:
    """Gemini CLI's tool output masking (toolOutputMaskingService, on by default from 0.30): before each request
    the history it already holds (not the function responses being sent) keeps the newest 50,000 estimated tokens
    of results, the one crossing that line and all older ones are masked once they add up to 30,000. One 40,000-
    character (10,000-token) read per request: at request 9 the 8 older results hold 80,000, the oldest 3 go;
    at 12 the next 3. ``gemini-cli-0.29`` has no masking."""
    import json

    from replay.ingest import ingest
    from replay.store import open_store
    from tests.readers.gemini_fixture import message as msg
    from tests.readers.gemini_fixture import read_call

    lines = [{"sessionId": "s", "projectHash": "p"}, msg("u0", "user", [{"text": "read all"}])]
    for k in range(14):
        tokens = {"input": 1_000 + 10_000 * k, "output": 10, "cached": 0, "thoughts": 0}
        call = read_call(f"c{k}", 40_000)
        lines.append(msg(f"g{k}", "gemini", "", toolCalls=[call], tokens=tokens, model="gemini-2.5-pro"))
    path = tmp_path / "session-m.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    con = open_store(tmp_path / "m.duckdb")
    ingest(con, [path])
    (run,) = load_runs(con, None)
    masked, _ = simulate_run(run, make_policy("gemini-cli"), make_cache("none"), Budget(1_048_576))
    whole, _ = simulate_run(run, make_policy("gemini-cli-0.29"), make_cache("none"), Budget(1_048_576))
    freed = whole["prompt_tokens"] - masked["prompt_tokens"]
    assert np.flatnonzero(np.diff(freed, prepend=0) > 0).tolist() == [9, 12]
    snippet = PRESETS["gemini-cli"].params["micro_note_chars"]
    # three 10,000-token results, each now a snippet of about 700 characters (3 to 5 characters a token)
    assert 30_000 - 3 * snippet // 3 <= freed[9] <= 30_000 - 3 * snippet // 5


def test_claude_code_2_1_38_clears_answered_user_images(tmp_path: Path) -> None:
    """The hand-written 2.1.41 session: a screenshot pasted before request 1 is answered by it; the preset sends it
    as "[image]" from request 2 on and clears (a microcompact) at 2 and again at 3, the next user turn's first
    request, where Claude Code logged its boundaries. The image a Read result holds stays; claude-code-2 (2.1.21 to
    2.1.37) clears none."""
    from replay.ingest import ingest
    from replay.policies.kernel import SUMMARY_CLEARED
    from replay.policies.presets import claude_code_preset
    from replay.policies.view import ORIGINAL, PLACEHOLDER
    from replay.run_arrays import KIND_CODE
    from replay.simulator.kernels.driver import T_SUMMARISED
    from replay.simulator.kernels.trace import trace_run, views_of
    from replay.store import open_store

    assert claude_code_preset("2.1.41", "claude-sonnet-4-5-20250929")[0] == "claude-code-2.1.38"
    assert claude_code_preset("2.1.37", "claude-sonnet-4-5-20250929")[0] == "claude-code-2"
    assert claude_code_preset("2.1.68", "claude-sonnet-4-5-20250929")[0] == "claude-code-2.1.38"
    con = open_store(tmp_path / "i.duckdb")
    ingest(con, [Path(__file__).parents[1] / "readers" / "fixtures" / "cc-image-microcompact.jsonl"])
    (run,) = load_runs(con, None)
    pasted, held = np.flatnonzero(run.kind == KIND_CODE["image"])
    for name, cleared_at in (("claude-code-2.1.38", [2, 3]), ("claude-code-2", [])):
        trace = trace_run(run, make_compiled(name), Budget(200_000))
        assert np.flatnonzero(trace.columns[:, T_SUMMARISED] & SUMMARY_CLEARED).tolist() == cleared_at
        vs = views_of(run, make_policy(name), Budget(200_000)).views
        assert [int(v.forms[pasted]) for v in vs[1:]] == [ORIGINAL] + [PLACEHOLDER if cleared_at else ORIGINAL] * 2
        assert all(v.forms[held] == ORIGINAL for v in vs[2:])


def test_claude_code_2_1_74_estimates_the_last_responses_blocks_again(tmp_path: Path) -> None:
    """The hand-written 2.1.143 session (the shape of Eduardodmb/ClaudeWork 6277bf85): a response of four records
    (thinking, text, two Edit calls; one message id) at a prompt of 165,500, its results, then an automatic
    compaction. The last usage and the results since at chars/4 fall short of 167,000; from 2.1.69 Claude Code's
    estimate starts after the response's first record, so its later blocks count again: the text alone to 2.1.73
    (not enough here), the Edit calls too from 2.1.74, which compacts where the log's boundary is (request 1)."""
    from replay.ingest import ingest
    from replay.policies.presets import claude_code_preset
    from replay.simulator.kernels.trace import views_of
    from replay.store import open_store

    assert claude_code_preset("2.1.143", "claude-sonnet-4-6")[0] == "claude-code-2.1.74"
    assert claude_code_preset("2.1.73", "claude-sonnet-4-6")[0] == "claude-code-2.1.69"
    con = open_store(tmp_path / "t.duckdb")
    ingest(con, [Path(__file__).parents[1] / "readers" / "fixtures" / "cc-reply-tail-compaction.jsonl"])
    (loaded,) = load_runs(con, None)
    recorded, _ = simulate_run(loaded, make_policy("recorded"), make_cache("anthropic"), Budget(200_000))
    run = with_reported_usage(loaded, recorded)  # the trigger reads the usage the server reported, as in fidelity

    def fired(name: str, params: dict | None = None) -> list[int]:
        return [v.k for v in views_of(run, make_policy(name, params), Budget(200_000)).views if v.summarised]

    assert fired("claude-code-2.1.74") == [1]
    assert fired("claude-code-2.1.69") == []
    assert fired("claude-code-2.1.74", {"trigger_on": "usage_and_new"}) == []
