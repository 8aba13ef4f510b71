"""`replay check`: a third of the window vs a fixed 12,000-token protected range on a 130,000 window."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cli import app

BASE = """[policy]
name = "seed_a"
[params]
window = 130000
reserve = 24576
protect_fraction = 0.3333333333
"""
CAND = BASE.replace("protect_fraction = 0.3333333333", "protect = 12000")


@pytest.fixture(scope="module")
def db(sample_store: Path) -> Path:
    return sample_store


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_smaller_protected_range_fails_the_gate(db: Path, tmp_path: Path) -> None:
    md = tmp_path / "report.md"
    res = CliRunner().invoke(
        app,
        [
            "check",
            str(write(tmp_path, "b.toml", BASE)),
            str(write(tmp_path, "c.toml", CAND)),
            "--db",
            str(db),
            "--markdown",
            str(md),
        ],
    )
    assert res.exit_code == 1, res.output
    assert "regression" in res.output and "| repeat_evicted |" in res.output
    assert md.read_text().startswith("## replay check")


def test_identical_candidate_passes(db: Path, tmp_path: Path) -> None:
    res = CliRunner().invoke(
        app, ["check", str(write(tmp_path, "b.toml", BASE)), str(write(tmp_path, "c.toml", BASE)), "--db", str(db)]
    )
    assert res.exit_code == 0, res.output
    assert "no regression" in res.output


def test_tolerance_can_waive_and_bad_files_explain(db: Path, tmp_path: Path) -> None:
    loose = [
        "--tol",
        "repeat_evicted=100",
        "--tol",
        "repeat_evicted_tokens=100",
        "--tol",
        "cache_hit_rate=1",
        "--tol",
        "evicted_failures=100",
    ]
    res = CliRunner().invoke(
        app,
        ["check", str(write(tmp_path, "b.toml", BASE)), str(write(tmp_path, "c.toml", CAND)), "--db", str(db), *loose],
    )
    assert res.exit_code == 0, res.output
    shutil.copy(tmp_path / "b.toml", tmp_path / "bad.toml")
    (tmp_path / "bad.toml").write_text(BASE + "no_such_knob = 1\n")
    res = CliRunner().invoke(app, ["check", str(tmp_path / "bad.toml"), str(tmp_path / "c.toml"), "--db", str(db)])
    assert res.exit_code != 0 and "unknown parameter" in str(res.exception)


@pytest.mark.parametrize("value", ["nan", "inf", "-0.1", "x"])
def test_a_tolerance_must_be_a_finite_number(db: Path, tmp_path: Path, value: str) -> None:
    """NaN compares false with everything: a NaN tolerance would pass any regression as 'not regressed'."""
    base, cand = write(tmp_path, "b.toml", BASE), write(tmp_path, "c.toml", CAND)
    res = CliRunner().invoke(app, ["check", str(base), str(cand), "--db", str(db), "--tol", f"cache_hit_rate={value}"])
    assert res.exit_code != 0 and "--tol cache_hit_rate" in str(res.exception), res.output
    file = write(tmp_path, "t.toml", BASE + f"[tolerances]\ncache_hit_rate = {value if value != 'x' else '1e999'}\n")
    res = CliRunner().invoke(app, ["check", str(file), str(cand), "--db", str(db)])
    assert res.exit_code != 0 and "[tolerances] cache_hit_rate" in str(res.exception), res.output
