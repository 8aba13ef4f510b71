"""Printing behaviour rows (table, CSV, JSON): log text made safe, the band's meaning said under a table."""

from __future__ import annotations

from replay.cli.common import console, emit

POINT_NOTE = (
    "turns_lo is the recorded turns (no loop), not a bound: a policy can also shorten runs; turns_hi: any "
    "recurring blind use (loop_exposure > 0) may tip a loop to the cap. No point without a calibration of the "
    "run's harness and model."
)


def print_rows(run_rows: list[dict], ep_rows: list[dict], episodes: bool, fmt: str, policy: str, banded: bool) -> None:
    import polars as pl

    from replay.behaviour.band import POINT_COLUMNS
    from replay.behaviour.measure import EPISODE_COLUMNS, RUN_COLUMNS
    from replay.untrusted import for_terminal

    if episodes:
        rows, columns = ep_rows, list(EPISODE_COLUMNS)
    else:
        rows, columns = run_rows, list(RUN_COLUMNS)
        if banded:  # the band first after the counts a narrow table keeps (emit drops columns from the right)
            first = ["run_id", "requests", "blind_repeats", "pressured_requests", "loop_exposure", "mech_requests"]
            band = ["turns_lo", "turns_hi", "loop_p_hi", "cost_lo", "cost_hi", "loop_p_lo", "cap"]
            if any(r.get("turns_point") is not None for r in rows):
                band = [*POINT_COLUMNS, *band, "calibration"]
            columns = first + band + [c for c in columns if c not in first]
    frame = pl.DataFrame([{c: r.get(c) for c in columns} for r in rows], schema=None, orient="row")
    frame = frame.select(columns) if rows else pl.DataFrame(schema=columns)
    if fmt != "csv":  # csv output escapes its own text cells
        frame = frame.with_columns(
            pl.col(c).map_elements(for_terminal, return_dtype=pl.String)
            for c, t in frame.schema.items()
            if t == pl.String
        )
    emit(frame, fmt, title=None if fmt != "table" else f"behaviour under {for_terminal(policy)}")
    if fmt == "table" and not episodes:
        if ep_rows:
            console.print(f"{len(ep_rows)} loop episode(s); --episodes lists them", highlight=False)
        if banded:
            console.print(POINT_NOTE, highlight=False, markup=False)
