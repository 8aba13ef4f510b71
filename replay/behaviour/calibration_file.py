"""The calibration file (TOML): the fitted propensity, its bootstrap replicates, its provenance and its held-out
check. Read back, it refuses to be used for another harness (or, when it names one, another model)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import numpy as np

from replay.behaviour.band import Propensity
from replay.behaviour.calibration import Calibration
from replay.behaviour.spread import BINS, NoLoopSpread
from replay.errors import ReplayError
from replay.untrusted import toml_comment, toml_string

# What the rate is per: a recurring blind use, with the recurrence of a run of the task's length. A file fitted per
# pressured request, on the recurrence from each setting's first hide ("loop_exposure") or on the pool's overall
# recurrence ("revisit_share_exposure") is refused.
COUNTS = "task_length_recurrence"
HEADER = (
    "replay behaviour calibration: the loop propensity of one harness (and model) under a context policy, fitted "
    "on one paired arm (raw turns and policy turns of the same tasks). Turn counts only: nothing here says "
    "whether a task is solved."
)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    return toml_string(str(v))


def _table(name: str, values: dict) -> list[str]:
    return [f"[{name}]", *(f"{k} = {_value(v)}" for k, v in values.items() if v is not None), ""]


def write_calibration(cal: Calibration, path: Path) -> None:
    head = {
        "harness": cal.harness,
        "model": cal.model,
        "policy": cal.policy,
        "cap": cal.cap,
        "rate": cal.fit.rate,
        "hazard": cal.fit.hazard,
        "hazard_per": COUNTS,
        "shortening": cal.fit.shortening,
    }
    lines = [toml_comment(HEADER), ""]
    lines += _table("calibration", head) + _table("calibration.settings", cal.settings)
    lines += _table("provenance", cal.provenance) + _table("held_out", cal.check)
    reps = {"rate": [p.rate for p in cal.reps], "shortening": [p.shortening for p in cal.reps]}
    lines += _table("replicates", reps)
    if cal.spread is not None:
        sp = cal.spread
        rerun = {"reference": sp.source, "reference_sha256": sp.sha256, "tasks": sp.tasks, "ratio": sp.ratio}
        lines += _table("rerun", rerun | {f"bin_{b}": f.tolist() for b, f in enumerate(sp.factors)})
    try:
        path.write_text("\n".join(lines), encoding="utf-8")
    except OSError as exc:
        raise ReplayError(f"{path}: cannot write the calibration ({exc.strerror}); give another --out") from exc


def read_calibration(path: Path) -> Calibration:
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ReplayError(
            f"{path}: cannot read ({exc.strerror}); give the file `replay behaviour calibrate` wrote"
        ) from exc
    except tomllib.TOMLDecodeError as exc:
        raise ReplayError(f"{path}: not TOML ({exc}); give the file `replay behaviour calibrate` wrote") from exc
    per = doc.get("calibration", {}).get("hazard_per")
    if per != COUNTS:
        raise ReplayError(
            f"{path}: its hazard is per {per or 'pressured request'}, this replay's per {COUNTS} (recurring blind "
            "uses, recurrence of a run of the task's length); calibrate again with `replay behaviour calibrate`"
        )
    try:
        head, reps = doc["calibration"], doc["replicates"]
        return Calibration(
            harness=head["harness"],
            model=head.get("model"),
            policy=head["policy"],
            settings=dict(head.get("settings", {})),
            cap=int(head["cap"]),
            fit=Propensity(float(head["rate"]), float(head["shortening"])),
            reps=[Propensity(float(r), float(s)) for r, s in zip(reps["rate"], reps["shortening"], strict=True)],
            provenance=dict(doc.get("provenance", {})),
            check=dict(doc.get("held_out", {})),
            spread=_spread(doc["rerun"]) if "rerun" in doc else None,
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise ReplayError(
            f"{path}: not a calibration file (missing or wrong {exc}); write one with `replay behaviour calibrate`"
        ) from exc


def _spread(rerun: dict) -> NoLoopSpread:
    bins = sorted((k for k in rerun if k.startswith("bin_")), key=lambda k: int(k[4:]))
    if len(bins) != BINS or any(len(rerun[k]) == 0 for k in bins):
        raise ValueError(f"rerun bins: {BINS} non-empty bin_0 .. bin_{BINS - 1} expected")
    return NoLoopSpread(
        tuple(np.array(rerun[k], dtype=np.float64) for k in bins),
        int(rerun["tasks"]),
        float(rerun["ratio"]),
        str(rerun.get("reference", "")),
        str(rerun.get("reference_sha256", "")),
    )


def check_same_harness(cal: Calibration, harness: str, where: str) -> None:
    """Refuse to carry a calibration to another harness."""
    if harness != cal.harness:
        raise ReplayError(
            f"{where}: the calibration is for harness {cal.harness!r}, the runs are {harness!r}; a propensity does "
            "not carry across harnesses: calibrate on a paired arm of this harness"
        )


def check_same_pool(cal: Calibration, key: str, where: str) -> None:
    """Refuse a pool other than the calibration's: its replicates pair each task resample with a resample of that
    pool's runs."""
    known = cal.provenance.get("pool_sha256")
    if known != key:
        raise ReplayError(
            f"{where}: the pool (--runs) is not the calibration's ({cal.provenance.get('pool')!r}, "
            f"{cal.provenance.get('pool_runs')} runs); give the same --runs and store, or calibrate again"
        )
