"""Shared fixtures: the real corpus (read-only, never copied) and a store holding all of it."""

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
def corpus_db(corpus, tmp_path_factory):
    """A store with the whole corpus ingested once per test session."""
    from replay.ingest import ingest
    from replay.store import open_store

    path = tmp_path_factory.mktemp("store") / "corpus.duckdb"
    con = open_store(path)
    ingest(con, [corpus])
    yield con
    con.close()
