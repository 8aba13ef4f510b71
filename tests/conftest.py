"""Shared fixtures: the real corpus (read-only, never copied), a store holding all of it (ingested once, handed out
as copies), stores of the bundled sample, and one run of `replay demo`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path(os.environ.get("REPLAY_CORPUS", ROOT.parent / "shared" / "corpus"))


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not (CORPUS / "MANIFEST.md").exists():
        pytest.fail(f"corpus not found at {CORPUS}; set REPLAY_CORPUS to the shared corpus folder")
    return CORPUS


@pytest.fixture(scope="session")
def corpus_db_path(corpus, tmp_path_factory) -> Path:
    """The whole corpus ingested once per test session into a store nothing writes to after: copy it before writing
    (``corpus_db`` and tests that need a store of their own do)."""
    from replay.ingest import ingest
    from replay.store import open_store

    path = tmp_path_factory.mktemp("corpus-store") / "corpus.duckdb"
    con = open_store(path)
    ingest(con, [corpus])
    con.close()
    return path


@pytest.fixture(scope="session")
def corpus_db(corpus_db_path, tmp_path_factory):
    """A store with the whole corpus, shared by the session's tests (a copy of ``corpus_db_path``)."""
    import shutil

    from replay.store import open_store

    path = tmp_path_factory.mktemp("store") / "corpus.duckdb"
    shutil.copy(corpus_db_path, path)
    con = open_store(path)
    yield con
    con.close()


@pytest.fixture(scope="session")
def sample_db_path(tmp_path_factory) -> Path:
    """The bundled synthetic sample, ingested once per session (copy it before writing: see ``sample_store``)."""
    from replay.ingest import ingest
    from replay.store import open_store

    path = tmp_path_factory.mktemp("sample") / "sample.duckdb"
    con = open_store(path)
    ingest(con, [ROOT / "data" / "sample"])
    con.close()
    return path


@pytest.fixture(scope="module")
def sample_store(sample_db_path: Path, tmp_path_factory) -> Path:
    """A private copy of the sample store for one test module."""
    import shutil

    path = tmp_path_factory.mktemp("sample-copy") / "s.duckdb"
    shutil.copy(sample_db_path, path)
    return path


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory):
    """`replay demo --out out/demo` run once per session in a fresh folder, as the README's set-up runs it (it
    ingests, counts, compiles, sweeps and reports: about 20 s when compiled): (the CLI result, the out folder).
    tests/test_readme.py checks it as the set-up's command and tests/reports/test_reports.py checks what it wrote."""
    from typer.testing import CliRunner

    from replay.cli import app

    here = tmp_path_factory.mktemp("demo")
    before = Path.cwd()
    os.chdir(here)
    try:
        res = CliRunner().invoke(app, ["demo", "--out", "out/demo"], env={"COLUMNS": "80"})
    finally:
        os.chdir(before)
    return res, here / "out" / "demo"
