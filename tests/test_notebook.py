"""notebooks/tune_new_model.ipynb runs headless (nbclient) in a temporary working directory without errors."""

from __future__ import annotations

import os
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
    # the kernel imports this checkout's replay (not whichever one is installed)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
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
    # the conclusion is computed from the notebook's own results: its numbers are the recommended point's
    conclusion = next(line for line in text.splitlines() if line.startswith("CONCLUSION:"))
    import polars as pl

    rec = pl.read_parquet(out / "points.parquet").filter(pl.col("recommended"))
    if rec.height:
        n = int(rec["overflow_incidents"][0])
        if n:
            assert f"to {n:,} " in conclusion or "no less" in conclusion, conclusion
        else:
            assert "removes all" in conclusion or "Neither" in conclusion, conclusion
        assert f"${rec['cost_usd'][0]:,.2f}" in conclusion, conclusion
    assert "the overflow is gone" not in text
