"""notebooks/tune_new_model.ipynb runs headless (nbclient) in a temporary working directory without errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "tune_new_model.ipynb"


def test_tune_notebook_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    # the bundled sample keeps the test fast; the notebook reads the shared corpus when REPLAY_CORPUS is unset
    monkeypatch.setenv("REPLAY_CORPUS", str(ROOT / "data" / "sample"))
    monkeypatch.chdir(tmp_path)
    nb = nbformat.read(shutil.copy(NOTEBOOK, tmp_path / NOTEBOOK.name), as_version=4)
    nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors, errors
    text = "\n".join(
        o.get("text", "")
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.output_type == "stream"
    )
    assert "recommended" in text and "Pareto front" in text
    images = [
        o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", []) if "image/png" in o.get("data", {})
    ]
    assert images, "the chart is displayed"
    out = tmp_path / "out" / "notebook"
    for name in ("recommended.toml", "front.csv", "front.png", "front.svg"):
        assert (out / name).stat().st_size > 0, name
    assert (tmp_path / "tune_notebook.duckdb").exists()
