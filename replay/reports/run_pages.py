"""The per-run pages ``replay report`` links: ``replay show --html`` for the longest runs under two policies."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import duckdb

from replay.policies import Budget, make_policy
from replay.reports.show import item_infos, replay_views
from replay.reports.show_html import write_page
from replay.run_arrays import RunArrays
from replay.simulator.prompt import prompt_models

NAME_CHARS = 80  # a run id's characters kept in its page's name (file names are at most 255 bytes)


def page_name(run_id: str) -> str:
    """A file name for a run's page: the run id itself when it is a short plain name; else its plain characters
    (at most NAME_CHARS) and a hash of the whole id, so two ids never share a page (``a/b`` and ``a_b``) and a
    long id still makes a file name the file system takes."""
    plain = re.sub(r"[^A-Za-z0-9._-]+", "_", run_id)
    if plain == run_id and len(run_id) <= NAME_CHARS and not run_id.startswith("."):
        return run_id + ".html"
    digest = hashlib.blake2b(run_id.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()
    return f"{plain[:NAME_CHARS].strip('._-') or 'run'}-{digest}.html"


def write_run_pages(
    con: duckdb.DuckDBPyConnection,
    runs: list[RunArrays],
    out_dir: Path,
    tokenizer: str | None,
    budget: Budget,
    policies: tuple[str, ...] = ("seed_a", "full"),
    limit: int = 5,
) -> list[tuple[str, Path]]:
    """Pages for the ``limit`` runs with the most requests, each comparing ``policies``; (run id, path) pairs."""
    chosen = sorted(runs, key=lambda r: (-r.n_requests, r.run_id))[:limit]
    con.execute("SELECT 1").fetchall()  # finish any result a loader left open before the next query
    models = prompt_models(con, tokenizer, [r.run_id for r in chosen])
    out = []
    for run in chosen:
        infos = item_infos(con, run, models.get(run.run_id))
        series = [replay_views(run, infos, make_policy(p), None, budget) for p in policies]
        out.append((run.run_id, write_page(out_dir / page_name(run.run_id), series)))
    return out
