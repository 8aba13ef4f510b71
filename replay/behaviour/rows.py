"""Writing behaviour rows to the store: one setting's rows replace that setting's earlier rows for the same runs."""

from __future__ import annotations

import json

import duckdb

from replay.behaviour.band import BAND_COLUMNS, POINT_COLUMNS
from replay.behaviour.measure import EPISODE_COLUMNS, RUN_COLUMNS

STORED_RUN_COLUMNS = (*RUN_COLUMNS, "cap", *BAND_COLUMNS, *POINT_COLUMNS, "calibration")


def config_json(params: dict) -> str:
    """The policy's settings as the store's key (sorted, so the same setting is the same key)."""
    return json.dumps(params, sort_keys=True, default=str)


def write_rows(con: duckdb.DuckDBPyConnection, policy: str, params: dict, runs: list[dict], eps: list[dict]) -> None:
    """Store ``runs`` (RUN_COLUMNS rows, with the band columns where given) and ``eps`` (EPISODE_COLUMNS rows) under
    ``policy`` and ``params``."""
    config = config_json(params)
    ids = [r["run_id"] for r in runs]
    con.execute("BEGIN")
    try:
        for table in ("behaviour_runs", "behaviour_episodes"):
            con.execute(
                f"DELETE FROM {table} WHERE policy = ? AND config = ? AND list_contains(?, run_id)",
                [policy, config, ids],
            )
        if runs:
            names = ", ".join(f'"{c}"' for c in ("policy", "config", *STORED_RUN_COLUMNS, "measured_at"))
            marks = ", ".join("?" * (len(STORED_RUN_COLUMNS) + 2))
            con.executemany(
                f"INSERT INTO behaviour_runs ({names}) VALUES ({marks}, now())",
                [[policy, config, *(r.get(c) for c in STORED_RUN_COLUMNS)] for r in runs],
            )
        if eps:
            marks = ", ".join("?" * (len(EPISODE_COLUMNS) + 2))
            con.executemany(
                f"INSERT INTO behaviour_episodes VALUES ({marks})",
                [[policy, config, *(e[c] for c in EPISODE_COLUMNS)] for e in eps],
            )
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
