"""auto_compact and its harness presets on hand-made runs: limit, trigger basis, what survives a compaction."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from replay.errors import ReplayError
from replay.policies import PRESETS, Budget, make_policy
from replay.policies.view import DROPPED, ORIGINAL, PLACEHOLDER, SHRUNK
from replay.run_arrays import KIND_CODE, RunArrays, build
from replay.simulator.kernels.trace import views_of
from tests.policies.handmade import loop_run


def views(run, name, params=None, budget=None):
    return views_of(run, make_policy(name, params), budget or Budget(200_000)).views


def fired(vs) -> list[int]:
    return [v.k for v in vs if v.summarised]


def full_prompt(run, k: int) -> int:
    return int(run.tokens[: run.req_end[k]].sum())


def test_claude_code_1_0_fires_on_the_previous_prompt_past_0_92_of_window_less_output():
    run = loop_run([10_000] * 12, prefix=100_000)
    # full prompts: request 5 150,150 < 154,560 = 0.92 x 168,000 <= request 6 160,160
    assert full_prompt(run, 5) < 154_560 < full_prompt(run, 6)
    vs = views(run, "claude-code-1.0")
    assert fired(vs)[0] == 7  # Claude Code checks the last response's prompt: request 6's, before request 7
    after = vs[7]
    assert (after.forms[run.first_body :] == DROPPED).all()  # the whole conversation is summarised
    # prefix + summary + the three files read (10,000 each; no limit before 2.1.20), re-read after the summary
    assert after.prompt_tokens == 100_000 + 2_000 + 3 * 10_000
    prompt_basis = views(run, "claude-code-1.0", {"trigger_on": "prompt"})
    assert fired(prompt_basis)[0] == 6


def test_claude_code_2_fires_past_167k():
    run = loop_run([10_000] * 12, prefix=100_000)
    assert full_prompt(run, 6) < 167_000 < full_prompt(run, 7)
    off = {"microcompact": False}
    # 2.1.3 on: the last usage plus the messages since, i.e. the prompt about to be sent
    assert fired(views(run, "claude-code-2", off))[0] == 7
    assert fired(views(run, "claude-code-2", {**off, "buffer_tokens": 0}))[0] == 8  # 180,000: request 8 the first past
    assert fired(views(run, "claude-code-1.0.80", off))[0] == 7  # 155,000 of the last usage: request 6's 160,160


def test_claude_code_microcompact_clears_old_results_once_near_the_limit():
    run = loop_run([10_000] * 12, prefix=100_000)  # each request adds one 10,000-token Read result
    vs = views(run, "claude-code-2")
    # request 5's prompt 150,150 is past 167,000 - 20,000: before request 6 the results but the newest 3 calls' are
    # cleared while the uncleared ones add up to more than 40,000 (chars/4), saving at least 20,000
    assert [v.k for v in vs if (v.forms == PLACEHOLDER).any()][0] == 6
    cleared = vs[6].forms == PLACEHOLDER
    # six results of 10,000: the oldest two are cleared (60,000 -> 40,000), each now a note of about 50 tokens
    assert list(np.flatnonzero(cleared)) == [3, 5] and not vs[6].summarised
    assert full_prompt(run, 6) - 20_000 < vs[6].prompt_tokens < full_prompt(run, 6) - 19_800
    assert fired(vs) == []  # microcompact keeps the prompt under the limit in this loop
    assert not (views(run, "claude-code-2", {"micro_tools": "Bash"})[6].forms == PLACEHOLDER).any()


def test_claude_code_2_1_69_compacts_at_the_same_limit_without_microcompact():
    """cli.js 2.1.69 dropped the client-side microcompact: the loop that claude-code-2 keeps under the limit by
    clearing old results is compacted instead, at the same request as claude-code-2 with microcompact off."""
    run = loop_run([10_000] * 12, prefix=100_000)
    vs = views(run, "claude-code-2.1.69")
    assert not any((v.forms == PLACEHOLDER).any() for v in vs)
    assert fired(vs) == fired(views(run, "claude-code-2", {"microcompact": False})) and fired(vs)[0] == 7


def test_claude_code_2_1_153_compacts_past_the_window_keeping_the_newest_round():
    """2.1.153 on, a model without an auto-compact window: no compaction until the API refuses a prompt past the
    window; the reactive compaction then summarises all but the newest round (the last response and the result
    after it), which follows the summary verbatim."""
    run = loop_run([10_000] * 14, prefix=100_000)
    assert full_prompt(run, 9) < 200_000 < full_prompt(run, 10)
    vs = views(run, "claude-code-2.1.153")
    assert fired(vs)[0] == 10
    after = vs[10]
    newest = np.flatnonzero(run.step[: after.end] == 10)  # the call made after request 9 and its result
    assert len(newest) == 2 and (after.forms[newest] == ORIGINAL).all()
    assert (after.forms[run.first_body : newest[0]] == DROPPED).all()
    # prefix, summary, a 50-token note for each file read before the kept round (past 5,000 tokens; the file the
    # kept round reads is not re-attached, as in cli.js 2.1.160), the newest round
    assert after.prompt_tokens == 100_000 + 2_000 + 2 * 50 + 10 + 10_000
    assert fired(views(run, "claude-code-2.1.69"))[0] == 7  # before 2.1.153: at 167k, all summarised
    assert (views(run, "claude-code-2.1.69")[7].forms[run.first_body :] == DROPPED).all()


def test_keep_rounds_keeps_whole_responses_and_what_follows():
    """A round is a response's output (text and calls) and the results after it; two rounds kept are the last two
    requests' additions; the 2.1.153 threshold preset keeps one round at claude-code-2.1.69's limit."""
    run = loop_run([10_000] * 12, prefix=100_000, thought=50)
    vs = views(run, "claude-code-2.1.69", {"keep_rounds": 2})
    k = fired(vs)[0]
    kept = np.flatnonzero(vs[k].forms[: vs[k].end] == ORIGINAL)
    assert list(run.step[kept[1:]]) == [k - 1] * 3 + [k] * 3 and kept[0] == 0  # the prefix, then two rounds
    windowed = views(run, "claude-code-2.1.153-window")
    assert fired(windowed)[0] == fired(views(run, "claude-code-2.1.69"))[0] == k
    assert list(run.step[np.flatnonzero(windowed[k].forms[: windowed[k].end] == ORIGINAL)[1:]]) == [k] * 3


def test_window_comes_from_the_budget_unless_set():
    run = loop_run([10_000] * 12, prefix=50_000)
    small = views(run, "claude-code-1.0", budget=Budget(130_000))  # 0.92 x 98,000 = 90,160
    assert fired(small)[0] == 6  # request 5's prompt 100,150 is the first past 90,160
    assert fired(views(run, "claude-code-1.0", {"context_window": 130_000}))[0] == 6


def test_no_reattachment_when_no_file_was_touched():
    """Only the tools that keep a file in Claude Code's read-file state put it back after the summary: an MCP read
    tool, or a native one that ran a command, does not."""
    run = loop_run([10_000] * 12, prefix=100_000)
    after = views(run, "claude-code-1.0", {"reattach_tools": "mcp__acp__Read"})[7]
    assert after.prompt_tokens == 100_000 + 2_000
    assert views(loop_run([10_000] * 12, prefix=100_000, access="exec"), "claude-code-1.0")[7].prompt_tokens == 102_000


def test_claude_code_re_attaches_the_newest_five_files_within_their_limits():
    """Claude Code 2.1.20 on: the newest 5 files of the read-file state (by modification time: written files first),
    each counted against 5,000 in tokens (the presets: the token count) or at chars/4 (its fallback when that call
    fails), a file past it a 50-token note; kept while they add up to no more than 50,000 at chars/4."""
    run = loop_run([8_000] * 20, prefix=100_000)
    dense = replace(run, chars=np.where(run.kind == KIND_CODE["tool_result"], run.chars // 2, run.chars))
    k = fired(views(dense, "claude-code-2.1.69"))[0]
    # three files f0-f2, each last read whole at 8,000 tokens in 16,000 characters: 4,000 at chars/4
    assert views(dense, "claude-code-2.1.69")[k].summary_tokens == 2_000 + 3 * 50
    chars4 = {"reattach_count": "chars/4"}
    assert views(dense, "claude-code-2.1.69", chars4)[k].summary_tokens == 2_000 + 3 * 8_000
    assert views(dense, "claude-code-2.1.69", {**chars4, "reattach_files": "2"})[k].summary_tokens == 2_000 + 2 * 8_000
    # the files kept add up to no more than reattach_total at chars/4 (4,000 each): one of 7,999
    assert views(dense, "claude-code-2.1.69", {**chars4, "reattach_total": "7999"})[k].summary_tokens == 2_000 + 8_000


def test_codex_keeps_newest_user_messages_to_20k_truncating_the_oldest_kept():
    users = {2: 8_000, 4: 8_000, 6: 8_000}
    run = loop_run([20_000] * 14, prefix=10_000, users_at=users)
    limit = 0.832 * 258_400
    vs = views(run, "codex", {"context_window": 258_400})
    k = fired(vs)[0]
    assert full_prompt(run, k - 1) <= limit < full_prompt(run, k)  # Codex counts the prompt about to be sent
    v = vs[k]
    user_pos = np.flatnonzero(run.tokens[: v.end] == 8_000)
    assert list(v.forms[user_pos]) == [SHRUNK, ORIGINAL, ORIGINAL]
    assert v.seg_tokens[user_pos[0]] == 4_000  # 20,000 - 8,000 - 8,000 left for the oldest kept one
    assert v.forms[1] == DROPPED  # the first user message did not fit
    assert v.prompt_tokens == 10_000 + 20_000 + 1_650
    tool_pos = np.flatnonzero(run.kind[: v.end] >= 0)[run.first_body :]
    assert all(v.forms[p] == DROPPED for p in tool_pos if p not in user_pos)


def test_codex_threshold_takes_the_context_window_knob():
    run = loop_run([20_000] * 14, prefix=10_000)
    a = fired(views(run, "codex", {"context_window": 258_400}))[0]
    b = fired(views(run, "codex", {"context_window": 258_400, "threshold": 0.947}))[0]
    assert b > a


def test_recorded_summary_never_in_the_view_and_sizes_the_simulated_one():
    extra = [
        {"step": 3, "kind": "summary", "chars": 2_000, "tokens": 500},
        {"step": 3, "kind": "attachment", "chars": 400, "tokens": 100},
    ]
    run = loop_run([10_000] * 12, prefix=100_000, extra=extra)
    pos = np.flatnonzero(np.isin(run.kind, [KIND_CODE["summary"], KIND_CODE["attachment"]]))
    vs = views(run, "claude-code-1.0")
    assert all(v.seg_tokens[pos[pos < v.end]].sum() == 0 for v in vs)
    k = fired(vs)[0]
    assert vs[k].summary_tokens == 500 + 3 * 10_000  # the recorded summary's size, plus the files
    assert views(run, "claude-code-1.0", {"summary_from_log": "false"})[k].summary_tokens == 2_000 + 3 * 10_000


def test_presets_are_policies_with_overridable_knobs():
    assert set(PRESETS) >= {
        "claude-code-1.0",
        "claude-code-2",
        "codex",
        "swe-agent-last-n",
        "openhands-v0",
        "openhands-v1",
        "anthropic-clear-tool-uses",
    }
    p = make_policy("claude-code-1.0", {"reattach_file_tokens": "5000"})
    assert p.name == "auto_compact" and p.config.reattach_file_tokens == 5_000 and p.config.threshold == 0.92
    with pytest.raises(ReplayError, match="threshold"):
        make_policy("auto_compact", {"threshold": "0"})


TEN_K = {"reattach_file_tokens": 10_000}
TOUCHED = {"reattach_order": "touched"}


@pytest.mark.parametrize(
    ("version", "model", "long", "expected"),
    [
        ("1.0.51", "claude-sonnet-4-20250514", False, ("claude-code-1.0", {}, 200_000)),
        # the Read tool's limit: 10,000 tokens to 1.0.84, 5,000 from 1.0.85; a read stamped with its own time to
        # 1.0.113 (the newest files are those touched last), with the file's modification time from 1.0.114
        ("1.0.81", "claude-opus-4-1-20250805", False, ("claude-code-1.0.80", {**TEN_K, **TOUCHED}, 200_000)),
        ("1.0.85", "claude-opus-4-1-20250805", False, ("claude-code-1.0.80", TOUCHED, 200_000)),
        ("1.0.90", "claude-opus-4-1-20250805", False, ("claude-code-1.0.80", TOUCHED, 200_000)),
        ("1.0.113", "claude-opus-4-1-20250805", False, ("claude-code-1.0.80", TOUCHED, 200_000)),
        ("1.0.114", "claude-opus-4-1-20250805", False, ("claude-code-1.0.80", {}, 200_000)),
        ("2.0.8", "claude-3-5-sonnet-20241022", False, ("claude-code-1.0.80", {"output_reserve": 8_192}, 200_000)),
        ("2.1.0", "claude-sonnet-4-5-20250929", False, ("claude-code-1.0.80", {}, 200_000)),
        ("2.1.19", "claude-opus-4-5-20251101", False, ("claude-code-2.1.3", {}, 200_000)),
        ("2.1.20", "claude-sonnet-4-5-20250929", True, ("claude-code-2.1.3", {}, 1_000_000)),
        # cli.js 2.1.21 caps the output reserve at 20,000 (CHANGELOG.md 2.1.21: auto-compact triggered too early on
        # models with large output limits); real 2.1.22 and 2.1.27 sessions compacted at 167,432 and 169,332
        ("2.1.21", "claude-opus-4-5-20251101", False, ("claude-code-2", {}, 200_000)),
        ("2.1.37", "claude-opus-4-6", False, ("claude-code-2", {}, 200_000)),
        # cli.js 2.1.38 adds the microcompact's image step; 2.1.68 is the last with the client-side microcompact
        # (tengu_microcompact, compactedToolIds)
        ("2.1.38", "claude-opus-4-6", False, ("claude-code-2.1.38", {}, 200_000)),
        ("2.1.68", "claude-opus-4-6", False, ("claude-code-2.1.38", {}, 200_000)),
        ("2.1.69", "claude-opus-4-6", False, ("claude-code-2.1.69", {}, 200_000)),
        # cli.js 2.1.74 estimates the last response's tool calls and thinking after its first block too
        ("2.1.73", "claude-opus-4-6", False, ("claude-code-2.1.69", {}, 200_000)),
        ("2.1.74", "claude-opus-4-6", False, ("claude-code-2.1.74", {}, 200_000)),
        # Opus 4.7's native 1M window from 2.1.117 (CHANGELOG.md 2.1.117); 200K before it, as 2.1.116 computed
        ("2.1.116", "claude-opus-4-7", False, ("claude-code-2.1.74", {}, 200_000)),
        ("2.1.117", "claude-opus-4-7", False, ("claude-code-2.1.74", {}, 1_000_000)),
        ("2.1.148", "claude-opus-4-7", False, ("claude-code-2.1.74", {}, 1_000_000)),
        # 2.1.153 on: the local threshold check runs only for an auto-compact window of a source other than "auto";
        # otherwise the reactive compaction when the API refuses the prompt (claude-code-2.1.153)
        ("2.1.152", "claude-opus-4-6", False, ("claude-code-2.1.74", {}, 200_000)),
        ("2.1.153", "claude-opus-4-6", False, ("claude-code-2.1.153", {}, 200_000)),
        ("2.1.153", "claude-opus-4-8", False, ("claude-code-2.1.153", {}, 200_000)),  # native 1M from 2.1.154
        ("2.1.332", "claude-haiku-4-5-20251001", False, ("claude-code-2.1.153", {}, 200_000)),
        # Sonnet 4.6 and Opus 4.6 below 1M: "model-default" from 2.1.163, on 1M (by plan or "[1m]") not
        ("2.1.162", "claude-sonnet-4-6", False, ("claude-code-2.1.153", {}, 200_000)),
        ("2.1.163", "claude-sonnet-4-6", False, ("claude-code-2.1.153-window", {}, 200_000)),
        ("2.1.167", "claude-opus-4-6", False, ("claude-code-2.1.153-window", {}, 200_000)),
        ("2.1.167", "claude-opus-4-6", True, ("claude-code-2.1.153", {}, 1_000_000)),
        # native 1M: the API's limit until 2.1.259, a "model-default" window from 2.1.260
        ("2.1.167", "claude-opus-4-8", False, ("claude-code-2.1.153", {}, 1_000_000)),
        ("2.1.170", "claude-mythos-5", False, ("claude-code-2.1.153", {}, 1_000_000)),
        ("2.1.259", "claude-opus-5", False, ("claude-code-2.1.153", {}, 1_000_000)),
        ("2.1.260", "claude-opus-5", False, ("claude-code-2.1.153-window", {}, 1_000_000)),
        ("2.1.293", "claude-haiku-5-5", False, ("claude-code-2.1.153-window", {}, 1_000_000)),
        # Sonnet 5's default auto-compact window: 967,000 from 2.1.197 to 2.1.246, its full 1M from 2.1.247
        ("2.1.197", "claude-sonnet-5", False, ("claude-code-2.1.153-window", {}, 967_000)),
        ("2.1.246", "claude-sonnet-5", True, ("claude-code-2.1.153-window", {}, 967_000)),
        ("2.1.247", "claude-sonnet-5", False, ("claude-code-2.1.153-window", {}, 1_000_000)),
        ("2.1.284", "claude-sonnet-5-5", False, ("claude-code-2.1.153-window", {}, 1_000_000)),
        ("unknown", "claude-opus-4-7", False, None),
    ],
)
def test_claude_code_preset_by_version_and_model(version, model, long, expected):
    from replay.policies.presets import claude_code_preset

    assert claude_code_preset(version, model, long) == expected
    if expected is not None:
        name, params, window = expected
        limit = make_policy(name, params)
        assert limit.config.output_reserve == params.get("output_reserve", PRESETS[name].params["output_reserve"])


@pytest.mark.parametrize(
    ("version", "model", "entrypoint", "window"),
    [
        # Sonnet 5 on the Cowork and desktop local-agent surfaces: 500,000 from 2.1.197 (still so in 2.1.332)
        ("2.1.197", "claude-sonnet-5", "local-agent", 500_000),
        ("2.1.332", "claude-sonnet-5", "remote_cowork", 500_000),
        ("2.1.332", "claude-sonnet-5", "cli", 1_000_000),
        ("2.1.284", "claude-sonnet-5-5", "local-agent", 1_000_000),  # the table names Sonnet 5 only (native 1M)
    ],
)
def test_claude_code_preset_by_surface(version, model, entrypoint, window):
    from replay.policies.presets import claude_code_preset

    assert claude_code_preset(version, model, False, entrypoint) == ("claude-code-2.1.153-window", {}, window)


def test_claude_code_reads_the_usage_the_server_reported():
    """``usage_offset`` (what the server counted beyond the replayed prompt, per request; replay fidelity gives it)
    moves the trigger as the recorded usage would: 8,000 more reported before request 6 fires it there."""
    from dataclasses import replace

    run = loop_run([10_000] * 12, prefix=100_000)
    off = {"microcompact": False}
    assert fired(views(run, "claude-code-1.0.80", off))[0] == 7  # request 6's 160,160 is the first past 155,000
    more = replace(run, usage_offset=np.full(run.n_requests, 8_000, dtype=np.int64))
    assert fired(views(more, "claude-code-1.0.80", off))[0] == 6  # request 5's 150,150 + 8,000 reported
    assert fired(views(more, "claude-code-2", off))[0] == 6  # 2.1.3 on: 150,150 + 8,000 + request 6's 10,000+ new


def test_claude_code_counts_the_uncached_tail_in_the_usage():
    """The part of the prefix sent after the last breakpoint (``RunArrays.tail``: taken out of the prefix item for
    the cache, replay.simulator.run_start) is in every prompt the server reports, so the usage the trigger reads
    holds it: an 8,000-token tail moves no compaction. austinweitao/claude-backup 2c7bb7e5 (2.1.68 behind a gateway,
    a 17,758-token tail) compacted at request 49; the preset, short of its tail, fired at 54."""
    run = loop_run([10_000] * 12, prefix=100_000)
    off = {"microcompact": False}
    tailed = replace(run, tail=8_000)
    for preset in ("claude-code-1.0.80", "claude-code-2"):
        assert fired(views(tailed, preset, off))[0] == fired(views(run, preset, off))[0] == 7


def turn_state_run(sdk: bool) -> RunArrays:
    """Turn 1 reads ``a.py`` whole, ``b.py`` in part and edits ``c.py``; turn 2 (from step 4) reads ``d.py`` and
    outputs grow past the limit. Results are 4,000 tokens each (chars = 4 x tokens); the edit adds 80 tokens."""
    items: list[dict] = [{"step": 0, "kind": "system", "chars": 400_000, "tokens": 100_000, "turn": 0}]
    items.append({"step": 0, "kind": "user_text", "chars": 400, "tokens": 100, "turn": 1})

    def call(step: int, turn: int, name: str, res: str, access: str, size: int) -> None:
        cid = f"c{len(items)}"
        base = {"step": step, "call_id": cid, "resource": res, "access": access, "turn": turn}
        items.append({**base, "kind": "tool_call", "chars": 40, "tokens": 10, "tool_name": name})
        items.append({**base, "kind": "tool_result", "chars": 4 * size, "tokens": size, "lines": 100})

    call(1, 1, "Read", "a.py", "read", 4_000)
    call(2, 1, "Read", "b.py", "read", 4_000)  # with an offset: part of the file
    call(3, 1, "Edit", "c.py", "write", 80)
    items.append({"step": 4, "kind": "user_text", "chars": 400, "tokens": 100, "turn": 2})
    call(4, 2, "Read", "d.py", "read", 4_000)
    for step in range(5, 12):
        call(step, 2, "Bash", "", "exec", 9_000)
    run = build("turn-state", items, [{"step": k} for k in range(12)], "real:test")
    part = np.array([it.get("call_id") == "c4" and it["kind"] == "tool_call" for it in items])
    return replace(run, part_read=part) if sdk else run


def test_sdk_loop_rebuilds_the_read_file_state_at_each_user_message():
    """Claude Code's SDK loop (2.0.0-2.0.29) rebuilds its read-file state when a user message starts a turn: the
    files earlier turns read whole (``a.py``) and what this turn touched (``d.py``); a file an earlier turn read in
    part (``b.py``) or edited (``c.py``) is not re-read after the summary. The REPL keeps all four."""
    sdk = {"reattach_turn_files": "10"}
    run = turn_state_run(True)
    k = fired(views(run, "claude-code-1.0.80", sdk, Budget(160_000)))[0]
    rebuilt = views(run, "claude-code-1.0.80", sdk, Budget(160_000))[k].summary_tokens
    kept = views(run, "claude-code-1.0.80", None, Budget(160_000))[k].summary_tokens
    # b.py's read and c.py's edit (its call, as the Read tool would number its one line: 12): the REPL's state only
    assert (rebuilt, kept - rebuilt) == (2_000 + 4_000 + 4_000, 4_000 + 12)
    assert views(run, "claude-code-1.0.80", {**sdk, "reattach_files": "1"}, Budget(160_000))[k].summary_tokens == (
        rebuilt - 4_000
    )  # d.py (this turn's read) ranks below a.py (stamped at the user message)


def whole_file_run() -> RunArrays:
    """Four files touched before outputs grow past the limit (chars = 4 x tokens, no framing): ``big.py`` and
    ``small.py`` edited (their calls 10 tokens, their results 100), ``part.sh`` read in part (10 lines of 40
    characters each), ``new.md`` written (its call 1,000 tokens, 40 lines). The log tells the whole files after the
    calls (``RunArrays.file_chars``, ``file_lines``): big.py 40,000 characters in 1,000 lines, small.py 8,000 in 200,
    part.sh 100 lines, new.md 4,000 characters in 40 lines."""
    items: list[dict] = [{"step": 0, "kind": "system", "chars": 400_000, "tokens": 100_000, "turn": 0}]
    items.append({"step": 0, "kind": "user_text", "chars": 400, "tokens": 100, "turn": 1})
    whole: dict[int, tuple[int, int]] = {}

    def call(step: int, name: str, res: str, access: str, size: int, lines: int, after: tuple[int, int]) -> None:
        cid = f"c{len(items)}"
        base = {"step": step, "call_id": cid, "resource": res, "access": access, "turn": 1}
        tokens = 1_000 if name == "Write" else 10
        items.append({**base, "kind": "tool_call", "chars": 4 * tokens, "tokens": tokens, "tool_name": name})
        whole[len(items)] = after
        items.append({**base, "kind": "tool_result", "chars": 4 * size, "tokens": size, "lines": lines})

    call(1, "Edit", "big.py", "write", 100, 5, (40_000, 1_000))
    call(2, "Edit", "small.py", "write", 100, 5, (8_000, 200))
    call(3, "Read", "part.sh", "read", 100, 10, (0, 100))
    call(4, "Write", "new.md", "write", 5, 1, (4_000, 40))
    for step in range(5, 12):
        call(step, "Bash", "", "exec", 9_000, 1, (0, 0))
    run = build("whole-file", items, [{"step": k} for k in range(12)], "real:test")
    chars = np.array([whole.get(q, (0, 0))[0] for q in range(len(items))], dtype=np.int64)
    lines = np.array([whole.get(q, (0, 0))[1] for q in range(len(items))], dtype=np.int64)
    return replace(run, file_chars=chars, file_lines=lines)


def test_claude_code_re_reads_the_whole_file_the_log_tells_within_the_read_limit():
    """After the summary Claude Code reads each file again from disk, whole, as the Read tool numbers it (6-wide
    line number and an arrow per line): small.py (8,000 characters, 200 lines: 2,350 tokens), part.sh (its 10 shown
    lines of 33 characters' content per line over its 100 lines: 1,000), new.md (4,000 in 40 lines: 1,070). big.py's
    content (10,000 tokens) passes the 5,000-token limit (1.0.85 on): not re-read; 1.0.84's 10,000 lets it in
    (40,000 + 7,000 characters: 11,750 tokens)."""
    run = whole_file_run()
    k = fired(views(run, "claude-code-1.0.80", None, Budget(160_000)))[0]
    assert views(run, "claude-code-1.0.80", None, Budget(160_000))[k].summary_tokens == 2_000 + 2_350 + 1_000 + 1_070
    ten = {"reattach_file_tokens": "10000"}
    assert views(run, "claude-code-1.0.80", ten, Budget(160_000))[k].summary_tokens == (
        2_000 + 11_750 + 2_350 + 1_000 + 1_070
    )
    # with nothing told of the whole files, the sizes are the log's calls and results, as before
    bare = replace(run, file_chars=None, file_lines=None)
    assert views(bare, "claude-code-1.0.80", None, Budget(160_000))[k].summary_tokens != (2_000 + 2_350 + 1_000 + 1_070)


def test_claude_code_to_1_0_113_re_reads_the_files_touched_last():
    """To 1.0.113 a read is stamped with the time of the read, so the newest file is the one touched last (part.sh
    read after big.py and small.py were edited, new.md written after it); from 1.0.114 written files rank first
    by their modification time (new.md, then small.py), the files only read after them."""
    run = whole_file_run()
    one = {"reattach_files": "1"}
    k = fired(views(run, "claude-code-1.0.80", one, Budget(160_000)))[0]
    assert views(run, "claude-code-1.0.80", one, Budget(160_000))[k].summary_tokens == 2_000 + 1_070
    two = {"reattach_files": "3", "reattach_order": "touched"}
    mtime = {"reattach_files": "3"}
    # touched: new.md, part.sh, small.py; mtime: new.md, small.py, big.py (past the limit: not re-read)
    assert views(run, "claude-code-1.0.80", two, Budget(160_000))[k].summary_tokens == 2_000 + 1_070 + 1_000 + 2_350
    assert views(run, "claude-code-1.0.80", mtime, Budget(160_000))[k].summary_tokens == 2_000 + 1_070 + 2_350
