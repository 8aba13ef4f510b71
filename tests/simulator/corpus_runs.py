"""Picking one corpus run by the start of its id; replaying logs under the recorded policy."""

from __future__ import annotations

from pathlib import Path

from replay.ingest import ingest
from replay.policies import Budget, make_policy
from replay.simulator.load import load_runs
from replay.simulator.run import simulate_run
from replay.store import open_store
from replay.tokens.counting import count_items
from replay.tokens.loading import load_tokenizer


def one_run(runs: dict, part: str):
    """The one run of ``runs`` whose id starts with ``part``."""
    found = [r for rid, r in runs.items() if rid.startswith(part)]
    assert len(found) == 1, part
    return found[0]


def replayed_as_recorded(files: list[Path], store: Path) -> dict:
    """Per run id of the logs ``files``, ingested into a new store at ``store`` and counted with o200k: (its arrays,
    the request columns and the run row of its replay under the recorded policy on a 200,000-token window)."""
    con = open_store(store)
    ingest(con, files)
    tok = load_tokenizer("o200k")
    count_items(con, tok)
    runs = load_runs(con, tok.tokenizer_id)
    con.close()
    out = {}
    for run in runs:
        cols, row = simulate_run(run, make_policy("recorded", {}), None, Budget(200_000))
        out[run.run_id] = (run, cols, row)
    return out
