"""The cline_sdk policy (Cline 4.1's automatic compaction) on hand-made runs and on a session written to the
writer's schema: where it fires, what it keeps, when it declines, and compacting again after a summary."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from replay.ingest import ingest
from replay.policies import Budget, make_compiled
from replay.simulator.kernels.driver import T_PROMPT, T_SUM_READ, T_SUMMARISED
from replay.simulator.kernels.trace import trace_run
from replay.simulator.load import load_runs
from replay.store import open_store
from tests.policies.handmade import loop_run
from tests.readers.cline_sdk_session import OVERHEAD_EST, session


def summaries(run, params: dict, window: int) -> tuple[list[int], np.ndarray]:
    return traced(run, params, window)[:2]


def traced(run, params: dict, window: int) -> tuple[list[int], np.ndarray, np.ndarray]:
    """Requests the policy summarised at, every request's prompt, and the summariser's prompt at each."""
    trace = trace_run(run, make_compiled("cline-sdk", params), Budget(window, 0))
    cols = trace.columns
    return [int(k) for k in np.flatnonzero(cols[:, T_SUMMARISED])], cols[:, T_PROMPT], cols[:, T_SUM_READ]


def test_declines_while_the_newest_messages_reach_back_to_the_task():
    """A 60k-token task, then results of 3,000 tokens (4,000 by the SDK's chars/3): due from request 3 at 0.9 of a
    100k limit (1,334 for the 1k prefix + 80,000 + 3 x 4,014), but the newest 20,000 estimated tokens reach back to
    the task until request 5, so the SDK sends the request whole till then; at 5 the task is summarised with the
    rest, the cut moved from the first kept result back to its call."""
    run = loop_run([3_000] * 8, prefix=1_000, user=60_000)
    steps, prompt = summaries(run, {"context_window": 100_000}, 100_000)
    assert steps[0] == 5
    assert prompt[5] == 1_000 + 2_000 + 5 * (10 + 3_000)  # prefix, summary, the calls and results kept
    assert prompt[4] == 1_000 + 60_000 + 4 * 3_010  # declined: everything went out


def test_compacts_again_from_the_summary_on():
    """After the first summary the estimate (summary counted twice its size: the SDK's message holds it twice)
    grows again to the limit; the second compaction folds the first summary and what followed it."""
    run = loop_run([3_000] * 40, prefix=1_000, user=60_000)
    steps, prompt = summaries(run, {"context_window": 100_000}, 100_000)
    # after 5: 1,334 + 4,000 + 5 x 4,014 = 25,404; due again once 17 more round trips add 68,238 (16: 64,224)
    assert steps[:2] == [5, 22]
    assert prompt[22] == 1_000 + 2_000 + 5 * 3_010  # the newest 20,000 estimated: five round trips again


def test_session_compacts_where_the_sdk_did(tmp_path: Path):
    """The writer's schema, its rule worked out on the JSON (tests/readers/cline_sdk_session.py): compactions at
    the same requests, the second one from the first's projection; the SDK's overhead given, the log's messages
    estimated by the reader."""
    found = session(tmp_path, turns=160)
    con = open_store(tmp_path / "s.duckdb")
    ingest(con, [next(tmp_path.iterdir())])
    (run,) = load_runs(con, None, prompt=False)
    steps, _ = summaries(run, {"overhead_est": OVERHEAD_EST}, 200_000)
    assert len(found["requests"]) == 2 and steps == found["requests"]


def test_summariser_is_sent_the_folded_messages_with_long_results_cut():
    """What the SDK sends its summariser (buildSummaryRequest, serializeMessage): at request 5 only the task is
    folded, 60,000 tokens, plus the request's own ~500 characters and a label (128 at the run's 4 characters a
    token); at 22 the first summary and the 17 round trips before the five kept, each 12,000-character result
    cut to 2,000 (500 tokens) with a truncation line: a sixth of the previous prompt (66,210)."""
    run = loop_run([3_000] * 40, prefix=1_000, user=60_000)
    steps, prompt, sent = traced(run, {"context_window": 100_000}, 100_000)
    assert steps[:2] == [5, 22]
    assert sent[5] == 60_000 + 128
    assert sent[22] == 2_000 + 17 * (10 + 500) + -(-(500 + 34 * 12 + 17 * 24) // 4)
    assert prompt[21] == 66_210 and sent[22] < prompt[21] / 6
