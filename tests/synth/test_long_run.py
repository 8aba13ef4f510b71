"""The long synthetic runs and the run-length benchmark built on them (tiny sizes, so it keeps working)."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np

from replay.run_arrays import KIND_CODE
from replay.synth.long_run import long_run

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_linear.py"


def test_one_call_and_result_per_request():
    run = long_run(120, seed=3)
    calls = run.kind == KIND_CODE["tool_call"]
    results = run.kind == KIND_CODE["tool_result"]
    assert run.n_requests == 120
    assert calls.sum() == results.sum() == 120
    assert (run.pair[calls] >= 0).all()
    assert run.chars[results].min() >= 200 and run.chars[results].max() <= 12_000
    assert np.all(np.diff(run.req_end) > 0)  # every request adds items
    assert (long_run(120, seed=3).tokens == run.tokens).all()  # fixed by the seed


def test_benchmark_runs_and_reports_ratios():
    spec = importlib.util.spec_from_file_location("bench_linear", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    sizes = (20, 80)
    results = bench.measure(["masking", "full"], sizes, min_time=0.0)
    assert list(results) == ["full", "masking"]
    assert results["full"]["ratio"] == 1.0
    for row in results.values():
        assert len(row["rate"]) == 2 and all(r > 0 for r in row["rate"])
        assert math.isfinite(row["exponent"])
    table = bench.table(results, sizes)
    assert "| masking |" in table and "exponent 20->80" in table
