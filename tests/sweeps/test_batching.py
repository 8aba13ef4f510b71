"""Sweep results travel as columns and are stored one Arrow insert per batch, with the rows per-point frames give."""

from __future__ import annotations

import polars as pl

from replay.metrics.prices import Pricing
from replay.simulator.kernels.packed import pack
from replay.simulator.load import load_runs
from replay.sweeps import results
from replay.sweeps.adapter import resolve
from replay.sweeps.executors import Context, point_rows
from replay.sweeps.point_rows import columns_frame, point_columns, point_frame, run_billing

POINTS = [
    ({"summary_at": 40_000, "protect": 2_000}, "seed_a"),
    ({"summary_at": 90_000, "protect": 8_000}, "seed_a"),
    ({}, "full"),
]


def test_columns_of_several_points_make_the_frames_of_each(sample_db):
    packed = pack(load_runs(sample_db))
    cols = [
        point_columns(packed, resolve(policy, params, "auto"), {"point_id": str(i), "error": None})
        for i, (params, policy) in enumerate(POINTS)
    ]
    together = columns_frame(cols)
    apart = pl.concat(
        [
            point_frame(packed, resolve(policy, params, "auto"), {"point_id": str(i), "error": None})
            for i, (params, policy) in enumerate(POINTS)
        ]
    )
    assert together.height == 3 * packed.n_runs > 0
    assert together.equals(apart, null_equal=True)
    assert together["cost_usd"].null_count() < together.height  # NaN -> null only where a price is missing


def test_commit_batch_mixes_kernel_columns_and_reference_frames(sample_db):
    runs = load_runs(sample_db)
    ctx = Context("sid", "seed_a", "auto", "sess", tuple(runs))
    fast = [point_rows(ctx, (f"p{i}", params)) for i, (params, _) in enumerate(POINTS[:2])]
    assert all(isinstance(rows, dict) for _, rows in fast)
    bad = point_rows(ctx, ("p-bad", {"no_such_knob": 1}))  # refused by resolve: error rows, as row dicts
    assert isinstance(bad[1], list) and results.error_count(bad[1]) == len(runs)
    assert results.error_count(fast[0][1]) == 0
    results.commit_batch(sample_db, [rows for _, rows in fast] + [bad[1]])
    stored = sample_db.execute(
        "SELECT point_id, count(*), count(error), count(prompt_tokens) FROM sweep_results "
        "WHERE sweep_id = 'sid' GROUP BY point_id ORDER BY point_id"
    ).fetchall()
    n = len(runs)
    assert stored == [("p-bad", n, n, 0), ("p0", n, 0, n), ("p1", n, 0, n)]


def test_own_cache_billing_is_shared_per_pricing_not_across(sample_db):
    packed = pack(load_runs(sample_db))
    cheap = Pricing(sets={"input": 0.5, "output": 1.0})
    dear = Pricing(sets={"input": 50.0, "output": 100.0})
    a, _ = run_billing(packed, resolve("seed_a", {}, "auto", cheap))
    b, _ = run_billing(packed, resolve("seed_a", {"protect": 3_000}, "auto", cheap))
    c, _ = run_billing(packed, resolve("seed_a", {}, "auto", dear))
    assert a[0] is b[0]  # same pricing object, same model: one look-up
    assert [x.rates.input for x in a] != [x.rates.input for x in c]
