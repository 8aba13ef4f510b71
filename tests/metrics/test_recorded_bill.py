"""The recorded bill on real Claude Code logs: 1 h cache writes kept apart and priced at their own rate, each request
at the model that served it, `replay runs` and `--by model|day`. Expectations are computed here from the files
themselves (one usage per requestId, the assistant message's model) and genai-prices' calc_price."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from genai_prices import Usage, calc_price
from typer.testing import CliRunner

from replay.cli import app
from replay.errors import ReplayError
from replay.ingest import ingest
from replay.metrics.recorded_bill import grouped_bill, request_bill, runs_bill
from replay.store import open_store

ONE_HOUR = "ccl-worktrees-ef958aa1-main.jsonl"  # Claude Code 2.1.114: every write is a 1 h write
SWITCHED = "ccs-livecd-gen-155c3456.jsonl"  # Opus 4.1 session whose Task sidechains ran on Sonnet 4
SPLIT_ZEROS = "ccb-android-avd-opus-c6455dae.jsonl"  # writes with a cache_creation split of zeros


def file_usage(path: Path) -> list[dict]:
    """One usage per API response of the main and sidechain lines (the last line of a requestId wins)."""
    seen: dict[str, dict] = {}
    for line in path.read_text().splitlines():
        obj = json.loads(line)
        msg = obj.get("message") if isinstance(obj.get("message"), dict) else {}
        if obj.get("type") != "assistant" or msg.get("model") in (None, "<synthetic>"):
            continue
        rid = obj.get("requestId") or msg.get("id")
        if isinstance(msg.get("usage"), dict):
            seen[rid] = {"model": msg["model"], **msg["usage"], "sidechain": bool(obj.get("isSidechain"))}
    return list(seen.values())


def library_bill(usages: list[dict]) -> float:
    """Sum over responses of genai-prices' calc_price (1 h writes from cache_creation.ephemeral_1h_input_tokens)."""
    total = 0.0
    for u in usages:
        read, write = u.get("cache_read_input_tokens") or 0, u.get("cache_creation_input_tokens") or 0
        split = u.get("cache_creation") or {}
        usage = Usage(
            input_tokens=u["input_tokens"] + read + write,
            cache_read_tokens=read,
            cache_write_tokens=write,
            cache_write_1h_tokens=split.get("ephemeral_1h_input_tokens") or 0,
            output_tokens=u.get("output_tokens") or 0,
        )
        total += float(calc_price(usage, u["model"]).total_price)
    return total


@pytest.fixture(scope="module")
def store(corpus, tmp_path_factory):
    path = tmp_path_factory.mktemp("bill") / "s.duckdb"
    con = open_store(path)
    ingest(con, [corpus / "claude-code" / name for name in (ONE_HOUR, SWITCHED, SPLIT_ZEROS)])
    con.close()
    return path


def runs_of(con, name: str) -> list[str]:
    return [r[0] for r in con.execute("SELECT run_id FROM runs WHERE source_path LIKE ?", [f"%{name}"]).fetchall()]


def test_one_hour_writes_are_their_own_column(store, corpus):
    con = open_store(store, read_only=True)
    usages = file_usage(corpus / "claude-code" / ONE_HOUR)
    want = sum(u["cache_creation"]["ephemeral_1h_input_tokens"] for u in usages)
    got = con.execute(
        "SELECT sum(cache_write_1h), sum(cache_write) FROM requests WHERE run_id IN (SELECT unnest(?))",
        [runs_of(con, ONE_HOUR)],
    ).fetchone()
    assert got == (want, want) and want == 102_189
    # a split of zeros beside cache_creation_input_tokens: 1 h is 0, the writes stay (5 minute, the API default)
    zeros = con.execute(
        "SELECT sum(cache_write_1h), sum(cache_write) FROM requests WHERE run_id IN (SELECT unnest(?))",
        [runs_of(con, SPLIT_ZEROS)],
    ).fetchone()
    assert zeros[0] == 0 and zeros[1] > 0


def test_one_hour_writes_are_billed_at_twice_input(store, corpus):
    con = open_store(store, read_only=True)
    rows = runs_bill(request_bill(con, run_ids=runs_of(con, ONE_HOUR)))
    want = library_bill(file_usage(corpus / "claude-code" / ONE_HOUR))
    assert rows["cost_usd"].sum() == pytest.approx(want, rel=1e-9)
    # the same writes at the 5 minute rate would bill 102,189 x (10 - 6.25) USD/Mtok less
    assert want - 102_189 * 3.75 / 1e6 < rows["cost_usd"].sum()


def test_each_request_is_billed_at_the_model_that_served_it(store, corpus):
    con = open_store(store, read_only=True)
    usages = file_usage(corpus / "claude-code" / SWITCHED)
    assert {u["model"] for u in usages if u["sidechain"]} == {"claude-sonnet-4-20250514"}
    bill = request_bill(con, run_ids=runs_of(con, SWITCHED))
    assert runs_bill(bill)["cost_usd"].sum() == pytest.approx(library_bill(usages), rel=1e-9)
    by_model = {r["model"]: r for r in grouped_bill(bill, "model").iter_rows(named=True)}
    sonnet = [u for u in usages if u["model"] == "claude-sonnet-4-20250514"]
    assert by_model["claude-sonnet-4-20250514"]["requests"] == len(sonnet)
    assert by_model["claude-sonnet-4-20250514"]["cost_usd"] == pytest.approx(library_bill(sonnet), rel=1e-9)


def test_runs_shows_cost_and_groups_by_model_and_day(store, corpus):
    runner = CliRunner()
    res = runner.invoke(app, ["runs", "--db", str(store), "--format", "json"])
    assert res.exit_code == 0, res.output
    rows = json.loads(res.stdout)
    total = sum(library_bill(file_usage(corpus / "claude-code" / n)) for n in (ONE_HOUR, SWITCHED, SPLIT_ZEROS))
    assert sum(r["cost_usd"] for r in rows) == pytest.approx(total, rel=1e-9)
    by_model = json.loads(runner.invoke(app, ["runs", "--db", str(store), "--by", "model", "--format", "json"]).stdout)
    assert {r["model"] for r in by_model} == {
        "claude-opus-4-7",
        "claude-opus-4-1-20250805",
        "claude-sonnet-4-20250514",
        "claude-opus-4-8",
    }
    assert sum(r["cost_usd"] for r in by_model) == pytest.approx(total, rel=1e-9)
    assert sum(r["cache_write_1h"] for r in by_model) == 102_189
    by_day = runner.invoke(app, ["runs", "--db", str(store), "--by", "day"], env={"COLUMNS": "80"})
    assert by_day.exit_code == 0 and max(len(line) for line in by_day.stdout.splitlines()) <= 80
    assert "recorded cost of" in by_day.stdout
    csv = runner.invoke(app, ["runs", "--db", str(store), "--by", "model", "--format", "csv"]).stdout
    assert csv.splitlines()[0].startswith("model,runs,requests,cost_usd,input_tokens")
    bad = runner.invoke(app, ["runs", "--db", str(store), "--by", "fortnight"])
    assert isinstance(bad.exception, ReplayError) and "choose run (the default), model, harness" in str(bad.exception)


@pytest.mark.parametrize("by", ["harness", "week", "month"])
def test_every_grouping_sums_to_the_bill(store, corpus, by):
    """As ccusage groups it: by harness, ISO week (its Monday) or month, the same total as the runs."""
    total = sum(library_bill(file_usage(corpus / "claude-code" / n)) for n in (ONE_HOUR, SWITCHED, SPLIT_ZEROS))
    rows = json.loads(CliRunner().invoke(app, ["runs", "--db", str(store), "--by", by, "--format", "json"]).stdout)
    assert sum(r["cost_usd"] for r in rows) == pytest.approx(total, rel=1e-9)
    if by == "harness":
        assert [r["harness"] for r in rows] == ["claude-code"]
    if by == "week":
        assert all(date.fromisoformat(r["week"]).weekday() == 0 for r in rows if r["week"])


def test_since_and_until_take_the_requests_of_those_days(store):
    con = open_store(store, read_only=True)
    days = sorted({d for d in request_bill(con)["day"].to_list() if d is not None})
    first, last = days[0], days[-1]
    runner = CliRunner()
    whole = json.loads(runner.invoke(app, ["runs", "--db", str(store), "--by", "day", "--format", "json"]).stdout)
    one = json.loads(
        runner.invoke(
            app,
            [
                "runs",
                "--db",
                str(store),
                "--by",
                "day",
                "--format",
                "json",
                "--since",
                str(first),
                "--until",
                str(first),
            ],
        ).stdout
    )
    assert [r["day"] for r in one] == [str(first)] and one[0] == whole[0]
    rest = json.loads(runner.invoke(app, ["runs", "--db", str(store), "--format", "json", "--since", str(last)]).stdout)
    assert rest and all(r["requests"] > 0 for r in rest)


def test_an_unpriced_model_is_named_and_left_out_of_totals(tmp_path):
    log = [
        {
            "type": "run",
            "format": "replay-canonical/1",
            "run": "r1",
            "model": "unheard-of-\x1b[31mmodel",
            "harness": "h",
        },
        {"type": "item", "kind": "user_text", "role": "user", "text": "hi"},
        {"type": "request", "input_tokens": 1000, "output_tokens": 10},
    ]
    (tmp_path / "u.jsonl").write_text("\n".join(json.dumps(r) for r in log) + "\n")
    db = tmp_path / "s.duckdb"
    assert CliRunner().invoke(app, ["ingest", str(tmp_path / "u.jsonl"), "--db", str(db)]).exit_code == 0
    res = CliRunner().invoke(app, ["runs", "--db", str(db), "--wide"])
    assert res.exit_code == 0, res.output
    assert "recorded cost of 0 of 1 runs" in res.stdout and "no price: unheard-of-\\x1b[31mmodel" in res.stdout
    assert "\x1b" not in res.stdout  # the escape from the log is shown, not sent to the terminal
    rows = json.loads(CliRunner().invoke(app, ["runs", "--db", str(db), "--format", "json"]).stdout)
    assert rows[0]["cost_usd"] is None and rows[0]["unpriced_requests"] == 1
