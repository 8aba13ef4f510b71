"""The ``--behaviour``, ``--cap`` and ``--calibration`` options simulate, sweep and tune share."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from replay.errors import ReplayError
from replay.sweeps.behaviour_points import SUMMED

BehaviourFlag = Annotated[
    bool,
    typer.Option(
        "--behaviour",
        help="Also measure behaviour (replay behaviour): blind repeats, pressured requests, re-reads, loops; with "
        "--cap the turn band. Rows stored in behaviour_runs.",
    ),
]
CapOption = Annotated[
    int | None, typer.Option("--cap", min=1, help="With --behaviour: the harness's step cap, for the turn band.")
]
CalibrationOption = Annotated[
    Path | None,
    typer.Option(help="With --behaviour --cap: a calibration file (behaviour calibrate), the point for its harness."),
]
BEHAVIOUR_COLUMNS = [c for c in SUMMED if c != "requests"]  # the counts, in the order sweeps sum them
BAND_SHOWN = ["loop_p_lo", "loop_p_hi", "turns_lo", "turns_hi", "cost_lo", "cost_hi"]
POINT_SHOWN = ["turns_point", "cost_point"]


def check_options(behaviour: bool, cap: int | None, calibration: Path | None) -> None:
    if (cap is not None or calibration is not None) and not behaviour:
        raise ReplayError("--cap and --calibration belong to --behaviour: add --behaviour")
    if calibration is not None and cap is None:
        raise ReplayError("--calibration gives the turn point under a step cap: give --cap N too")
