"""A Claude Code response that ran several server-side iterations (``usage.iterations``: the executor, the advisor's
sub-inference at its own model, the executor again) is billed iteration by iteration, as the API bills it: the
request at its first ``message`` iteration, the others as server calls of the same step, each at its own model.
Expectations come from the fixture's own iterations and genai-prices' calc_price."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from genai_prices import Usage, calc_price

from replay.ingest import ingest
from replay.metrics.recorded_bill import request_bill, runs_bill
from replay.policies import Budget, make_policy
from replay.simulator.caches import AUTO
from replay.simulator.kernels.packed import pack
from replay.simulator.load import load_runs
from replay.simulator.run import simulate_run
from replay.store import open_store
from replay.sweeps.adapter import resolve
from replay.sweeps.point_rows import point_frame
from replay.tokens.counting import count_items
from replay.tokens.loading import load_tokenizer

ADVISED = Path(__file__).parents[1] / "readers" / "fixtures" / "cc-advisor-iterations.jsonl"


def _iterations() -> tuple[str, list[dict], list[dict]]:
    """(the executor's model, the advised response's iterations, the plain response's), from the file."""
    seen: dict[str, dict] = {}
    for line in ADVISED.read_text().splitlines():
        obj = json.loads(line)
        if obj["type"] == "assistant":
            seen[obj["requestId"]] = obj["message"]
    advised, plain = seen.values()
    return advised["model"], advised["usage"]["iterations"], plain["usage"]["iterations"]


def _price(it: dict, model: str) -> float:
    read, write = it["cache_read_input_tokens"], it["cache_creation_input_tokens"]
    usage = Usage(
        input_tokens=it["input_tokens"] + read + write,
        cache_read_tokens=read,
        cache_write_tokens=write,
        cache_write_1h_tokens=it["cache_creation"]["ephemeral_1h_input_tokens"],
        output_tokens=it["output_tokens"],
    )
    return float(calc_price(usage, it.get("model") or model, provider_id="anthropic").total_price)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    con = open_store(tmp_path_factory.mktemp("adv") / "a.duckdb")
    ingest(con, [ADVISED])
    return con


def test_every_iteration_is_billed_at_its_own_model(store):
    """The bill is the sum over every iteration (the API's rule); before, the advisor's call at Opus 4.7 ($0.135
    here, 73% of the run) was left out and the two executor iterations were one request."""
    model, advised, plain = _iterations()
    bill = request_bill(store)
    assert bill.select("step", "call", "model").rows() == [
        (0, "request", model),
        (1, "request", model),
        (0, "advisor", "claude-opus-4-7"),
        (0, "iteration", model),
    ]
    expected = [_price(it, model) for it in (advised[0], plain[0], advised[1], advised[2])]
    assert bill["cost_usd"].to_list() == pytest.approx(expected, rel=1e-9)
    run = runs_bill(bill).row(0, named=True)
    assert (run["requests"], run["server_calls"], run["summariser_calls"]) == (2, 2, 0)
    assert run["server_cost_usd"] == pytest.approx(sum(expected[2:]), rel=1e-9)
    assert run["cost_usd"] == pytest.approx(sum(expected), rel=1e-9)
    assert run["output_tokens"] == sum(it["output_tokens"] for it in advised + plain)


@pytest.fixture(scope="module")
def run(store):
    tok = load_tokenizer("o200k")
    count_items(store, tok)
    (only,) = load_runs(store, tok.tokenizer_id)
    return only


def test_the_recorded_policy_charges_the_server_calls_as_recorded(store, run):
    """No policy changes the advisor's call: ``simulate --policy recorded`` holds it in its cost as in the bill."""
    row = simulate_run(run, make_policy("recorded"), None, Budget(200_000))[1]
    server = runs_bill(request_bill(store)).row(0, named=True)["server_cost_usd"]
    assert row["recorded_cost_usd"] == pytest.approx(runs_bill(request_bill(store))["cost_usd"][0], rel=1e-9)
    parts = row["prompt_cost_usd"] + row["summary_cost_usd"] + row["output_cost_usd"]
    assert row["cost_usd"] == pytest.approx(parts + server, rel=1e-9)


def test_sweep_rows_charge_them_as_simulate_does(run):
    """The sweep kernels' run rows carry the same server calls: their cost is the per-request loop's."""
    row = simulate_run(run, make_policy("recorded"), None, Budget(200_000))[1]
    frame = point_frame(pack([run]), resolve("recorded", {"window": 200_000}, AUTO))
    for col in ("cost_usd", "recorded_cost_usd", "billed_cost_usd"):
        assert frame[col][0] == pytest.approx(row[col], rel=1e-9), col
