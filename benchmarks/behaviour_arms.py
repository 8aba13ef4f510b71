"""Issue 24's check of the turn-ratio prediction: calibrated on the study's OpenHands M=10 arm (the arm in
../shared/behaviour), predict the other OpenHands arms of the Complexity Trap study and put each beside the 95%
interval of its turn ratio (paired percentile bootstrap over tasks, B = 10,000, the study's method; the paper itself
reports intervals for cost and solve rate, not turns), and check that the uncalibrated band covers each interval
(``replay.behaviour.rerun``: h from 0 to 1, tasks and pool resampled, each task's no-loop turns spread as in the
given SWE-agent Gemini 2.5 Flash M=10 arm, whose calibration fits h = 0). The calibration and the predictions take
each task's loop chance over the lengths a rerun of it can take, with the same spread (``replay.behaviour.spread``).

The other arms are not in this repository: give the study's per-instance file
(``auxiliary-data/experiment_instance_costs_openhands.csv`` of JetBrains-Research/the-complexity-trap).
OpenHands' M counts events: its condenser masks an observation whose index in the view is below len(view) - M, and
the view ends on the newest observation, so M events hold ceil(M/2) observations: ``keep_last = (M + 1) // 2``.

    python benchmarks/behaviour_arms.py --study experiment_instance_costs_openhands.csv --db /tmp/corpus.duckdb
"""

from __future__ import annotations

import argparse
import math
import re
import tempfile
from pathlib import Path

import numpy as np
import polars as pl

from replay.behaviour.band import Propensity
from replay.behaviour.calibration import fit, held_out, interval, ratio, read_paired, replicates
from replay.behaviour.pool import pool_flags, pool_harness
from replay.behaviour.rerun import arm_band, no_loop_spread
from replay.policies import Budget, make_policy
from replay.simulator.load import load_runs
from replay.store import open_store

ARM = Path(__file__).resolve().parents[2] / "shared" / "behaviour" / "complexity_trap_arms_given.csv"
POOL = "%corpus/openhands%"
CAP = 250
# The study summarises when N + M = 31 turns (two events each) have come since the last summary and keeps the newest
# M = 10 turns; the head is the system prompt and the task: max_size = head + summary + 62 events, tail 20 events.
SUMMARY = ("openhands", {"max_size": 65, "keep_first": 2, "keep_tail": 20})
REFERENCE = "gemini_2.5_flash-agent"  # the given SWE-agent arm whose calibration fits h = 0: the no-loop spread


def observed_interval(raw: np.ndarray, pol: np.ndarray, b: int = 10_000) -> tuple[float, float, float]:
    rng = np.random.default_rng(0)
    i = rng.integers(0, len(raw), (b, len(raw)))
    r = pol[i].sum(1) / raw[i].sum(1)
    return float(pol.sum() / raw.sum()), float(np.percentile(r, 2.5)), float(np.percentile(r, 97.5))


def setting(name: str) -> tuple[str, str, dict]:
    if "llm_summary" in name:
        return "LLM-Summary N=21 M=10", *SUMMARY
    m = re.search(r"M_(\d+)", name)
    events = int(m.group(1)) if m else 10  # the 500-task masking arm without M in its name is the given M=10 arm
    return f"masking M={events}", "masking", {"keep_last": (events + 1) // 2}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--study", type=Path, required=True)
    ap.add_argument("--db", type=Path, required=True)
    a = ap.parse_args()
    given = pl.read_csv(ARM).filter(pl.col("scaffold") == "openhands")
    raw = given.filter(pl.col("strategy") == "Raw Agent").select(pl.col("instance_id").alias("task"), "turn_count")
    pol = given.filter(pl.col("strategy") != "Raw Agent").select(pl.col("instance_id").alias("task"), "turn_count")
    swe = pl.read_csv(ARM).filter(pl.col("experiment").str.starts_with(REFERENCE))
    ref_raw = swe.filter(pl.col("strategy") == "Raw Agent").select(pl.col("instance_id").alias("task"), "turn_count")
    ref_pol = swe.filter(pl.col("strategy") != "Raw Agent").select(pl.col("instance_id").alias("task"), "turn_count")
    with tempfile.TemporaryDirectory() as tmp:
        path, ref = Path(tmp) / "paired.csv", Path(tmp) / "reference.csv"
        raw.join(pol, on="task").rename({"turn_count": "raw_turns", "turn_count_right": "policy_turns"}).write_csv(path)
        ref_raw.join(ref_pol, on="task").rename(
            {"turn_count": "raw_turns", "turn_count_right": "policy_turns"}
        ).write_csv(ref)
        arm, spread = read_paired(path), no_loop_spread(ref)
    con = open_store(a.db, read_only=True)
    pool = load_runs(con, None, POOL)
    harness = pool_harness(con, pool, POOL)
    f10 = pool_flags(pool, make_policy("masking", {"keep_last": 5}), Budget())
    c10 = f10.curve()
    prop = fit(arm.raw, arm.policy, c10, CAP, spread=spread)
    reps, check = replicates(arm, f10, CAP, spread=spread), held_out(arm, f10, CAP, spread)
    print(
        f"pool {POOL}: {len(pool)} {harness} runs; calibrated on masking M=10 (keep_last 5), 500 tasks: hazard "
        f"{prop.hazard:.4f}, ratio {arm.policy.sum() / arm.raw.sum():.3f} "
        f"reproduced {ratio(arm.raw, c10, CAP, prop, spread):.3f}; "
        f"held out {check.predicted:.3f} [{check.lo:.3f}, {check.hi:.3f}] vs {check.observed:.3f}; "
        f"no-loop spread: SWE-agent {REFERENCE} M=10, {spread.tasks} tasks, ratio {spread.ratio:.3f}\n"
    )
    study = pl.read_csv(a.study)
    raws = {
        "500": study.filter(pl.col("experiment").str.contains("raw_agent-run_1")),
        "50": study.filter(pl.col("experiment").str.contains("raw_agent-verified_50")),
    }
    print(
        "| arm | tasks | policy setting | observed ratio [95%] | predicted [95%] | inside | h 0-1 | band 95% "
        "| band vs interval |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name in sorted(study["experiment"].unique()):
        if "raw_agent" in name:
            continue
        label, pname, params = setting(name)
        arm_rows = study.filter(pl.col("experiment") == name).select("instance_id", pl.col("turn_count").alias("p"))
        base = raws["50" if "verified_50" in name else "500"].select("instance_id", pl.col("turn_count").alias("r"))
        j = arm_rows.join(base, on="instance_id")
        r, p = j["r"].to_numpy(), j["p"].to_numpy()
        obs, olo, ohi = observed_interval(r, p)
        flags = pool_flags(pool, make_policy(pname, params), Budget())
        curve = flags.curve()
        point = ratio(r, curve, CAP, prop, spread)
        lo, hi = interval(r, flags, CAP, reps, spread=spread)
        plo, phi = ratio(r, curve, CAP, Propensity(0.0), spread), ratio(r, curve, CAP, Propensity(math.inf), spread)
        blo, bhi = arm_band(r, flags, CAP, spread)
        inside = "yes" if olo <= point <= ohi else "no"
        covers = "contains" if blo <= olo and ohi <= bhi else ("overlaps" if olo <= bhi and blo <= ohi else "apart")
        given_arm = " (calibration arm)" if label == "masking M=10" and len(r) == 500 else ""
        print(
            f"| {label}{given_arm} | {len(r)} | {pname} {params} | {obs:.3f} [{olo:.3f}, {ohi:.3f}] | "
            f"{point:.3f} [{lo:.3f}, {hi:.3f}] | {inside} | {plo:.3f}-{phi:.3f} | {blo:.3f}-{bhi:.3f} | {covers} |"
        )


if __name__ == "__main__":
    main()
