"""The turn band and the paired calibration (issue 24): properties of the band, a calibration that reproduces its
own arm, the study's OpenHands M=10 arm fitted on the corpus's OpenHands pool."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.behaviour.band import Propensity, band, loop_p, turns
from replay.behaviour.calibration import fit, held_out, ratio, read_paired
from replay.behaviour.pool import PoolFlags, PressureCurve, pool_flags
from replay.behaviour.pressure import WorkingSet
from replay.behaviour.table import BandSettings, behaviour_rows
from replay.errors import ReplayError
from replay.policies import Budget, make_policy
from replay.simulator.load import load_runs

ARMS = Path(__file__).resolve().parents[2].parent / "shared" / "behaviour" / "complexity_trap_arms_given.csv"
OH_POOL = "%corpus/openhands%"


@given(n=st.integers(1, 400), pressured=st.integers(0, 400), cap=st.integers(1, 500), cost=st.floats(0, 100))
def test_no_propensity_gives_a_band_of_one_point(n: int, pressured: int, cap: int, cost: float) -> None:
    b = band(n, pressured, cap, cost, range_=(0.0, 0.0))
    assert b["turns_hi"] == b["turns_lo"] == n and b["loop_p_hi"] == b["loop_p_lo"] == 0.0
    assert b["cost_hi"] == b["cost_lo"] == cost


@given(n=st.integers(1, 200), pressured=st.integers(0, 200), cap=st.integers(201, 500))
def test_uncalibrated_band(n: int, pressured: int, cap: int) -> None:
    b = band(n, pressured, cap, None)
    assert b["turns_lo"] == n and "turns_point" not in b  # never a point without a calibration
    assert (b["turns_hi"] > b["turns_lo"]) == (pressured > 0)  # width only where the policy presses
    assert b["cost_lo"] is None and b["cost_hi"] is None


@given(h=st.floats(0, math.inf), p=st.lists(st.integers(0, 300), min_size=2, max_size=2))
def test_loop_chance_rises_with_pressure(h: float, p: list[int]) -> None:
    lo, hi = sorted(p)
    assert loop_p(lo, h) <= loop_p(hi, h) <= 1.0


def curve(rate: float, length: int = 60) -> PressureCurve:
    return PressureCurve(np.full(length, rate), rate, 10, 10 * length, 0, np.full(length, rate), rate)


@settings(max_examples=60, deadline=None)
@given(
    raw=st.lists(st.integers(1, 240), min_size=8, max_size=60),
    rate=st.floats(0.05, 0.9),
    extra=st.floats(0.0, 1.0),
)
def test_a_calibration_reproduces_its_own_paired_ratio(raw: list[int], rate: float, extra: float) -> None:
    r = np.array(raw)
    c = curve(rate)
    most = turns(r, c.expected(r), 250, Propensity(math.inf))
    pol = np.round(r + extra * (most - r)).astype(np.int64)  # an arm the model can reach
    prop = fit(r, pol, c, 250)
    assert abs(ratio(r, c, 250, prop) - pol.sum() / r.sum()) <= 0.005


def test_an_arm_beyond_the_pools_pressure_is_refused() -> None:
    r = np.full(20, 50)
    with pytest.raises(ReplayError, match="more than the pool's pressure can give"):
        fit(r, np.full(20, 400), curve(0.1), 250)


def test_a_shorter_arm_is_shortening_not_loops() -> None:
    r = np.full(20, 50)
    prop = fit(r, np.full(20, 44), curve(0.3), 250)
    assert prop.hazard == 0 and prop.shortening == pytest.approx(0.88)


@pytest.fixture(scope="module")
def oh_pool(corpus_db):
    return load_runs(corpus_db, None, OH_POOL)


@pytest.fixture(scope="module")
def oh_arm(tmp_path_factory) -> Path:
    import polars as pl

    if not ARMS.exists():
        pytest.fail(f"{ARMS} missing: the shared behaviour data sits beside the corpus")
    arms = pl.read_csv(ARMS).filter(pl.col("scaffold") == "openhands")
    raw = arms.filter(pl.col("strategy") == "Raw Agent").select("instance_id", pl.col("turn_count").alias("raw_turns"))
    pol = arms.filter(pl.col("strategy") != "Raw Agent").select(
        "instance_id", pl.col("turn_count").alias("policy_turns")
    )
    path = tmp_path_factory.mktemp("arm") / "oh_m10.csv"
    raw.join(pol, on="instance_id").rename({"instance_id": "task"}).write_csv(path)
    return path


def test_openhands_m10_arm_on_the_openhands_pool(oh_pool, oh_arm) -> None:
    arm = read_paired(oh_arm)
    assert len(arm.raw) == 500
    flags = pool_flags(oh_pool, make_policy("masking", {"keep_last": 5}), Budget())  # M=10 events: 5 results
    c = flags.curve()
    prop = fit(arm.raw, arm.policy, c, 250)
    assert 0 < prop.hazard < 1
    assert abs(ratio(arm.raw, c, 250, prop) - arm.policy.sum() / arm.raw.sum()) <= 0.005
    check = held_out(arm, flags, 250)
    assert check.fit_tasks + check.check_tasks == 500 and check.lo < check.predicted < check.hi


def test_pressure_and_loop_p_hi_never_rise_as_keep_last_grows(oh_pool) -> None:
    runs = [r for r in oh_pool if r.n_requests >= 20]
    harness = dict.fromkeys((r.run_id for r in runs), "openhands")
    last: dict[str, tuple[int, float, int]] = {}
    first = None
    for k in (1, 2, 5, 10, 20, 40, 80):
        rows, _ = behaviour_rows(
            runs, make_policy("masking", {"keep_last": k}), Budget(), BandSettings(250, {}, harness)
        )
        for row in rows:
            now = (row["pressured_requests"], row["loop_p_hi"], row["blind_uses"])
            before = last.get(row["run_id"], now)
            assert all(a <= b for a, b in zip(now, before, strict=True)), (row["run_id"], k, before, now)
            last[row["run_id"]] = now
        first = first or dict(last)
    assert any(p for p, _, _ in first.values()) and any(q > 0 for _, q, _ in first.values())


def test_the_pools_exposure_never_rises_as_keep_last_grows(oh_pool) -> None:
    """The pool's expected exposure for a task of any length falls (or stays) as the window widens. Measured from
    each setting's own first hide, the corpus pool's recurrence rose from keep_last 22 to 25 (0.121 -> 0.148) and
    with it the prediction (M=43 -> M=50 events: 1.43 -> 1.52)."""
    lengths = np.array([10, 30, 50, 100, 150, 250])
    last = None
    for k in range(1, 60):
        now = pool_flags(oh_pool, make_policy("masking", {"keep_last": k}), Budget()).curve().expected(lengths)
        if last is not None:
            assert (now <= last + 1e-12).all(), (k, last, now)
        last = now


@settings(max_examples=60, deadline=None)
@given(gaps=st.lists(st.lists(st.integers(1, 40), min_size=1, max_size=12), min_size=1, max_size=6))
def test_a_wider_window_never_raises_the_pools_exposure(gaps: list[list[int]]) -> None:
    """Synthetic pool runs: a use at a revisit gap g is blind under a window w when g > w (as masking makes it)."""

    def flags(w: int) -> PoolFlags:
        sets = []
        for run in gaps:
            n = 4 * len(run) + 40
            uses = np.zeros(n, dtype=bool)
            blind = np.zeros(n, dtype=bool)
            for i, g in enumerate(run):
                at = min(n - 1, 3 * i + g)
                uses[at] = True
                blind[at] |= g > w
            start = int(np.argmax(blind)) if blind.any() else n
            sets.append(WorkingSet(blind, uses, blind, start))
        return PoolFlags(tuple(f"r{i}" for i in range(len(sets))), tuple(sets))

    lengths = np.array([5, 20, 60, 200])
    before = flags(1).curve().expected(lengths)
    for w in range(2, 42):
        now = flags(w).curve().expected(lengths)
        assert (now <= before + 1e-12).all(), (w, before, now)
        before = now


def test_summariser_calls_are_turns() -> None:
    """OpenHands counts a condensation as a step and the study's turn counts include the summariser's calls: a run
    that does not loop takes its turns plus the policy's summariser calls; a looping one still ends at the cap."""
    b = band(100, 0.0, 250, 10.0, calls=4)
    assert b["turns_lo"] == b["turns_hi"] == 104 and b["cost_lo"] == b["cost_hi"] == 10.0
    assert band(100, 2.0, 250, None, calls=4)["turns_hi"] == 250
    summarised = np.zeros(40, dtype=bool)
    summarised[[10, 20, 30]] = True
    blind = np.zeros(40, dtype=bool)
    flags = PoolFlags(("r0",), (WorkingSet(blind, blind, blind, 40, summarised),))
    c = flags.curve()
    assert c.expected_calls(np.array([5, 15, 40])).tolist() == [0.0, 1.0, 3.0]
    assert ratio(np.array([40]), c, 250, Propensity(0.0)) == pytest.approx(43 / 40)


def test_summariser_calls_past_the_pool_keep_their_rate() -> None:
    """A summariser every 20 requests from the 60th: beyond the pool's 100 requests a task of 200 has calls at 100,
    ..., 180, at the rate the pool shows from its first call on (not diluted by the requests before it)."""
    summarised = np.zeros(100, dtype=bool)
    summarised[[60, 80]] = True
    blind = np.zeros(100, dtype=bool)
    ws = WorkingSet(blind, blind, blind, 100, summarised)
    c = PoolFlags(("r0", "r1", "r2"), (ws, ws, ws)).curve()
    assert c.expected_calls(np.array([100, 200])).tolist() == [2.0, pytest.approx(7.0)]


def test_the_openhands_summary_counts_its_calls_on_the_corpus_pool(oh_pool) -> None:
    """The study's summary setting on the corpus pool: its condensations make the no-loop end exceed the raw turns."""
    policy = make_policy("openhands", {"max_size": 65, "keep_first": 2, "keep_tail": 20})
    c = pool_flags(oh_pool, policy, Budget()).curve()
    lengths = np.array([50, 100, 200])
    assert (np.diff(c.expected_calls(lengths)) > 0).all()
    assert ratio(lengths, c, 250, Propensity(0.0)) > 1.0


def test_the_tail_starts_where_the_policy_first_hides() -> None:
    c = PressureCurve(np.zeros(10), 0.5, 3, 30, start=20, uses=np.full(10, 0.5), uses_tail=0.5)
    blind, uses = 10 * 0.5, 30 * 0.5
    assert c.expected(np.array([10, 20, 30])).tolist() == [0.0, 0.0, pytest.approx(blind * blind / uses)]


def test_the_recurrence_is_that_of_a_run_of_the_tasks_length() -> None:
    """A pool run of 10 requests, a use at each, blind from the 6th on: half its uses are blind, but a task of 100
    requests is blind at 95 of its 100 uses, and its blind uses recur as often."""
    blind = np.arange(10) >= 5
    c = PoolFlags(("r0",), (WorkingSet(blind, np.ones(10, dtype=bool), blind, 5),)).curve()
    assert c.recurrence(np.array([10, 100])).tolist() == [0.5, pytest.approx(0.95)]
    assert c.expected(np.array([100])).tolist() == [pytest.approx(95 * 0.95)]


def flags_of(*blind: list[bool]) -> PoolFlags:
    sets = []
    for b in blind:
        arr = np.array(b)
        sets.append(WorkingSet(arr, np.ones_like(arr), arr, int(np.argmax(arr)) if arr.any() else len(arr)))
    return PoolFlags(tuple(f"r{i}" for i in range(len(sets))), tuple(sets))


def test_a_pool_resample_without_the_exposed_run_predicts_no_loops() -> None:
    pool = flags_of([False] * 30, [False] * 10 + [True] * 20)
    assert pool.curve(np.array([0, 0])).expected(np.array([100])).tolist() == [0.0]
    assert pool.curve(np.array([1, 1])).expected(np.array([100]))[0] > pool.curve().expected(np.array([100]))[0] > 0


def test_a_rerun_that_runs_past_the_window_can_loop() -> None:
    """With a rerun spread, a task's loop chance is taken over the lengths a rerun of it can take. A task of 20
    turns under a curve blind from request 30 on has no exposure at its raw length, but a rerun twice as long
    (half the reference's tasks) has; a spread of factor 1 changes nothing; the fit still reproduces its arm."""
    from replay.behaviour.calibration import exposure
    from replay.behaviour.spread import spread_from

    c = PressureCurve(np.zeros(30), 0.5, 3, 30, start=30, uses=np.full(30, 0.5), uses_tail=0.5)
    lengths = np.full(40, 20)
    ref = np.arange(11, 51)  # every length quantile holds halved and doubled reruns alike
    half_double = spread_from(ref, ref * np.tile([1, 4], 20) // 2, "ref")
    same = spread_from(ref, ref, "ref")
    assert ratio(lengths, c, 250, Propensity(1.0)) == 1.0
    assert ratio(lengths, c, 250, Propensity(1.0), same) == 1.0
    doubled = exposure(lengths, c, 250, half_double)
    assert (doubled.blind[:, : doubled.blind.shape[1] // 2] == 0).all() and (doubled.blind[:, -1] > 0).all()
    assert ratio(lengths, c, 250, Propensity(1.0), half_double) > 1.0
    pol = np.round(lengths * 3.0).astype(np.int64)
    prop = fit(lengths, pol, c, 250, spread=half_double)
    assert abs(ratio(lengths, c, 250, prop, half_double) - 3.0) <= 0.005
