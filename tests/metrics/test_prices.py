"""Prices from genai-prices per model and provider; price files and --price overrides; unknown models are NaN."""

from __future__ import annotations

import math

import pytest

from replay.errors import ReplayError
from replay.metrics.prices import Pricing, library_prices, load_price_file, parse_price_sets, pricing_from_options


def test_library_prices_by_provider():
    gpt = library_prices("gpt-4o")
    assert gpt.provider == "openai" and gpt.known and "openai/gpt-4o" in gpt.source
    assert gpt.cache_read == pytest.approx(0.5 * gpt.input)  # gpt-4o reads at half price, not a tenth
    assert gpt.output == pytest.approx(4 * gpt.input)
    opus = library_prices("claude-opus-4-1-20250805")
    assert opus.provider == "anthropic" and (opus.input, opus.output) == (15.0, 75.0)
    assert opus.cache_write == pytest.approx(1.25 * opus.input) and opus.cache_write_1h == pytest.approx(2 * opus.input)
    assert opus.cache_read == pytest.approx(0.1 * opus.input)


@pytest.mark.parametrize(
    "ref,provider",
    [
        ("litellm_proxy/deepseek-chat", "deepseek"),
        ("openai/gpt-4o-mini", "openai"),
        ("litellm_proxy/claude-sonnet-4-20250514", "anthropic"),
        ("MiniMax-M2.7", "minimax"),
    ],
)
def test_routed_names_find_the_model(ref, provider):
    p = library_prices(ref)
    assert p.known and p.provider == provider


def test_unknown_model_is_nan_never_a_default():
    p = library_prices("my-local-model-q4")
    assert not p.known and math.isnan(p.input) and math.isnan(p.output) and p.source == "unknown"
    codex = library_prices("gpt-5.3-codex-bak")  # an unknown model whose name says whose API it uses
    assert not codex.known and codex.provider == "openai"


def test_price_file_exact_glob_and_same_as(tmp_path):
    f = tmp_path / "prices.toml"
    f.write_text(
        '["gpt-5.3-codex-bak"]\nsame_as = "gpt-5.3-codex"\n\n["qwen*"]\ninput = 0.2\noutput = 0.6\n'
        'provider = "openai"\n\n["claude-opus-4-7"]\ninput = 4\n'
    )
    pricing = pricing_from_options(f)
    codex = pricing.prices("gpt-5.3-codex-bak")
    assert codex.known and codex.input == library_prices("gpt-5.3-codex").input and "same_as" in codex.source
    qwen = pricing.prices("Qwen3.5-9B-Q8_0".lower())
    assert (qwen.input, qwen.output, qwen.provider) == (0.2, 0.6, "openai") and str(f) in qwen.source
    opus = pricing.prices("claude-opus-4-7")
    assert opus.input == 4 and opus.output == library_prices("claude-opus-4-7").output
    assert pricing.prices("gpt-4o") == library_prices("gpt-4o")


def test_json_price_file(tmp_path):
    f = tmp_path / "p.json"
    f.write_text('{"local-llama": {"input": 0, "output": 0}}')
    assert load_price_file(f) == {"local-llama": {"input": 0.0, "output": 0.0}}


def test_price_sets_apply_to_every_run_and_model_override():
    pricing = Pricing(sets=parse_price_sets(["input=1", "output=2", "cache_read=0.1"]))
    p = pricing.prices("no-such-model")
    assert p.known and (p.input, p.output, p.cache_read) == (1.0, 2.0, 0.1) and p.source == "--price"
    as_new = Pricing(model="claude-haiku-4-5").prices("gpt-4o")
    assert as_new == library_prices("claude-haiku-4-5")


@pytest.mark.parametrize(
    "sets,match",
    [
        (["inptu=3"], "unknown price key"),
        (["input=cheap"], "not a number"),
        (["input"], "key=value"),
        (["output=-1"], ">= 0"),
    ],
)
def test_bad_price_sets_are_errors(sets, match):
    with pytest.raises(ReplayError, match=match):
        parse_price_sets(sets)


def test_bad_price_file_names_the_file(tmp_path):
    f = tmp_path / "p.toml"
    f.write_text("[m]\ninput = 'x'\n")
    with pytest.raises(ReplayError, match=r"p\.toml \[m\]: input"):
        load_price_file(f)
    with pytest.raises(ReplayError, match="same_as"):
        Pricing(sets={"same_as": "no-such-model"}).prices("x")
