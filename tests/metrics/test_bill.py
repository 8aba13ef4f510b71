"""replay.metrics.bill: each request at its own model and day, 1 h writes, long-context tiers, and no price where the
data has none. Expectations come from genai-prices' own calc_price, request by request."""

from __future__ import annotations

import math
from datetime import UTC, date, datetime

import numpy as np
import pytest
from genai_prices import Usage, calc_price

from replay.metrics.bill import day_of, price_requests
from replay.metrics.prices import Pricing, library_prices


def library_usd(model: str, uncached: int, read: int, w5: int, w1h: int, out: int) -> float:
    usage = Usage(
        input_tokens=uncached + read + w5 + w1h,
        cache_read_tokens=read,
        cache_write_tokens=w5 + w1h,
        cache_write_1h_tokens=w1h,
        output_tokens=out,
    )
    return float(calc_price(usage, model).total_price)


CASES = [  # model, uncached, read, 5 min writes, 1 h writes, output
    ("claude-sonnet-4-5-20250929", 1_000, 150_000, 30_000, 40_000, 900),  # 221k input: the >200k tier, all parts
    ("claude-sonnet-4-5-20250929", 1_000, 150_000, 30_000, 10_000, 900),  # 191k: base prices
    ("claude-opus-4-7", 6, 0, 0, 27_860, 2_201),  # 1 h writes at 2x input
    ("claude-opus-4-1-20250805", 10, 20_000, 5_000, 0, 100),
    ("MiniMax-M3", 500, 2_000, 700, 0, 50),  # no write price listed: input's
    ("MiniMax-M2.7", 500, 2_000, 700, 300, 50),  # no 1 h price listed: the write price
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}-{sum(c[1:5])}")
def test_each_request_matches_genai_prices_calc_price(case):
    model, *counts = case
    bill = price_requests([model], [None], *[np.array([c]) for c in counts])
    assert bill.priced.all() and not bill.unpriced
    assert bill.total[0] == pytest.approx(library_usd(model, *counts), rel=1e-12)


def test_requests_of_one_run_priced_at_their_own_models():
    counts = [np.array(c) for c in ([10, 10], [1_000, 1_000], [500, 500], [0, 0], [100, 100])]
    bill = price_requests(["claude-opus-4-1-20250805", "claude-sonnet-4-20250514"], [None, None], *counts)
    assert bill.total[0] == pytest.approx(5 * bill.total[1])  # Opus 4.1 lists 5x Sonnet 4's prices
    assert set(bill.sources) == {"claude-opus-4-1-20250805", "claude-sonnet-4-20250514"}


def test_an_unknown_model_is_unpriced_and_named_never_a_default():
    one = [np.array([1000])] * 5
    bill = price_requests(["no-such-model-xyz"], [None], *one)
    assert not bill.priced.any() and math.isnan(bill.total[0])
    assert "no-such-model-xyz" in bill.unpriced and "no price" in bill.unpriced["no-such-model-xyz"]
    nameless = price_requests([None], [None], *one)
    assert math.isnan(nameless.total[0]) and "names no model" in nameless.unpriced["(none)"]


def test_a_hand_set_price_is_flat_and_prices_an_unknown_model():
    counts = [np.array([c]) for c in (1_000, 150_000, 30_000, 40_000, 900)]
    flat = Pricing(sets={"input": 3.0})
    assert not any("input" in t for _, t in flat.prices("claude-sonnet-4-5-20250929").tiers)
    assert library_prices("claude-sonnet-4-5-20250929").tiers  # the library lists the >200k tier
    own = Pricing(table={"my-model": {"input": 1.0, "output": 2.0}})
    bill = price_requests(["my-model"], [None], *counts, pricing=own)
    assert bill.total[0] == pytest.approx((1_000 + 150_000 + 70_000) * 1.0 / 1e6 + 900 * 2.0 / 1e6)


def test_prices_are_those_of_the_request_day():
    # genai-prices lists Sonnet 4.6 with a >200k tier until 2026-03-12 and flat prices from 2026-03-13
    before, after = (
        library_prices("claude-sonnet-4-6", date(2026, 3, 1)),
        library_prices("claude-sonnet-4-6", date(2026, 4, 1)),
    )
    assert before.tiers and not after.tiers
    counts = [np.array([c, c]) for c in (1_000, 210_000, 0, 0, 100)]
    bill = price_requests(["claude-sonnet-4-6"] * 2, [date(2026, 3, 1), date(2026, 4, 1)], *counts)
    usage = Usage(input_tokens=211_000, cache_read_tokens=210_000, output_tokens=100)
    for usd, day in zip(
        bill.total, (datetime(2026, 3, 1, 12, tzinfo=UTC), datetime(2026, 4, 1, 12, tzinfo=UTC)), strict=True
    ):
        assert usd == pytest.approx(
            float(calc_price(usage, "claude-sonnet-4-6", genai_request_timestamp=day).total_price)
        )
    assert bill.total[0] > 1.4 * bill.total[1]


def test_day_of_reads_iso_and_epoch_and_refuses_junk():
    assert day_of("2025-08-25T10:00:00.123Z") == date(2025, 8, 25)
    assert day_of(None) is None and day_of("yesterday") is None and day_of(float("nan")) is None
