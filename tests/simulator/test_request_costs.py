"""simulate prices each request as the bill does: at the model its log names, with its writes split by the log's own
durations; every run row carries the recorded bill of the same requests (real Claude Code logs)."""

from __future__ import annotations

import numpy as np
import pytest

from replay.ingest import ingest
from replay.metrics.recorded_bill import request_bill, runs_bill
from replay.policies import Budget, make_policy
from replay.simulator.load import load_runs
from replay.simulator.request_costs import one_hour_share
from replay.simulator.run import simulate_run
from replay.store import open_store

FILES = ("ccs-livecd-gen-155c3456.jsonl", "ccl-worktrees-ef958aa1-main.jsonl", "ccv-sample-5c0375b4.jsonl")


@pytest.fixture(scope="module")
def rows(corpus, tmp_path_factory):
    con = open_store(tmp_path_factory.mktemp("sim-bill") / "s.duckdb")
    ingest(con, [corpus / "claude-code" / f for f in FILES])
    runs = load_runs(con)
    out = {r.run_id: (r, simulate_run(r, make_policy("recorded", {}), None, Budget(200_000))[1]) for r in runs}
    bill = {r["run_id"]: r["cost_usd"] for r in runs_bill(request_bill(con)).iter_rows(named=True)}
    con.close()
    return out, bill


def test_every_row_carries_the_recorded_bill(rows):
    out, bill = rows
    assert out and all(row["recorded_cost_usd"] == pytest.approx(bill[rid], rel=1e-12) for rid, (_, row) in out.items())


def test_sidechains_served_by_another_model_are_priced_at_it(rows):
    # the Task sidechains of an Opus 4.1 session ran on Sonnet 4 (one uncached request each): priced as Opus they
    # cost 5x their bill (+400%), each at its own model they cost the bill
    out, _ = rows
    side = [
        (run, row) for rid, (run, row) in out.items() if rid.startswith("ccs-livecd-gen-155c3456") and "/side" in rid
    ]
    assert len(side) == 5
    for run, row in side:
        # the run's model is the one that served most of its requests (the parent session's is Opus 4.1)
        assert run.model == "claude-sonnet-4-20250514" and set(run.req_model) == {"claude-sonnet-4-20250514"}
        assert row["cost_usd"] == pytest.approx(row["recorded_cost_usd"], rel=1e-3)


def test_simulated_writes_follow_the_logs_one_hour_writes(rows):
    out, _ = rows
    run, row = next(v for k, v in out.items() if k.startswith("ccl-worktrees-ef958aa1-main"))
    assert (one_hour_share(run) == 1.0).all()  # Claude Code 2.1.114 wrote every cache entry for 1 hour
    assert row["written_1h_tokens"] == row["written_tokens"] > 0
    five_min = [v for k, v in out.items() if k.startswith("ccv-sample")]
    assert all(row["written_1h_tokens"] == 0 and row["written_tokens"] > 0 for _, row in five_min)
    assert all((np.nan_to_num(one_hour_share(r)) == 0).all() for r, _ in five_min)  # 1.0.108: 5 min writes


def test_no_runs_cost_nothing_and_do_not_fail():
    from replay.simulator.kernels.packed import pack
    from replay.sweeps.adapter import resolve
    from replay.sweeps.point_rows import point_frame

    assert point_frame(pack([]), resolve("seed_a", {}, "anthropic")).height == 0  # a sweep's warm-up does this
