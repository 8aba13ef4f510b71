"""Window composition by tool: shares add up to the tool part of the prompt, placeholders lower result shares."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from replay.metrics.composition import UNKNOWN, tool_codes
from replay.policies import Budget, make_policy
from replay.run_arrays import build
from replay.simulator.caches import make_cache
from replay.simulator.load import load_runs
from replay.simulator.results import composition_totals, simulate_many, store_simulation
from replay.simulator.run import simulate_run, simulate_run_by_tool
from replay.store import open_store
from tests.simulator.synth import synth_run

BIG = Budget(10**7)


def tool_share(reqs: dict | pl.DataFrame) -> float:
    return float((reqs["tok_tool_call"].sum() + reqs["tok_tool_result"].sum()) / reqs["prompt_tokens"].sum())


@pytest.mark.parametrize("policy", ["full", "masking", "seed_a"])
def test_shares_sum_to_the_tool_part_of_the_prompt(policy: str) -> None:
    run = synth_run(60, seed=7)
    cols, row, by_tool = simulate_run_by_tool(run, make_policy(policy), make_cache("anthropic"), Budget(60_000))
    ref_cols, ref_row = simulate_run(run, make_policy(policy), make_cache("anthropic"), Budget(60_000))
    assert row == ref_row and all(np.array_equal(cols[c], ref_cols[c]) for c in ref_cols)  # nothing else moves
    df = by_tool.frame()
    assert df["share"].sum() == pytest.approx(tool_share(cols), rel=1e-9)
    assert df.filter(pl.col("part") == "args")["tokens"].sum() == cols["tok_tool_call"].sum()
    assert df.filter(pl.col("part") == "result")["tokens"].sum() == cols["tok_tool_result"].sum()
    assert set(df["tool"]) == {"Read", "Edit", "Bash"}  # results take their call's tool name


def test_placeholders_lower_the_result_share() -> None:
    run = synth_run(80, seed=2)
    shares = {}
    for name in ("full", "masking"):
        _, _, by_tool = simulate_run_by_tool(run, make_policy(name), make_cache("none"), BIG)
        df = by_tool.frame()
        shares[name] = {p: df.filter(pl.col("part") == p)["share"].sum() for p in ("args", "result")}
    assert shares["masking"]["result"] < shares["full"]["result"] - 0.2
    assert shares["masking"]["args"] > shares["full"]["args"]  # the same argument tokens in a smaller prompt


def test_unnamed_calls_and_results_count_as_unknown() -> None:
    items = [
        {"step": 0, "kind": "system", "chars": 400},
        {"step": 1, "kind": "tool_call", "chars": 40, "tool_name": "Read", "call_id": "a"},
        {"step": 1, "kind": "tool_result", "chars": 800, "call_id": "a"},
        {"step": 2, "kind": "tool_result", "chars": 80, "call_id": "orphan"},
        {"step": 2, "kind": "assistant_text", "chars": 80},
    ]
    run = build("u", items, [{"step": k} for k in range(3)])
    codes, names = tool_codes(run)
    assert names == ("Read", UNKNOWN) and codes.tolist() == [-1, 0, 1, 3, -1]
    _, _, by_tool = simulate_run_by_tool(run, make_policy("full"), make_cache("none"), BIG)
    got = {(r["tool"], r["part"]): r["tokens"] for r in by_tool.frame().iter_rows(named=True)}
    # chars/4 per request that holds the item: call and result in requests 1 and 2, the orphan in request 2
    assert got == {("Read", "args"): 20, ("Read", "result"): 400, (UNKNOWN, "result"): 20}


def test_simulate_stores_sim_composition(tmp_path) -> None:
    con = open_store(tmp_path / "s.duckdb")
    runs = [synth_run(20, seed=s) for s in (1, 2)]
    for _ in range(2):  # storing the same simulation again replaces its rows
        sim = simulate_many(runs, make_policy("masking"), make_cache("anthropic"), BIG)
        store_simulation(con, sim)
    rows = con.execute(
        "SELECT run_id, sum(share), count(*) FROM sim_composition WHERE sim_id = ? GROUP BY run_id ORDER BY run_id",
        [sim.sim_id],
    ).fetchall()
    assert [r for r, _, _ in rows] == sorted(r.run_id for r in runs)
    for run_id, share, n in rows:
        assert n == 6 and share == pytest.approx(tool_share(sim.requests.filter(pl.col("run_id") == run_id)))
    assert composition_totals(sim)["share"].sum() == pytest.approx(tool_share(sim.requests))
    con.close()


def test_corpus_swe_agent_composition(corpus_db) -> None:
    runs = load_runs(corpus_db.cursor(), pattern="%swea-lgetter-psf%")  # a cursor: leave the shared one clean
    assert len(runs) == 1
    cols, _, by_tool = simulate_run_by_tool(runs[0], make_policy("full"), make_cache("anthropic"), BIG)
    df = by_tool.frame()
    assert df["share"].sum() == pytest.approx(tool_share(cols))
    top = df.sort("tokens", descending=True).row(0, named=True)
    assert top["part"] == "result" and top["share"] > 0.1  # one tool's results, here `find`, dominate
