"""A private store of the bundled sample per test (sweeps write to it); the session copy is in tests/conftest.py."""

from __future__ import annotations

from pathlib import Path

import pytest


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
