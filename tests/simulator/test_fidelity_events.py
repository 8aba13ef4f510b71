"""Recorded context events against the automatically chosen preset, on the corpus files (o200k counts).

- cline-xray-opus46-task_sample (Cline, claude-opus-4-6, 200k window): truncations recorded at requests 17, 32, 38
  and 51 (``conversationHistoryDeletedRange`` [2,17], [2,39], [2,57], [2,79]); Cline's rule fires at each, with
  the prompt after within 3% of the log's. Before 51 the user's feedback carried a screenshot, whose 128,460
  characters of base64 Cline weighs as text (OptimizationMetrics counts an image block by its data's length): the
  duplicate-read pass saved 30.6% of the kept text without it, so the preset only rewrote there, and under 30% with
  it, so it truncates as Cline did. Cline's duplicate-file-read pass (before 17, 26, 32, 38, 51; unrecorded, derived by
  the reader, keyed by the path as the result's header writes it) is in the replay: without it the prompt after
  each truncation was 14-31% off and the run's median error 10.4%. The log's tool calls are Cline's XML (no
  ``[Tool]`` result blocks in the request texts), so a truncation keeps the results that open the first kept user
  message: dropping them with their calls put the prompt after 32 and 38 14% and 10% low.
- The agent-sessions fixtures: hand-built, 2 requests each; their events have no recorded request before them or
  come after the last request, and say so in the ``reason`` column.
"""

from __future__ import annotations

import pytest

from replay.simulator.fidelity import fidelity_frame


@pytest.fixture(scope="module")
def o200k(corpus_db):
    from replay.tokens.counting import count_items
    from replay.tokens.loading import load_tokenizer

    tok = load_tokenizer("o200k")
    count_items(corpus_db, tok)
    return tok.tokenizer_id


def events(con, tokenizer_id, pattern):
    frame = fidelity_frame(con, tokenizer_id, pattern=pattern)
    return [r for r in frame.to_dicts() if r["kind"] != "run"]


def test_cline_preset_fires_where_cline_truncated(corpus_db, o200k):
    rows = events(corpus_db, o200k, "%cline-xray-opus46%")
    assert [r["recorded_request"] for r in rows] == [17, 32, 38, 51]
    assert {r["preset"] for r in rows} == {"cline@200000"}
    assert [r["simulated_request"] for r in rows] == [17, 32, 38, 51]  # 51 was missed without the image's size
    assert all(r["reason"] is None for r in rows)  # every one is scored
    assert all(r["within"] for r in rows)  # 32 and 38 were 18.6% and 10.5% low


def test_fixture_events_say_why_they_are_not_scored(corpus_db, o200k):
    cc = events(corpus_db, o200k, "%cc-fixture-agentsessions-small%")
    codex = events(corpus_db, o200k, "%codex-fixture-agentsessions-small-compacted%")
    assert cc and codex
    for r in cc + codex:
        assert r["within"] is None and r["reason"], r
    assert cc[0]["reason"].startswith("at the first request")  # its compact_boundary comes before any request
    assert all(r["reason"].startswith("no recorded prompt after it") for r in codex[:4])  # before request 1
    # its last two follow the last of its 2 requests: not put at request 1, whose prompt came before them
    assert [(r["recorded_request"], r["replayed_after"]) for r in codex[4:]] == [(2, None), (2, None)]
    assert all(r["reason"].startswith("after the last request") for r in codex[4:] + cc[1:])


def test_cline_prompt_after_truncation_follows_the_log(corpus_db, o200k):
    frame = fidelity_frame(corpus_db, o200k, pattern="%cline-xray-opus46%").to_dicts()
    (run,) = [r for r in frame if r["kind"] == "run"]
    assert run["median_abs_pct"] < 3.0  # 10.36 without the duplicate-read pass
    assert run["p95_abs_pct"] < 10.0  # 13.19 while a truncation dropped the kept results with their calls
    assert not run["unreconstructable"]  # the truncations and rewrites explain every drop of the prompt
    for r in (r for r in frame if r["kind"] != "run"):
        assert abs(r["replayed_after"] - r["recorded_after"]) / r["recorded_after"] < 0.03, r  # were 14-31% off


def test_codex_tui_runs_within_targets_as_calibrate_scores_them(corpus_db, o200k):
    """codex-tui-sessionlog-binary-size (codex-rs, August 2025): a command's result is format_exec_output's JSON of
    stdout on exit 0, stderr otherwise, and a reasoning item the log sizes is framed like every other item, as
    calibrate counts it. The main run was 2.67 / 10.17% (median / p95); with the result alone fixed it was
    3.02 / 6.39% in fidelity against 2.39 / 4.85% in calibrate (85 tokens a visible reasoning item apart)."""
    from replay.tokens import DEFAULT_OVERHEAD
    from replay.tokens.calibrate import fit_usage

    frame = fidelity_frame(corpus_db, o200k, pattern="%codex-tui-sessionlog-binary-size%")
    runs = [r for r in frame.to_dicts() if r["kind"] == "run"]
    assert len(runs) == 2
    _, cal, _ = fit_usage(corpus_db, o200k, DEFAULT_OVERHEAD, [r["run_id"] for r in runs])
    cal = {r["run_id"]: r for r in cal.iter_rows(named=True)}
    for r in runs:
        assert r["median_abs_pct"] <= 3 and r["p95_abs_pct"] <= 10 and not r["unreconstructable"], r
        c = cal[r["run_id"]]
        assert abs(100 * c["median_err"] - r["median_abs_pct"]) <= 0.5, (c, r)
        assert abs(100 * c["p95_err"] - r["p95_abs_pct"]) <= 1, (c, r)


def test_a_compaction_the_session_ended_on_leaves_the_last_request_whole(corpus_db, o200k):
    """cc-fixture-agentsessions-small: its second compaction follows its last request. The recorded replay charges
    that compaction's summariser call at the last request and drops nothing there: before, the last request was
    replayed as what the compaction left (10 tokens at chars/4, the request's own 185 gone)."""
    from replay.policies import Budget, make_policy
    from replay.simulator.load import load_runs
    from replay.simulator.run import simulate_run

    runs = load_runs(corpus_db, o200k, "%cc-fixture-agentsessions-small-1d506cba")
    (run,) = [r for r in runs if "/" not in r.run_id]
    cols, row = simulate_run(run, make_policy("recorded"), None, Budget(1_000_000))
    assert run.n_requests == 2 and run.events.step.tolist() == [0, 1]
    assert len(run.events.drop[1]) == 0 and row["summaries"] == 2
    assert cols["prompt_tokens"][1] > cols["prompt_tokens"][0]


def test_claude_code_preset_adds_what_the_log_shows_a_compaction_added(corpus_db, o200k):
    """ccs-livecd-gen-compact (Claude Code 1.0.90, which logs no attachment): after its compaction the prompt holds
    12,542 tokens the log does not (the prompt model's offset at that boundary), of which the preset's own re-read
    files made 8,275: it was 6.7% short (60,033 against 64,368). It now adds what the n-th recorded compaction added
    beyond the log, less the files it re-reads itself (a version that logs no attachment logs none of them)."""
    (row,) = events(corpus_db, o200k, "%ccs-livecd-gen-compact-e1ffaf02-3f1310b5")
    assert row["recorded_request"] == row["simulated_request"] == 51
    assert abs(row["simulated_after"] / row["recorded_after"] - 1) <= 0.01, row
    assert row["simulated_after"] == row["replayed_after"], row  # the recorded policy's prompt there, exactly
