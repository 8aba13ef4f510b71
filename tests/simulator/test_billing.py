"""Each run is cached and priced under its own provider's rules by default; outputs, summaries and 1 h writes are
priced as providers bill; an unknown model warns and has no cost."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from replay.metrics.prices import Pricing, library_prices
from replay.policies import Budget, make_policy
from replay.readers.base import ReadContext
from replay.readers.claude_code import READER
from replay.run_arrays import TOOL_CALL
from replay.simulator.caches import anthropic_min_cacheable, make_cache
from replay.simulator.load import recorded_ttl
from replay.simulator.results import billing_warnings, simulate_many
from replay.simulator.run import simulate_run
from tests.simulator.synth import synth_run

BIG = Budget(10**7)


def as_model(model: str | None, n: int = 20, seed: int = 3, **changes):
    return replace(synth_run(n, seed=seed), model=model, **changes)


def prompt_usd(cols: dict, read: float, write: float, inp: float) -> float:
    uncached = int((cols["prompt_tokens"] - cols["cached_tokens"] - cols["written_tokens"]).sum())
    return (uncached * inp + int(cols["cached_tokens"].sum()) * read + int(cols["written_tokens"].sum()) * write) / 1e6


def test_gpt_run_is_cached_and_priced_under_openai_rules_by_default():
    cols, row = simulate_run(as_model("gpt-4o"), make_policy("full"), None, BIG)
    gpt = library_prices("gpt-4o")
    assert row["cache_model"] == "openai" and row["price_source"].endswith("openai/gpt-4o")
    assert cols["written_tokens"].sum() == 0 and cols["cached_tokens"].sum() > 0  # automatic, no write premium
    assert row["cache_read_per_mtok"] == pytest.approx(0.5 * gpt.input)  # gpt-4o's own discount, not 0.1x
    assert row["prompt_cost_usd"] == pytest.approx(prompt_usd(cols, gpt.cache_read, gpt.input, gpt.input))
    assert row["billing_note"] == ""


def test_claude_run_is_cached_and_priced_under_anthropic_rules_by_default():
    cols, row = simulate_run(as_model("claude-sonnet-4-5-20250929"), make_policy("full"), None, BIG)
    p = library_prices("claude-sonnet-4-5-20250929")
    assert row["cache_model"] == "anthropic" and row["cache_ttl"] == 300
    assert cols["written_tokens"].sum() > 0
    assert (row["cache_read_per_mtok"], row["cache_write_per_mtok"]) == (p.cache_read, p.cache_write)
    assert row["prompt_cost_usd"] == pytest.approx(prompt_usd(cols, p.cache_read, p.cache_write, p.input))


def test_deepseek_run_gets_deepseek_cache_and_unknown_provider_none():
    _, row = simulate_run(as_model("litellm_proxy/deepseek-chat"), make_policy("full"), None, BIG)
    assert row["cache_model"] == "deepseek" and row["cache_hit_rate"] > 0.5
    assert row["cache_read_per_mtok"] == library_prices("deepseek-chat").cache_read


def test_gemini_run_gets_implicit_caching_from_its_minimum():
    _, row = simulate_run(as_model("gemini-2.5-pro"), make_policy("full"), None, BIG)
    assert row["cache_model"] == "gemini" and row["cache_hit_rate"] > 0.5
    assert row["cache_read_per_mtok"] == library_prices("gemini-2.5-pro").cache_read
    gemini = make_cache("gemini")
    assert gemini.min_for("gemini-2.5-flash") == 2048 and gemini.min_for("gemini-3-flash-preview") == 4096
    assert make_cache("gemini", min_tokens=1024).min_for("gemini-3-flash-preview") == 1024


def test_cache_override_applies_its_own_rules_to_every_run():
    run = as_model("gpt-4o")
    cols, row = simulate_run(run, make_policy("full"), make_cache("anthropic"), BIG)
    gpt = library_prices("gpt-4o")
    assert row["cache_model"] == "anthropic" and cols["written_tokens"].sum() > 0
    assert row["cache_read_per_mtok"] == pytest.approx(0.1 * gpt.input)
    assert row["cache_write_per_mtok"] == pytest.approx(1.25 * gpt.input)
    runs = [run, as_model("claude-opus-4-1", seed=4)]
    sim = simulate_many(runs, make_policy("full"), make_cache("openai"), BIG)
    assert sim.runs["cache_model"].to_list() == ["openai", "openai"] and sim.cache_model == "openai"
    auto = simulate_many(runs, make_policy("full"), None, BIG)
    assert auto.runs["cache_model"].to_list() == ["openai", "anthropic"] and auto.cache_model == "auto"


def test_minimax_is_billed_as_its_own_cache_under_either_model():
    """MiniMax's listed read price under its automatic cache and under breakpoints (Claude Code) alike, and no write
    billed as one under either (replay.simulator.provider_caches); another provider's run under breakpoints pays
    their multipliers, writes included."""
    mm = library_prices("MiniMax-M2.7")
    assert mm.cache_read == pytest.approx(0.2 * mm.input) and mm.cache_write == pytest.approx(1.25 * mm.input)
    for cache in ("openai", "anthropic"):
        cols, row = simulate_run(as_model("MiniMax-M2.7"), make_policy("full"), make_cache(cache), BIG)
        assert row["cache_read_per_mtok"] == pytest.approx(mm.cache_read)
        assert row["cache_write_per_mtok"] == pytest.approx(mm.input)
        assert row["prompt_cost_usd"] == pytest.approx(prompt_usd(cols, mm.cache_read, mm.input, mm.input))
    gpt = library_prices("gpt-4o")
    cols, row = simulate_run(as_model("gpt-4o"), make_policy("full"), make_cache("anthropic"), BIG)
    assert cols["written_tokens"].sum() > 0
    assert row["prompt_cost_usd"] == pytest.approx(prompt_usd(cols, 0.1 * gpt.input, 1.25 * gpt.input, gpt.input))


def test_a_minimax_request_that_reports_a_write_is_billed_one():
    """MiniMax reports no write from its passive cache; a request whose usage reports one took the explicit path of
    its Anthropic-compatible API, which bills it at the listed write price. olivia215215/cabinet-governance 5ccf4387
    (one request of MiniMax-M2.7 that wrote 21,949 tokens) was billed 19.4% under its recorded cost with every
    write priced as input."""
    mm = library_prices("MiniMax-M2.7")
    run = as_model("MiniMax-M2.7")
    wrote = np.zeros(run.n_requests, np.int64)
    wrote[[0, 5]] = 1_000
    reported = replace(run, rec_write=wrote, rec_prompt=np.full(run.n_requests, 10_000, np.int64))
    cols, row = simulate_run(reported, make_policy("full"), make_cache("anthropic"), BIG)
    write_price = np.where(wrote > 0, mm.cache_write, mm.input)
    uncached = cols["prompt_tokens"] - cols["cached_tokens"] - cols["written_tokens"]
    usd = (uncached * mm.input + cols["cached_tokens"] * mm.cache_read + cols["written_tokens"] * write_price).sum()
    assert cols["written_tokens"][[0, 5]].sum() > 0
    assert row["prompt_cost_usd"] == pytest.approx(usd / 1e6)


def test_a_provider_caching_by_its_listed_price_is_billed_at_it():
    """A provider with no cache rules of its own here (xAI) whose price data lists a cache-read price caches and
    bills that price: its run is simulated under the automatic cache and read at the listed price, as its bill
    does (mini-swe-agent on grok-4-fast through OpenRouter: -19.6% of the bill when read at 0.1x input)."""
    grok = library_prices("x-ai/grok-4-fast")
    assert grok.provider == "x-ai" and grok.cache_read == pytest.approx(0.25 * grok.input)
    cols, row = simulate_run(as_model("x-ai/grok-4-fast"), make_policy("full"), None, BIG)
    assert row["cache_model"] == "openai" and cols["cached_tokens"].sum() > 0
    assert row["cache_read_per_mtok"] == pytest.approx(grok.cache_read)
    assert row["prompt_cost_usd"] == pytest.approx(prompt_usd(cols, grok.cache_read, grok.input, grok.input))


def test_unknown_model_warns_and_has_no_cost():
    cols, row = simulate_run(as_model("my-local-model-q4"), make_policy("full"), None, BIG)
    assert row["price_source"] == "unknown" and row["cost_usd"] is None and row["prompt_cost_usd"] is None
    assert row["cache_model"] == "none" and "no price for model 'my-local-model-q4'" in row["billing_note"]
    sim = simulate_many([as_model("my-local-model-q4"), as_model("gpt-4o", seed=5)], make_policy("full"), None, BIG)
    lines = billing_warnings(sim.runs)
    assert len(lines) == 1 and lines[0].startswith("WARNING: my-local-model-q4 (1 run(s))") and "--prices" in lines[0]
    priced = simulate_many(
        [as_model("my-local-model-q4")],
        make_policy("full"),
        None,
        BIG,
        pricing=Pricing(sets={"input": 1.0, "output": 2.0}),
    )
    assert priced.runs["cost_usd"][0] > 0 and priced.runs["price_source"][0] == "--price"
    assert priced.sim_id != sim.sim_id


def test_output_tokens_are_in_run_cost():
    run = as_model("claude-opus-4-1")
    run = replace(run, rec_output=np.full(run.n_requests, 500, dtype=np.int64))
    _, row = simulate_run(run, make_policy("full"), None, BIG)
    assert row["output_tokens"] == 500 * run.n_requests and row["output_source"] == "recorded"
    assert row["output_cost_usd"] == pytest.approx(500 * run.n_requests * 75.0 / 1e6)
    assert row["cost_usd"] == pytest.approx(row["prompt_cost_usd"] + row["summary_cost_usd"] + row["output_cost_usd"])
    _, unrecorded = simulate_run(as_model("claude-opus-4-1"), make_policy("full"), None, BIG)
    calls = run.tokens[run.kind == TOOL_CALL].sum()  # the only model output a synthetic run holds
    assert unrecorded["output_source"] == "items" and unrecorded["output_tokens"] == calls > 0


def test_one_hour_writes_from_the_log_cost_double():
    run = as_model("claude-sonnet-4-20250514", cache_ttl=3600.0)
    run.req_ts[:] = np.arange(run.n_requests) * 400.0  # gaps a 5 min cache would not survive
    cols, row = simulate_run(run, make_policy("full"), None, BIG)
    p = library_prices("claude-sonnet-4-20250514")
    assert row["cache_ttl"] == 3600 and cols["cached_tokens"][1:].min() > 0
    assert row["cache_write_per_mtok"] == pytest.approx(2 * p.input) == p.cache_write_1h
    _, five = simulate_run(replace(run, cache_ttl=None), make_policy("full"), None, BIG)
    assert five["cache_ttl"] == 300 and five["cached_tokens"] == 0


def test_recorded_ttl_from_the_log(tmp_path):
    usage = {
        "input_tokens": 3,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 5000,
        "output_tokens": 9,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 5000},
    }
    lines = [
        {"type": "user", "uuid": "u1", "sessionId": "s", "message": {"role": "user", "content": "hi"}},
        {
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "sessionId": "s",
            "requestId": "r1",
            "message": {
                "id": "m1",
                "model": "claude-opus-4-7",
                "role": "assistant",
                "usage": usage,
                "content": [{"type": "text", "text": "hello"}],
            },
        },
    ]
    path = tmp_path / "s.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines))
    run = next(r for r in READER.read(ReadContext(path=path, file_hash="0" * 32)) if hasattr(r, "metadata"))
    assert run.metadata["cache_writes"] == {"0": [0, 5000]}
    assert recorded_ttl(run.metadata["cache_writes"]) == 3600
    assert recorded_ttl({"0": [700, 0], "1": [0, 500]}) == 300 and recorded_ttl(None) is None


def test_summary_calls_are_uncached_input():
    run = as_model("claude-sonnet-4-5-20250929", n=60, seed=7)
    cols, row = simulate_run(run, make_policy("seed_a", {"summary_at": 20_000}), None, Budget(40_000, 2_000))
    summ = np.flatnonzero(cols["summarised"])
    assert len(summ) > 0
    p = library_prices("claude-sonnet-4-5-20250929")
    history = int(cols["prompt_tokens"][summ[summ > 0] - 1].sum())
    want = (history * p.input + int(cols["summary_tokens"][summ].sum()) * p.output) / 1e6
    assert row["summary_cost_usd"] == pytest.approx(want)


@pytest.mark.parametrize(
    "model,tokens",
    [
        ("claude-3-5-haiku-20241022", 2048),
        ("claude-3-haiku-20240307", 2048),
        ("claude-sonnet-4-20250514", 1024),
        ("claude-opus-4-1", 1024),
        ("claude-opus-4-5-20251101", 4096),
        ("claude-haiku-4-5", 4096),
        ("claude-sonnet-4-6", 2048),
    ],
)
def test_anthropic_min_cacheable_by_model(model, tokens):
    assert anthropic_min_cacheable(model) == tokens


def test_tune_style_model_override_prices_and_caches_as_the_new_model():
    _, row = simulate_run(as_model("gpt-4o"), make_policy("full"), None, BIG, pricing=Pricing(model="claude-haiku-4-5"))
    assert row["model"] == "claude-haiku-4-5" and row["cache_model"] == "anthropic"
    assert row["price_per_mtok"] == library_prices("claude-haiku-4-5").input


def test_cli_prices_each_run_by_its_provider_and_warns_on_unknown(corpus, tmp_path):
    import csv
    import io

    from typer.testing import CliRunner

    from replay.cli import app
    from replay.ingest import ingest
    from replay.store import open_store

    db = tmp_path / "s.duckdb"
    con = open_store(db)
    ingest(
        con,
        [
            corpus / "codex-rollout" / "codex-pharma-platform-019d20aa.jsonl",
            corpus / "claude-code" / "ccl-sample-37f83ec9.jsonl",
        ],
    )
    con.close()
    base = ["simulate", "--db", str(db), "--format", "csv", "--no-store"]
    out = CliRunner().invoke(app, base)
    assert out.exit_code == 0, out.output
    # what the cost covers, the unpriced model with its runs, and how to price it, in one warning
    assert "cost covers 1 of 2 runs; no price for the runs of gpt-5.3-codex-bak (1): price them with --prices" in (
        " ".join(out.output.split())
    )
    rows = {
        r["run_id"][:5]: r
        for r in csv.DictReader(io.StringIO(out.output[out.output.index("run_id") :]))
        if r.get("cache_model")
    }
    assert rows["codex"]["cache_model"] == "openai" and rows["codex"]["price_source"] == "unknown"
    assert rows["codex"]["cost_usd"] == "" and rows["ccl-s"]["cache_model"] == "anthropic"
    priced = CliRunner().invoke(app, [*base, "--price", "same_as=gpt-5.3-codex", "--cache", "anthropic"])
    assert priced.exit_code == 0 and "no price" not in priced.output and "cost covers" not in priced.output


def test_window_composition_includes_the_policys_summary():
    run = as_model("claude-sonnet-4-5-20250929", n=60, seed=7)
    cols, _ = simulate_run(run, make_policy("seed_a", {"summary_at": 20_000}), None, Budget(40_000, 2_000))
    with_summary = cols["summary_tokens"] > 0
    assert with_summary.any() and (cols["tok_summary"][with_summary] >= cols["summary_tokens"][with_summary]).all()
    kinds = sum(v for k, v in cols.items() if k.startswith("tok_"))
    assert (kinds == cols["prompt_tokens"]).all()


def test_sweeps_price_each_run_by_default_and_take_price_tables():
    from replay.simulator.kernels.packed import pack
    from replay.sweeps.adapter import evaluate_point, resolve
    from replay.sweeps.point_rows import point_frame
    from replay.sweeps.spec import from_dict

    spec = from_dict(
        {
            "sweep": {"policy": "seed_a"},
            "fixed": {"window": 100_000},
            "grid": {"reserve": [0]},
            "prices": {"my-local-*": {"input": 1, "output": 4, "provider": "openai"}},
        }
    )
    assert spec.cache == "auto"
    runs = [as_model("my-local-model-q4"), as_model("claude-opus-4-1", seed=9)]
    point = resolve(spec.policy, spec.points()[0], spec.cache, spec.pricing())
    rows = point_frame(pack(runs), point).to_dicts()
    assert [r["cache_model"] for r in rows] == ["openai", "anthropic"]
    assert rows[0]["price_per_mtok"] == 1 and rows[0]["price_source"] == "[prices] [my-local-model-q4]"
    assert rows[0]["cost_usd"] == pytest.approx(evaluate_point(runs[0], point)["cost_usd"])
    as_new = from_dict({"sweep": {"policy": "seed_a", "price_model": "claude-haiku-4-5"}, "fixed": {}, "grid": {}})
    assert as_new.sweep_id != from_dict({"sweep": {"policy": "seed_a"}, "fixed": {}, "grid": {}}).sweep_id
    assert as_new.pricing().prices("gpt-4o").source.endswith("anthropic/claude-haiku-4-5")
