"""A log that records usage only for the whole session is billed by it: the Copilot CLI 1.0.34 writes no usage per
request, only each model's totals in ``session.shutdown.modelMetrics`` (every call of the process, sub-agents'
included; a resumed process counts from zero). Before, such a run had no recorded bill at all, or the bill of its
summariser call alone ($0.185 where its 16 requests cost about $0.57 more)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from genai_prices import Usage, calc_price

from replay.ingest import ingest
from replay.metrics.recorded_bill import request_bill, runs_bill
from replay.metrics.session_totals import session_totals
from replay.policies import Budget, make_policy
from replay.simulator.load import load_runs
from replay.simulator.run import simulate_run
from replay.store import open_store

COPILOT = "copilot-cli/copilot-vct-events-1.0.34-20260423.jsonl"
# the file's shutdown: modelMetrics["claude-sonnet-4.6"]
REQUESTS, PROMPT, READ, OUTPUT = 6, 186_809, 151_738, 2_848


def _store(tmp_path: Path, *paths: Path):
    con = open_store(tmp_path / "s.duckdb")
    ingest(con, list(paths))
    return con


def _list_price(model: str, uncached: int, read: int, output: int) -> float:
    usage = Usage(input_tokens=uncached + read, cache_read_tokens=read, output_tokens=output)
    return float(calc_price(usage, model_ref=model, provider_id="anthropic").total_price)


def test_the_shutdown_totals_are_the_bill_of_a_run_without_per_request_usage(corpus: Path, tmp_path: Path) -> None:
    con = _store(tmp_path, corpus / COPILOT)
    (rid,) = [r for (r,) in con.execute("SELECT run_id FROM runs").fetchall()]
    metadata = json.loads(con.execute("SELECT metadata FROM runs").fetchall()[0][0])
    (total,) = session_totals(metadata)
    assert (total.model, total.requests) == ("claude-sonnet-4.6", REQUESTS)
    assert total.counts == (PROMPT - READ, READ, 0, 0, OUTPUT)  # inputTokens includes the reads
    bill = request_bill(con)
    assert bill.filter(bill["call"] == "request")["billed"].sum() == 0  # still no figure per request
    run = runs_bill(bill).row(0, named=True)
    assert (run["run_id"], run["requests"], run["billed_requests"]) == (rid, REQUESTS, REQUESTS)
    assert run["cost_usd"] == pytest.approx(_list_price("claude-sonnet-4-6", PROMPT - READ, READ, OUTPUT), rel=1e-9)
    assert run["cost_note"] == ""
    (sim,) = load_runs(con, None)
    row = simulate_run(sim, make_policy("recorded"), None, Budget(200_000))[1]
    assert row["recorded_cost_usd"] == pytest.approx(run["cost_usd"], rel=1e-9)
    assert row["recorded_cost_note"] == ""  # every request's usage is in the bill, so like for like is the whole run
    assert row["billed_cost_usd"] > 0


def _session(shutdowns: list[tuple[int, dict]], sub_agent: bool = False) -> list[dict]:
    """A 1.0.34 session: after each (requests, modelMetrics), that many one-call turns and then a shutdown."""
    events: list[dict] = [
        {"type": "session.start", "data": {"sessionId": "s", "copilotVersion": "1.0.34", "selectedModel": "m"}},
        {"type": "user.message", "data": {"content": "go"}},
    ]
    n = 0
    for requests, metrics in shutdowns:
        for _ in range(requests):
            n += 1
            events += [
                {"type": "assistant.turn_start", "data": {"turnId": str(n)}},
                {"type": "assistant.message", "data": {"messageId": f"m{n}", "content": "ok", "outputTokens": 5}},
                {"type": "assistant.turn_end", "data": {"turnId": str(n)}},
            ]
        events.append({"type": "session.shutdown", "data": {"shutdownType": "routine", "modelMetrics": metrics}})
    if sub_agent:
        start = {"toolCallId": "t1", "agentName": "explore"}
        events.insert(2, {"type": "subagent.started", "data": start})
        turn = {"type": "assistant.turn_start", "data": {"turnId": "x", "parentToolCallId": "t1"}}
        events.insert(3, turn)
    return [{**e, "id": str(i), "timestamp": f"2026-04-01T10:{i:02d}:00Z"} for i, e in enumerate(events)]


def _metrics(calls: int, prompt: int, read: int, output: int, model: str = "claude-sonnet-4.5") -> dict:
    usage = {"inputTokens": prompt, "outputTokens": output, "cacheReadTokens": read, "cacheWriteTokens": 0}
    return {model: {"requests": {"count": calls, "cost": 1}, "usage": usage}}


def _run(tmp_path: Path, events: list[dict]) -> tuple[dict, dict]:
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    con = _store(tmp_path, path)
    (main,) = con.execute("SELECT run_id, metadata FROM runs WHERE parent_run_id IS NULL").fetchall()
    run = runs_bill(request_bill(con)).filter(pl.col("run_id") == main[0]).row(0, named=True)
    return run, json.loads(main[1])


def test_a_resumed_session_adds_up_its_shutdowns(tmp_path: Path) -> None:
    """Each process counts from zero: two shutdowns after 2 and 3 calls are 5 calls in all."""
    run, _ = _run(tmp_path, _session([(2, _metrics(2, 20_000, 15_000, 100)), (3, _metrics(3, 40_000, 35_000, 300))]))
    assert run["billed_requests"] == 5
    assert run["cost_usd"] == pytest.approx(_list_price("claude-sonnet-4-5", 10_000, 50_000, 400), rel=1e-9)


@pytest.mark.parametrize(
    ("shutdowns", "sub_agent", "said"),
    [
        ([(3, _metrics(2, 20_000, 15_000, 100))], False, "count 2 model calls and the run has 3 requests"),
        ([(2, _metrics(2, 20_000, 15_000, 100))], True, "1 sub-agent run(s) share them"),
        ([(2, _metrics(2, 20_000, 25_000, 100))], False, "exceed inputTokens"),
    ],
)
def test_totals_that_are_not_the_runs_bill_are_said_and_not_billed(
    tmp_path: Path, shutdowns: list, sub_agent: bool, said: str
) -> None:
    """Totals that count other calls than the run's requests (a crash after the last shutdown, sub-agents sharing
    the session) or that do not add up bill nothing: the run keeps no recorded cost, and ingest says why."""
    run, metadata = _run(tmp_path, _session(shutdowns, sub_agent))
    assert run["cost_usd"] is None and run["cost_note"] == "no per-request usage"
    assert "session_totals" not in metadata
    assert any(said in w["message"] for w in metadata["warnings"])


def test_fidelity_scores_the_cache_share_of_session_totals(corpus: Path, tmp_path: Path) -> None:
    """The totals give the session's cache-read share (151,738 of 186,809 prompt tokens) but no prompt per request:
    fidelity's row for the run is of kind ``session``, its cache share scored against theirs and its prompts' sum
    said, never a per-request score."""
    from replay.simulator.fidelity import fidelity_frame
    from replay.tokens.counting import count_items
    from replay.tokens.loading import load_tokenizer

    con = _store(tmp_path, corpus / COPILOT)
    tok = load_tokenizer("o200k")
    count_items(con, tok)
    (row,) = fidelity_frame(con, tok.tokenizer_id).to_dicts()
    assert (row["kind"], row["requests"], row["scored"], row["median_abs_pct"]) == ("session", REQUESTS, 0, None)
    assert row["cache_share_recorded"] == pytest.approx(READ / PROMPT, abs=1e-12)
    assert abs(row["cache_share_simulated"] - row["cache_share_recorded"]) <= 0.05
    assert f"add up to {PROMPT:,} recorded" in row["reason"]


def test_the_replay_of_session_totals_is_billed_like_them(corpus: Path, tmp_path: Path) -> None:
    """The totals give the scale of the run's prompts (``totals:copilot-cli``) and record cache reads but not one
    write (the CLI reports none for Anthropic models): that bill holds what the server wrote as uncached input, so
    the like-for-like cost prices the replay's writes as input, while ``cost_usd`` keeps the provider's write
    price. Before: no bill; at scale 1 with writes at 1.25x, +3.2% by two errors that cancelled."""
    from replay.tokens.counting import count_items
    from replay.tokens.loading import load_tokenizer

    con = _store(tmp_path, corpus / COPILOT)
    tok = load_tokenizer("o200k")
    count_items(con, tok)
    (run,) = load_runs(con, tok.tokenizer_id)
    assert run.prompt_source == "totals:copilot-cli"
    cols, row = simulate_run(run, make_policy("recorded"), None, Budget(200_000))
    assert cols["written_tokens"].sum() > 0
    assert abs(row["billed_cost_usd"] / row["recorded_cost_usd"] - 1) <= 0.03
    assert row["cost_usd"] > row["billed_cost_usd"]  # the writes at the write price
