"""A private store of the bundled sample per test (sweeps write to it); the session copy is in tests/conftest.py.
These tests sweep the small sample: the local pool is started for them as for a big sweep (``pool_for_any_size``),
so that what they check of the pool stays checked."""

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


@pytest.fixture(autouse=True)
def pool_for_any_size(monkeypatch):
    """The local executor starts its pool whatever the shard's size (it runs a small one in-process otherwise)."""
    from replay.sweeps import executors

    monkeypatch.setattr(executors, "IN_PROCESS", 0)
