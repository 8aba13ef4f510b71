"""The uncalibrated band of an arm (replay.behaviour.rerun): quantile bins, a reference's no-loop spread, the band's
ends around the h = 0 and h = 1 ratios."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from replay.behaviour.pool import PoolFlags
from replay.behaviour.pressure import WorkingSet
from replay.behaviour.rerun import arm_band, no_loop_spread
from replay.behaviour.spread import BINS, quantile_bins
from replay.errors import ReplayError


def test_quantile_bins_by_rank_ties_together() -> None:
    lengths = np.array([5, 1, 1, 9, 3, 7, 2, 8, 4, 6])
    bins = quantile_bins(lengths)
    assert bins.min() == 0 and bins.max() == BINS - 1 and bins[1] == bins[2]
    assert (np.diff(bins[np.argsort(lengths)]) >= 0).all()


def write(path: Path, raw: list[int], pol: list[int]) -> Path:
    rows = [f"t{i},{r},{p}" for i, (r, p) in enumerate(zip(raw, pol, strict=True))]
    path.write_text("task,raw_turns,policy_turns\n" + "\n".join(rows) + "\n")
    return path


def pool(blind_from: int | None, length: int = 60) -> PoolFlags:
    b = np.zeros(length, dtype=bool)
    if blind_from is not None:
        b[blind_from:] = True
    ws = WorkingSet(b, np.ones(length, dtype=bool), b, blind_from if blind_from is not None else length)
    return PoolFlags(("r0",), (ws,))


def test_band_spreads_around_the_no_loop_ratio(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    raw = rng.integers(5, 200, 300)
    ref = no_loop_spread(write(tmp_path / "ref.csv", raw.tolist(), np.maximum(1, raw // 2).tolist()))
    assert ref.ratio == pytest.approx(0.5, abs=0.01) and ref.tasks == 300
    lo, hi = arm_band(rng.integers(5, 200, 50), pool(None), 250, ref)  # the pool never hides: no loops
    assert lo < hi and 0.4 < lo and hi < 0.6
    lo2, hi2 = arm_band(rng.integers(5, 200, 50), pool(10), 250, ref)  # any exposure may tip a loop to the cap
    assert hi2 > 1.5


def test_band_holds_the_interval_an_arm_run_so_reports(tmp_path: Path) -> None:
    """The band is held against an arm's 95% interval: with no loops (the pool never hides), an arm of 50 tasks whose
    turns move as the reference's did reports an interval inside the band, though its ends lie beyond the spread of
    the arm's ratio alone."""
    rng = np.random.default_rng(2)
    ref_raw = rng.integers(5, 200, 400)
    ref_pol = np.maximum(1, (ref_raw * rng.lognormal(0, 0.5, 400)).astype(int))
    ref = no_loop_spread(write(tmp_path / "ref.csv", ref_raw.tolist(), ref_pol.tolist()))
    raw = rng.integers(5, 200, 50)
    lo, hi = arm_band(raw, pool(None), 250, ref)
    for seed in range(5):
        arm_rng = np.random.default_rng(10 + seed)
        policy = np.minimum(raw * ref.draw(raw, arm_rng), 250)  # no run goes past the cap
        i = arm_rng.integers(0, 50, (2000, 50))
        ratios = policy[i].sum(1) / raw[i].sum(1)
        assert lo <= np.percentile(ratios, 2.5) and np.percentile(ratios, 97.5) <= hi


def test_a_reference_too_small_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ReplayError, match="needs at least"):
        no_loop_spread(write(tmp_path / "ref.csv", [10, 20], [9, 21]))
