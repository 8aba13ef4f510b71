"""The summariser calls a log records beside its requests are part of its recorded bill, priced at their own model:
OpenHands V1's condenser (the MANIFEST: 108 agent requests + 4 condenser calls), checked against the SDK's own cost
figures in the file; and a Claude Code 2.1 compaction fork's summariser call. Logs that record no usage for the call
(Claude Code 1.0 and 2.0) bill none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from genai_prices import Usage, calc_price

from replay.ingest import ingest
from replay.metrics.recorded_bill import request_bill, runs_bill
from replay.metrics.summariser_calls import event_counts, recorded_calls
from replay.policies import Budget, make_policy
from replay.simulator.load import load_runs
from replay.simulator.run import simulate_run
from replay.store import open_store
from replay.tokens.counting import count_items
from replay.tokens.loading import load_tokenizer

OHV1 = "openhands-v1/ohv1-bench-swe-sonnet4-81f92eeb"
FORK = Path(__file__).parents[1] / "readers" / "fixtures" / "agent-acompact-7e41c2.jsonl"


def _sdk_metrics(corpus: Path) -> dict[str, dict]:
    """The conversation's ``base_state.json`` metrics per usage id, as the SDK wrote them."""
    (state,) = (corpus / OHV1).rglob("base_state.json")
    stats = json.loads(state.read_text())["stats"]
    return stats.get("usage_to_metrics") or stats["service_to_metrics"]


def _bill_of(corpus_db, part: str):
    rid = corpus_db.execute("SELECT run_id FROM runs WHERE run_id LIKE ? AND run_id NOT LIKE '%/%'", [part + "%"])
    rid = rid.fetchall()
    assert len(rid) == 1, rid
    return request_bill(corpus_db, run_ids=[rid[0][0]])


def test_condenser_calls_are_billed_as_the_sdk_counted_them(corpus, corpus_db):
    """The four condenser calls are billed at the condenser LLM's model; the bill of each part equals the cost the
    SDK itself recorded for it (``accumulated_cost`` of usage ids ``default`` and ``condenser``, LiteLLM's prices
    for claude-sonnet-4, the same as genai-prices' here). Before, the bill left the condenser's $0.115 out."""
    metrics = _sdk_metrics(corpus)
    bill = _bill_of(corpus_db, "ohv1-bench-swe-sonnet4")
    calls = bill.filter(bill["call"] == "summariser")
    assert calls.height == len(metrics["condenser"]["token_usages"]) == 4
    assert set(calls["model"]) == {metrics["condenser"]["model_name"]}
    assert calls["cost_usd"].sum() == pytest.approx(metrics["condenser"]["accumulated_cost"], rel=1e-9)
    run = runs_bill(bill).row(0, named=True)
    assert run["requests"] == 108 and run["summariser_calls"] == 4
    assert run["summary_cost_usd"] == pytest.approx(metrics["condenser"]["accumulated_cost"], rel=1e-9)
    whole = metrics["default"]["accumulated_cost"] + metrics["condenser"]["accumulated_cost"]
    assert run["cost_usd"] == pytest.approx(whole, rel=1e-9)


@pytest.mark.parametrize(
    "part",
    ["cc-jason-webtech-48244adb", "ccs-livecd-gen-compact-e1ffaf02", "cc-fixture-agentsessions-small"],
)
def test_claude_code_compactions_without_a_fork_bill_no_call(corpus_db, part):
    """Claude Code 1.0 and 2.0/2.1 main transcripts log a compaction's boundary, never its summariser's usage."""
    metadata = json.loads(
        corpus_db.execute(
            "SELECT metadata FROM runs WHERE run_id LIKE ? AND run_id NOT LIKE '%/%'", [part + "%"]
        ).fetchall()[0][0]
    )
    calls, made = recorded_calls(metadata)
    assert made > 0 and calls == []
    assert (_bill_of(corpus_db, part)["call"] == "summariser").sum() == 0


def test_compaction_fork_bills_its_summariser_call(tmp_path):
    """A Claude Code 2.1 compaction fork has no request of its own: its bill is the summariser's one call, priced at
    the call's model, as genai-prices prices that usage (before: the run had no cost)."""
    con = open_store(tmp_path / "f.duckdb")
    ingest(con, [FORK])
    bill = request_bill(con)
    assert bill["call"].to_list() == ["summariser"]
    ((raw,),) = con.execute("SELECT metadata FROM runs").fetchall()
    (event,) = json.loads(raw)["context_events"]
    uncached, read, write_5m, write_1h, output = event_counts(event)
    row = bill.row(0, named=True)
    assert row["model"] == event["summariser_model"]
    expected = calc_price(
        Usage(
            input_tokens=uncached + read + write_5m + write_1h,
            cache_read_tokens=read,
            cache_write_tokens=write_5m + write_1h,
            output_tokens=output,
        ),
        row["model"],
    ).total_price
    assert write_1h == 0  # the fork's writes are 5 minute ones (genai-prices' Usage has no 1 h writes)
    assert row["cost_usd"] == pytest.approx(float(expected), rel=1e-9)
    run = runs_bill(bill).row(0, named=True)
    assert run["requests"] == 0 and run["summariser_calls"] == 1 and run["cost_usd"] == row["cost_usd"]


def test_a_call_naming_no_model_is_billed_at_its_requests_model(tmp_path):
    """A summariser call whose log names no model is served by the model of the request at its step (the harness
    summarises with the session's current model): after a switch to Opus it is priced at Opus, not at the run's
    model, by ``replay runs`` and by ``simulate --policy recorded`` alike (both priced it at the run's before)."""
    usage = {"input": 20_000, "cache_read": 0, "output": 2_000}
    event = {"kind": "compaction", "step": 2, "drop": [[1, 3]], "summary_seq": 3, "trigger": "auto", "usage": usage}
    log = [
        {"type": "run", "format": "replay-canonical/1", "run": "r1", "model": "claude-sonnet-4-5", "harness": "h"},
        {"type": "item", "kind": "user_text", "role": "user", "text": "first task"},
        {"type": "request", "ts": "2026-01-01T10:00:00Z", "input_tokens": 1000, "output_tokens": 10},
        {"type": "item", "kind": "assistant_text", "role": "assistant", "text": "done"},
        {"type": "request", "ts": "2026-01-01T10:01:00Z", "input_tokens": 1100, "output_tokens": 10},
        {"type": "item", "kind": "summary", "role": "user", "text": "what happened so far"},
        {"type": "request", "ts": "2026-01-01T10:02:00Z", "input_tokens": 300, "output_tokens": 10},
    ]
    log[4]["model"] = log[6]["model"] = "claude-opus-4-1"
    log[0]["metadata"] = {"context_events": [event]}
    (tmp_path / "s.jsonl").write_text("\n".join(json.dumps(r) for r in log) + "\n")
    con = open_store(tmp_path / "s.duckdb")
    ingest(con, [tmp_path / "s.jsonl"])
    call = request_bill(con).filter(call="summariser").row(0, named=True)
    opus = calc_price(Usage(input_tokens=20_000, output_tokens=2_000), "claude-opus-4-1").total_price
    assert call["model"] == "claude-opus-4-1" and call["cost_usd"] == pytest.approx(float(opus), rel=1e-9)
    run = runs_bill(request_bill(con)).row(0, named=True)
    tok = load_tokenizer("o200k")
    count_items(con, tok)
    (arrays,) = load_runs(con, tok.tokenizer_id)
    row = simulate_run(arrays, make_policy("recorded"), None, Budget(200_000))[1]
    assert row["recorded_cost_usd"] == pytest.approx(run["cost_usd"], rel=1e-9)
