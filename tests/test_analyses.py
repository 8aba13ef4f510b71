"""The write-up analyses run on the bundled sample: each writes its figure (PNG + SVG) and table (CSV + markdown)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

ROOT = Path(__file__).resolve().parents[1]
WINDOWS = "32768,130000"

# script -> (rows per window, a column the table must have)
EXPECTED = {
    "protected_range": (2, "overflow_incidents"),
    "verbatim_tail": (4, "summaries_per_100"),
    "emergency_margin": (16, "margin_pct"),
    "reclaim_floor": (5, "cache_hit_pct"),
}


@pytest.fixture(scope="module")
def sample_store(tmp_path_factory) -> tuple[Path, str]:
    """The sample, ingested and counted with tekken once; the scripts reuse the counts by tokenizer id."""
    from replay.ingest import ingest
    from replay.store import open_store
    from replay.tokens import count_items, load_tokenizer

    path = tmp_path_factory.mktemp("analyses") / "sample.duckdb"
    con = open_store(path)
    ingest(con, [ROOT / "data" / "sample"])
    tok = load_tokenizer("tekken")
    count_items(con, tok)
    con.close()
    return path, tok.tokenizer_id


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_analysis_writes_figure_and_table(name: str, sample_store: tuple[Path, str], tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    shutil.copy(sample_store[0], db)
    out = tmp_path / "out"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "analyses" / f"{name}.py"),
            "--db",
            str(db),
            "--out",
            str(out),
            "--windows",
            WINDOWS,
            "--executor",
            "serial",
            "--tokenizer-id",
            sample_store[1],
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    for suffix in ("png", "svg", "csv", "md"):
        assert (out / f"{name}.{suffix}").stat().st_size > 0, suffix
    per_window, column = EXPECTED[name]
    table = pl.read_csv(out / f"{name}.csv")
    assert table.height == 2 * per_window and column in table.columns
    assert sorted(table["window"].unique().to_list()) == [32768, 130000]
    assert (table["runs"] == 7).all()  # data/sample: 6 runs plus sample-dense-1
    assert (out / f"{name}.md").read_text().startswith("# ")


def test_rerun_reuses_the_sweeps(sample_store: tuple[Path, str], tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "analyses"))
    try:
        import reclaim_floor
    finally:
        sys.path.remove(str(ROOT / "analyses"))
    db = tmp_path / "s.duckdb"
    shutil.copy(sample_store[0], db)
    argv = [
        "--db",
        str(db),
        "--out",
        str(tmp_path / "o"),
        "--windows",
        "65536",
        "--executor",
        "serial",
        "--tokenizer-id",
        sample_store[1],
    ]
    first = reclaim_floor.main(argv)
    again = reclaim_floor.main(argv)
    assert first.equals(again) and first.height == 5
    hit = first.sort("reclaim_floor")["cache_hit_pct"].to_list()
    assert hit[0] <= hit[3]  # never committing small passes keeps the cached prefix: the seed floor beats none
