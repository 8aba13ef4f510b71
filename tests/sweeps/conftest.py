"""A store holding the bundled synthetic sample, ingested once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def sample_db_path(tmp_path_factory) -> Path:
    from replay.ingest import ingest
    from replay.store import open_store

    path = tmp_path_factory.mktemp("sample") / "sample.duckdb"
    con = open_store(path)
    ingest(con, [ROOT / "data" / "sample"])
    con.close()
    return path


@pytest.fixture()
def sample_db(sample_db_path: Path, tmp_path: Path):
    """A private copy of the sample store (sweeps write to it)."""
    import shutil

    from replay.store import open_store

    path = tmp_path / "s.duckdb"
    shutil.copy(sample_db_path, path)
    con = open_store(path)
    yield con
    con.close()
