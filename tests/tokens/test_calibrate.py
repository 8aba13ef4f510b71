"""Calibration: summary-aware reconstruction, segment fits, unreconstructable checks, and the corpus targets."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from replay.tokens import DEFAULT_OVERHEAD, Overhead, load_tokenizer
from replay.tokens.calibrate import (
    TARGET_MEDIAN,
    TARGET_P95,
    _best_fit,
    calibrate,
    error_by_file,
    fit,
    reconstruct,
    signed,
    visible,
)
from replay.tokens.log_checks import RunCheck, check_run, check_shrinks, check_usage_only

ZERO = Overhead({"user": 0}, 0, "test")
TARGETS = (TARGET_MEDIAN, TARGET_P95)


def test_reconstruct_drops_items_before_summary():
    items = pl.DataFrame(
        {
            "seq": [0, 1, 2, 3, 4],
            "step": [0, 0, 1, 2, 2],
            "role": ["user"] * 5,
            "kind": ["user_text", "assistant_text", "user_text", "summary", "user_text"],
            "n_tokens": [10, 20, 30, 5, 7],
        }
    )
    assert reconstruct(items, np.array([0, 1, 2]), ZERO).tolist() == [30, 60, 12]
    assert reconstruct(items, np.array([0]), DEFAULT_OVERHEAD).tolist() == [30 + 2 * 4 + 3]
    assert visible(items, np.array([0, 1, 2]), ZERO).messages.tolist() == [2, 3, 2]


def test_reconstruct_without_reasoning():
    items = pl.DataFrame(
        {
            "seq": [0, 1, 2, 3],
            "step": [0, 1, 1, 2],
            "role": ["user", "assistant", "assistant", "tool"],
            "kind": ["user_text", "reasoning", "tool_call", "tool_result"],
            "n_tokens": [10, 50, 5, 7],
        }
    )
    assert reconstruct(items, np.array([0, 1, 2]), ZERO, drop_reasoning=True).tolist() == [10, 15, 22]


def test_fit_recovers_overhead_and_scale():
    x = np.array([100.0, 500, 900, 2000])
    f = fit(x, 1234 + 1.2 * x)
    assert abs(f.overhead - 1234) < 1e-6 and abs(f.scale - 1.2) < 1e-9
    assert fit(np.array([100.0]), np.array([150.0])).scale == 1.0


def test_fit_recovers_segment_offsets_and_per_message():
    steps = np.arange(30)
    recon = 1000 + 300.0 * steps + 7 * (steps % 5)
    msgs = 2.0 * steps + 1
    recorded = 5000 + 1.1 * recon + 12 * msgs + 4000 * (steps >= 10) + 900 * (steps >= 21)
    f = fit(recon, recorded, msgs, steps, [10, 21, 99])  # 99 has no request after it: no offset
    assert abs(f.scale - 1.1) < 1e-6 and abs(f.per_message - 12) < 1e-4
    assert [s for s, _ in f.offsets] == [10, 21]
    assert np.allclose([t for _, t in f.offsets], [4000, 900])
    assert np.allclose(f.predict(recon, msgs, steps), recorded)
    # too few points for a scale beside the boundaries: scale 1, each boundary its own offset (here exact)
    few = fit(recon[:5], recorded[:5], msgs[:5], steps[:5], [1, 2, 3, 4])
    assert few.scale == 1.0 and [s for s, _ in few.offsets] == [1, 2, 3, 4]
    assert np.allclose(few.predict(recon[:5], None, steps[:5]), recorded[:5])
    # so at two requests with a compaction between them: the prefix and the boundary's offset, exact (5c04fe06:
    # Haiku 4.5 compacted before its second request; the prefix alone left both requests 5% off)
    two = fit(np.array([5_408.0, 3_980.0]), np.array([176_375.0, 193_423.0]), None, np.array([0, 1]), [1, 2])
    assert two.scale == 1.0 and [s for s, _ in two.offsets] == [1]
    assert np.allclose(two.predict(np.array([5_408.0, 3_980.0]), None, np.array([0, 1])), [176_375, 193_423])
    # and fidelity says that such a score is no evidence: a term per request
    from replay.simulator.fidelity import exact_fit

    assert two.unknowns == 2 and "exact by construction" in exact_fit((two, {1: "compaction"}), 2)[0]
    assert f.unknowns == 5 and exact_fit((f, {}), 30) == []
    # an offset is content the log does not hold: never negative, so a drop at a plain boundary stays an error
    drop = fit(recon[:3], recorded[:3] - 1000 * (steps[:3] >= 2), None, steps[:3], [1, 2], ends={1: 2})
    assert drop.scale == 1.0 and all(t >= 0 for _, t in drop.offsets)
    assert not np.allclose(drop.predict(recon[:3], None, steps[:3]), recorded[:3] - 1000 * (steps[:3] >= 2))


def test_reasoning_dropped_only_when_usage_says_so():
    items = pl.DataFrame(
        {
            "seq": list(range(12)),
            "step": [0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6],
            "role": ["user"] + ["assistant", "tool"] * 5 + ["assistant"],
            "kind": ["user_text"] + ["reasoning", "tool_result"] * 5 + ["reasoning"],
            "n_tokens": [10, 400, 50, 300, 80, 500, 20, 350, 60, 450, 90, 100],
        }
    )
    steps = np.arange(6)
    without = visible(items, steps, ZERO, drop_reasoning=True).tokens
    with_ = visible(items, steps, ZERO).tokens
    f, prompts = _best_fit(items, steps, 2000 + without, ZERO, {})
    assert not f.reasoning_in_prompt and np.allclose(f.predict(prompts.tokens), 2000 + without)
    f, _ = _best_fit(items, steps, 2000 + with_, ZERO, {})
    assert f.reasoning_in_prompt


def test_exact_reasoning_counts_within_its_turn_only():
    # Codex: encrypted reasoning sized by the request's reasoning_output_tokens; a new user turn drops it
    items = pl.DataFrame(
        {
            "seq": [0, 1, 2, 3, 4, 5],
            "step": [0, 1, 1, 2, 3, 3],
            "turn": [1, 1, 1, 1, 2, 2],
            "role": ["user", "assistant", "tool", "assistant", "user", "assistant"],
            "kind": ["user_text", "reasoning", "tool_result", "reasoning", "user_text", "reasoning"],
            "n_tokens": [10, 1, 50, 1, 20, 1],
        }
    )
    p = visible(items, np.arange(4), ZERO, exact={1: 300, 3: 40, 5: 7})
    assert p.exact.tolist() == [0, 300, 340, 7] and p.tokens.tolist() == [10, 60, 60, 80]
    assert reconstruct(items, np.arange(4), ZERO, exact={1: 300, 3: 40}).tolist() == [10, 360, 400, 81]


def test_check_run_names_boundaries_and_shrinks():
    items = pl.DataFrame({"seq": [0, 1], "step": [0, 3], "kind": ["user_text", "summary"], "n_tokens": [5, 5]})
    steps = np.arange(8)
    recorded = np.array([10_000, 12_000, 14_000, 3_000, 5_000, 7_000, 9_000, 11_000], dtype=float)
    models = ["a"] * 5 + ["b"] * 3
    meta = {"unlogged": [{"step": 6, "reason": "missing-parent"}]}
    check = check_run(items, steps, models, meta)
    assert check.boundaries == {3: "compaction", 5: "model switch", 6: "missing-parent"}
    check_shrinks(check, steps, recorded, np.full(8, 100.0), meta, TARGETS)
    assert not check.reasons  # the one shrink crosses the compaction
    saw = np.array([10_000, 13_000, 11_000, 14_000, 12_000, 15_000, 13_000, 16_000], dtype=float)
    check = check_run(items.filter(pl.col("kind") != "summary"), steps, ["a"] * 8, {"model_provider": "x"})
    check_shrinks(check, steps, saw, np.full(8, 100.0), {"model_provider": "x"}, TARGETS)
    assert check.reasons and check.reasons[0].startswith("context outside the log (served via provider 'x'): 3 of 8")
    shown = check_run(items.filter(pl.col("kind") != "summary"), steps, ["a"] * 8, {})
    check_shrinks(shown, steps, saw, saw - 5_000, {}, TARGETS)  # the log's own prompt shrinks as much: no sign
    assert not shown.reasons
    # in the model's units: a tokenizer counting 0.75 of the model's tokens sees a 20,000-token drop as 15,000;
    # scaled by the run's fitted 1/0.75 it is the same drop, no sign
    drops = np.array([80_000, 100_000, 80_000, 100_000, 80_000, 100_000, 80_000, 100_000], dtype=float)
    raw = check_run(items.filter(pl.col("kind") != "summary"), steps, ["a"] * 8, {})
    check_shrinks(raw, steps, drops, 0.75 * drops, {}, TARGETS)
    assert raw.reasons  # the unscaled count leaves 5,000 tokens of each drop unexplained: 3 of 8 past the bar
    scaled = check_run(items.filter(pl.col("kind") != "summary"), steps, ["a"] * 8, {})
    check_shrinks(scaled, steps, drops, (1 / 0.75) * (0.75 * drops), {}, TARGETS)
    assert not scaled.reasons


def test_web_search_usage_that_alone_misses_the_target_is_flagged():
    """Codex wjmlong 10-14-05's shape: 28 requests, two of whose responses ran a hosted web search (usage_only
    notes), recorded 11k and 22k over the request before them while the log grew by under 2k. Two notes are below
    check_unlogged's bar; their share of the recorded figure (23%, 36%) alone puts p95 past 10%."""
    steps = np.arange(28)
    log = np.linspace(37_000, 82_000, 28)
    recorded = log.copy()
    recorded[7] += 11_000
    recorded[8] += 21_500
    meta = {"unlogged": [{"step": s, "reason": "web search results", "usage_only": True} for s in (7, 8)]}
    check = RunCheck()
    check_usage_only(check, steps, recorded, log, meta, TARGETS)
    assert len(check.reasons) == 1 and check.reasons[0].startswith("usage outside the log: at 2 of 28 requests")
    assert "(request 8)" in check.reasons[0]
    # one search whose results add 2% of the figure: within what the targets allow
    small = RunCheck()
    recorded = log.copy()
    recorded[7] += 0.02 * log[7]
    check_usage_only(small, steps, recorded, log, {"unlogged": meta["unlogged"][:1]}, TARGETS)
    assert not small.reasons


def test_one_drop_that_alone_misses_the_target_flags_a_short_run():
    """Gemini CLI c8b2cbd9's shape: 5 requests, the prompt up by 2.4k at the request after a tool call and back
    down at the next user turn, the log growing all along. One such drop is below MIN_SHRINKS, but one of its two
    requests is off by 2,315 / (9,032 + 6,717) = 15% whatever the fit: the run cannot meet the p95 target."""
    steps = np.arange(5)
    recorded = np.array([6_594, 6_625, 9_032, 6_717, 7_271], dtype=float)
    log = np.array([6_590, 6_630, 6_700, 6_720, 7_270], dtype=float)
    check = RunCheck()
    check_shrinks(check, steps, recorded, log, {}, TARGETS)
    assert len(check.reasons) == 1 and "fell by 2,315 tokens at request 3 (of 5)" in check.reasons[0]
    assert "by 15% or more" in check.reasons[0]
    # the same drop in a run of 40 requests: one request of 40 off by 15% is within what p95 allows
    steps40 = np.arange(40)
    rec40 = np.concatenate([recorded, np.linspace(7_300, 9_000, 35)])
    log40 = np.concatenate([log, np.linspace(7_300, 9_000, 35)])
    long = RunCheck()
    check_shrinks(long, steps40, rec40, log40, {}, TARGETS)
    assert not long.reasons
    # a drop of under a fifth of the two prompts forces under 10%: no flag
    small = RunCheck()
    check_shrinks(small, steps, np.array([6_594, 6_625, 7_900, 6_717, 7_271], dtype=float), log, {}, TARGETS)
    assert not small.reasons


def test_a_drop_with_the_logs_drift_flags_what_no_offset_can_fit():
    """CaptainRandom00/Claude-Code db754e41's shape (Claude Code 2.0.8, an unlogged microcompact): over 49 requests
    the recorded prompt grows 21k more than the log (attachments the log does not hold), then falls by 39k with no
    boundary, and grows with the log for 12 more. Neither drop alone (one request of 61) nor the drift alone says
    enough; together no offset puts 95% of the requests within 10%. Without the drop, one offset fits."""
    from replay.tokens.log_checks import best_quantile

    steps = np.arange(61)
    log = 100_000 + 400.0 * steps
    drift = np.minimum(steps, 48) * 440.0
    recorded = log + drift - np.where(steps >= 49, 39_000.0, 0.0)
    check = RunCheck()
    check_shrinks(check, steps, recorded, log, {}, TARGETS)
    assert len(check.reasons) == 1 and "fell by 38," in check.reasons[0] and "at request 49 (of 61)" in check.reasons[0]
    p95 = best_quantile(recorded, log, np.zeros(61, np.int64), 0.95)
    assert p95 > TARGETS[1] and f"{p95:.0%} at p95" in check.reasons[0]
    # the drift alone: a scale takes it up
    smooth = RunCheck()
    check_shrinks(smooth, steps, log + drift, log, {}, TARGETS)
    assert not smooth.reasons
    # the drop at a compaction the log records: a boundary, a new offset after it
    bounded = RunCheck(boundaries={49: "compaction"})
    check_shrinks(bounded, steps, recorded, log, {}, TARGETS)
    assert not bounded.reasons
    # content the log lacks that only enters (a message whose parent the log lacks, a sub-agent's first
    # attachments: SWORDIntel/claude-backups e4ce568e fell 35k there) is no boundary a drop can fall at
    for why in ("missing-parent", "subagent attachments", "tool-reference"):
        entering = RunCheck(boundaries={49: why})
        check_shrinks(entering, steps, recorded, log, {}, TARGETS)
        assert len(entering.reasons) == 1 and "at request 49 (of 61)" in entering.reasons[0], why


def test_files_with_the_same_name_stay_apart():
    """Two ingested files named alike (SWE-agent's <instance>/<instance>.traj from two experiments) are two rows of
    the per-file table and of calibration_files, not one overwriting the other."""
    import duckdb

    from replay.store.calibrations import store_files
    from replay.store.schema import migrate

    requests = pl.DataFrame(
        {
            "run_id": ["a", "b", "c"],
            "source_path": ["exp1/x.traj", "exp2/x.traj", "exp1/y.traj"],
            "err": [0.01, 0.5, 0.02],
            "raw_err": [0.1] * 3,
            "chars4": [10.0] * 3,
            "recorded": [10.0] * 3,
        }
    )
    per_file = error_by_file(requests)
    assert per_file["file"].to_list() == ["exp1/x.traj", "exp2/x.traj", "y.traj"]
    assert per_file["within_target"].to_list() == [True, False, True]
    con = duckdb.connect()
    migrate(con)
    store_files(con, "tok", per_file)
    assert con.execute("SELECT file, within_target FROM calibration_files ORDER BY file").fetchall() == [
        ("exp1/x.traj", True),
        ("exp2/x.traj", False),
        ("y.traj", True),
    ]


@pytest.fixture(scope="module")
def agent_db(corpus, tmp_path_factory):
    """A store holding the Claude Code and Codex files of the corpus."""
    from replay.ingest import ingest
    from replay.store import open_store

    con = open_store(tmp_path_factory.mktemp("agents") / "agents.duckdb")
    ingest(con, [corpus / "claude-code", corpus / "codex-rollout"])
    yield con
    con.close()


# Files whose log cannot give the server's prompt, with the reason calibrate gives (replay.tokens.log_checks.check_run).
# None among the Claude Code and Codex files since the causes below were fixed; a regression that makes one miss
# with a known sign shows up here, one that misses with no explanation fails the per-file targets below.
#   ccb-avd-minimax-2764ab64: MiniMax logs a response's streaming-start usage first, the settled one last (reader
#     keeps the last), and its endpoint drops earlier thinking blocks (fit: reasoning_in_prompt False).
#   codex-pharma-platform-019d20aa: encrypted reasoning is in the prompt for the rest of its turn, sized by the
#     request's reasoning_output_tokens (reader: runs.metadata.reasoning_tokens), dropped when a new turn starts.
UNRECONSTRUCTABLE: dict[str, str] = {}


def test_the_file_table_scores_as_the_run_table_and_fidelity_do():
    """A file's p95 is the interpolated 95th percentile that fidelity and the per-run rows report, not the nearest
    rank: on six requests it is not simply the worst one (the corpus's 6-request sub-agent ccl-deep-manifest-agent
    read 10.24% in calibrate's file table, outside the 10% target, and 9.06% in fidelity's)."""
    err = np.array([0.010, 0.015, 0.018, 0.019, 0.0435, 0.1024])
    requests = pl.DataFrame(
        {
            "run_id": ["r"] * 6,
            "source_path": ["f.jsonl"] * 6,
            "err": err,
            "raw_err": err,
            "chars4": [10.0] * 6,
            "recorded": [10.0] * 6,
            "oos_err": err,
        }
    )
    row = error_by_file(requests).row(0, named=True)
    assert row["p95_err"] == pytest.approx(float(np.quantile(err, 0.95))) and row["p95_err"] < 0.1
    assert row["oos_p95_err"] == pytest.approx(float(np.quantile(err, 0.95)))
    assert row["within_target"]


def test_calibrate_claude_code_and_codex_corpus(agent_db):
    tok = load_tokenizer("claude-legacy")
    requests, runs = calibrate(agent_db, tok)
    assert requests["source_path"].str.contains("claude-code").sum() > 1000, "claude-code reader not landed?"
    per_file = error_by_file(requests)
    with pl.Config(tbl_rows=100, fmt_str_lengths=60):
        print(per_file)
    assert len(per_file) == 29  # 26 Claude Code files with usage (the workflow journal has none) + 3 Codex
    stored = agent_db.execute(
        "SELECT count(*) FROM calibrations WHERE tokenizer_id = ?", [tok.tokenizer_id]
    ).fetchall()[0][0]
    assert stored == len(runs)
    files = agent_db.execute(
        "SELECT file, within_target, unreconstructable FROM calibration_files WHERE tokenizer_id = ?",
        [tok.tokenizer_id],
    ).fetchall()
    assert len(files) == len(per_file)
    bad = per_file.filter(pl.col("unreconstructable") != "")
    assert dict(zip(bad["file"], bad["unreconstructable"], strict=True)).keys() == UNRECONSTRUCTABLE.keys()
    for file, reason in zip(bad["file"], bad["unreconstructable"], strict=True):
        assert reason.startswith(UNRECONSTRUCTABLE[file]), (file, reason)
    ok = per_file.filter(pl.col("unreconstructable") == "")
    misses = ok.filter((pl.col("median_err") > TARGET_MEDIAN) | (pl.col("p95_err") > TARGET_P95))
    assert misses.is_empty(), f"files outside the per-file targets:\n{misses}"


def test_fit_has_no_free_term_the_prompt_model_cannot_send():
    """A prompt that shrinks after a boundary with nothing in the log to explain it stays an error: offsets are
    content the log does not hold (>= 0) and the prefix is >= 0; only a model switch may lower the prefix."""
    steps = np.arange(12)
    recon = 1000 + 500.0 * steps
    recorded = 2000 + recon - 3000 * (steps >= 6)  # 3k gone at step 6: no content of the log went
    f = fit(recon, recorded, None, steps, [6])
    assert all(t >= 0 for _, t in f.offsets) and f.overhead >= 0
    assert np.abs(f.predict(recon, None, steps) - recorded).max() > 1000
    switched = fit(recon, recorded, None, steps, [6], signed=(6,))
    assert np.allclose(switched.predict(recon, None, steps), recorded) and switched.offsets[0][1] < 0
    over = fit(recon, recon - 300, fixed=3.0)  # the log's template counts more than the server: no negative prefix
    assert over.overhead + over.scale * 3.0 >= 0


def test_unreconstructable_is_a_property_of_the_log(corpus_db):
    """The same runs are flagged, for the same reasons, under a real tokenizer and under chars/4 estimates."""
    from replay.tokens.calibrate import fit_usage
    from replay.tokens.counting import count_items

    tok = load_tokenizer("o200k")
    count_items(corpus_db, tok)
    flags = []
    for tid in (tok.tokenizer_id, None):
        _, runs, _ = fit_usage(corpus_db, tid, DEFAULT_OVERHEAD)
        flags.append(
            {r: why.split(":", 1)[0] for r, why in zip(runs["run_id"], runs["unreconstructable"], strict=True) if why}
        )
    assert flags[0] == flags[1] and len(flags[0]) >= 2


@pytest.fixture(scope="module")
def aider_db(corpus, tmp_path_factory):
    """The corpus's Aider histories, counted with o200k."""
    from replay.ingest import ingest
    from replay.store import open_store
    from replay.tokens.counting import count_items

    con = open_store(tmp_path_factory.mktemp("aider") / "a.duckdb")
    ingest(con, [corpus / "aider"])
    count_items(con, load_tokenizer("o200k"))
    yield con
    con.close()


def test_interval_errors_score_the_distance_to_a_rounded_figure():
    from replay.tokens.calibrate import interval_errors, resolutions

    half = resolutions({"usage_resolution": [[0, 500], [2, 50], ["x", 1]]}, np.array([0, 1, 2]))
    assert half.tolist() == [500, 0, 50]
    err = interval_errors(np.array([10_600.0, 7_000.0, 4_300.0]), np.array([11_000.0, 7_010.0, 4_200.0]), half)
    assert err.tolist() == pytest.approx([0.0, 10 / 7_010, 50 / 4_200])


def test_aider_runs_are_within_target_or_flagged_from_the_log(aider_db, corpus):
    """Every Aider run with per-request usage is within 3% / 10% (its rounded "11k" figures scored as intervals),
    or flagged for a reason the history file shows: files whose contents the log never holds entering the chat
    at 3 requests or more (the lines the notes name are those events), or a history far over the size at which
    aider summarises it. The same flags under chars/4."""
    import json
    import re

    from replay.tokens.calibrate import fit_usage

    tid = load_tokenizer("o200k").tokenizer_id
    _, runs, _ = fit_usage(aider_db, tid, DEFAULT_OVERHEAD)
    _, runs4, _ = fit_usage(aider_db, None, DEFAULT_OVERHEAD)
    assert dict(zip(runs["run_id"], runs["unreconstructable"], strict=True)) == dict(
        zip(runs4["run_id"], runs4["unreconstructable"], strict=True)
    )
    by_name = {re.sub(r"-[0-9a-f]{8}/", "/", r["run_id"]): r for r in runs.iter_rows(named=True)}
    flagged = {k: r["unreconstructable"].split(":", 1)[0] for k, r in by_name.items() if r["unreconstructable"]}
    assert flagged == {
        "aider-afi-core-gpt4o/6": "content outside the log",
        "aider-afi-core-gpt4o/9": "content outside the log",
        "aider-luvatrix-qwen35-local/1": "history outside the log",
        "aider-pgstndtrprt-sonnet35/1": "history outside the log",
        "aider-pocketflow-text2sql-horizon-beta/1": "context outside the log",
    }, flagged
    for r in runs.iter_rows(named=True):
        assert r["unreconstructable"] or (r["median_err"] <= TARGET_MEDIAN and r["p95_err"] <= TARGET_P95), r
    lines = (corpus / "aider" / "aider-afi-core-gpt4o.md").read_text().splitlines()
    meta = json.loads(aider_db.execute("SELECT metadata FROM runs WHERE run_id LIKE '%afi-core%/9'").fetchone()[0])
    for note in meta["unlogged"]:  # each note is a file joining or leaving the chat, on the line it names
        line = lines[note["line"] - 1]
        assert "Add file to the chat?" in line or " to the chat" in line or line.startswith("> Applied edit to"), note
    assert sorted({n["step"] for n in meta["unlogged"]}) == [1, 2, 3, 5, 7, 8, 9, 10, 12, 13]


def test_a_prefix_change_at_a_compaction_step_is_the_boundary_kept():
    """A step holds one boundary. Where a compaction and a new tool list fall on the same request (LAF-US/IDAHO-VAULT
    05541cb5, 2.1.92: a /model switch right after a compaction deferred 438 tools, 168k to 42k) the prefix change is
    kept: a compaction's offset is content, never negative, and could not fit the fall."""
    items = pl.DataFrame({"kind": ["message", "summary", "summary"], "step": [0, 1, 4]})
    steps = np.arange(6)
    notes = {"unlogged": [{"step": 4, "reason": "deferred-tools"}, {"step": 1, "reason": "tool-reference"}]}
    check = check_run(items, steps, ["a"] * 4 + ["b"] * 2, notes)  # the /model switch at step 4
    assert check.boundaries == {1: "compaction", 4: "deferred-tools"}
    assert signed(check.boundaries) == (4,)


def test_a_deferred_tools_delta_changes_the_prefix_only_at_a_model_switch():
    """Claude Code announces a change of its deferred tools in a message; the tool list it sends changes only with a
    /model switch to a model that defers the schemas (LAF-US/IDAHO-VAULT 05541cb5: 168k to 42k). Read as a change
    of the prefix everywhere, the 11 notices of ad723d79 (2.1.111, an MCP server's tools deferred and withdrawn)
    each dropped the replay's cache to the system prompt where the log read the whole previous prompt: cost +61%.
    A notice is content from its step on, until the next compaction summarises it away."""
    from replay.tokens.calibrate import content_ends
    from replay.tokens.log_checks import DEFERRED_NOTICE

    items = pl.DataFrame({"seq": [0, 1], "step": [0, 6], "kind": ["user_text", "summary"], "n_tokens": [5, 5]})
    steps = np.arange(8)
    notes = [{"step": s, "reason": "deferred-tools"} for s in (2, 4)]
    check = check_run(items, steps, ["a"] * 4 + ["b"] * 4, {"unlogged": notes})
    assert check.boundaries == {2: DEFERRED_NOTICE, 4: "deferred-tools", 6: "compaction"}
    assert content_ends(items, steps, check.boundaries, {}) == {2: 6}


def test_a_boundary_whose_content_fits_at_nothing_gives_the_scale_back():
    """Three requests and one boundary leave no point for a scale; where the boundary's offset comes out 0 (nothing
    entered there), the fit is made again without it, with a scale (olivia215215/cabinet-governance agent-a636c7d3:
    0.21% at p95 with a scale, 9.53% with an empty offset in its place)."""
    recon = np.array([1_000.0, 2_000.0, 3_000.0])
    recorded = 5_000 + 0.9 * recon  # a scale of 0.9 (0.906 there): content entering at step 1 would be negative
    f = fit(recon, recorded, None, np.arange(3), [1])
    assert f.scale == pytest.approx(0.9) and not f.offsets
    jumped = recorded + np.array([0.0, 700.0, 700.0])  # content that did enter at step 1 keeps its offset
    g = fit(recon, jumped, None, np.arange(3), [1])
    assert g.scale == 1.0 and g.offsets and g.offsets[0][1] > 0


def test_an_inferred_sub_agent_boundary_is_fitted_only_beside_a_scale():
    """A sub-agent's first attachments are inferred from Claude Code's code, not logged: on a run too short to fit a
    scale beside them they are no boundary (three requests: a prefix and an offset at scale 1 would stand in for the
    scale), unless the model's scale is known from its other runs (calibrate.prior_scales): then a request on each
    side of the boundary is enough."""
    items = pl.DataFrame({"seq": [0], "step": [0], "kind": ["user_text"], "n_tokens": [5]})
    meta = {"unlogged": [{"step": 1, "reason": "subagent attachments"}]}
    assert check_run(items, np.arange(3), ["a"] * 3, meta).boundaries == {}
    assert check_run(items, np.arange(4), ["a"] * 4, meta).boundaries == {1: "subagent attachments"}
    assert check_run(items, np.arange(2), ["a"] * 2, meta, scale_known=True).boundaries == {1: "subagent attachments"}
    assert check_run(items, np.arange(1), ["a"], meta, scale_known=True).boundaries == {}


def test_a_run_too_short_for_a_scale_takes_its_models_prior():
    """With no points for a scale of its own, a fit takes the prior it is given, not 1: the prefix is what the
    recorded prompt holds beyond the items at that scale."""
    recon = np.array([1_000.0, 3_000.0])
    recorded = 5_000 + 1.2 * recon
    f = fit(recon, recorded, prior=1.2)
    assert not f.scale_free and f.scale == 1.2 and f.overhead == pytest.approx(5_000)
    assert fit(recon, recorded).scale == 1.0  # no prior: scale 1, both requests off
    g = fit(recon, recorded + np.array([0.0, 700.0]), None, np.arange(2), [1], prior=1.2)
    assert g.scale == 1.2 and g.offsets == ((1, pytest.approx(700.0)),)
