"""Output that fits: tables at 80 columns keep ids and numbers whole and name what they leave out, --wide shows
everything, every --format json parses, --version, a missing store is an error, an empty --runs match says so,
sweep ends with its summary table."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from replay.cli import app
from replay.cli.common import cell, fit_columns


@pytest.fixture(scope="module")
def db(sample_store: Path) -> Path:
    return sample_store


def run(*args: str, width: int = 80):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": str(width)})


def test_fit_columns_keeps_whole_columns_in_order():
    df = pl.DataFrame({"id": ["a" * 30], "n": [123456789], "long_name_column": ["x"], "k": [1]})
    kept, hidden = fit_columns(df, 52)  # 1 + (30 + 3) + (11 + 3) + (1 + 3); the 19-wide column does not fit
    assert kept.columns == ["id", "n", "k"] and hidden == ["long_name_column"]  # a later narrow column still fits
    assert fit_columns(df, 200)[1] == []
    assert [cell(v) for v in (43333.33, 0.8475, 1234567, None)] == ["43,333", "0.8475", "1,234,567", ""]


def test_simulate_at_80_columns_keeps_numbers_whole_and_names_the_rest(db):
    res = run("simulate", "--db", str(db), "--no-store", "-p", "seed_a")
    assert res.exit_code == 0, res.output
    lines = res.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "columns left out at 80 columns:" in res.stdout and "(--wide shows all)" in res.stdout
    doc = json.loads(run("simulate", "--db", str(db), "--no-store", "-p", "seed_a", "--format", "json").stdout)
    for row in doc:  # every prompt total appears whole, with its separators
        assert f" {row['prompt_tokens']:,} " in res.stdout
    wide = run("simulate", "--db", str(db), "--no-store", "-p", "seed_a", "--wide")
    assert "left out" not in wide.stdout
    for col in ("price_source", "token_source", "max_reads_one_resource"):
        assert col in wide.stdout


def test_runs_keeps_ids_whole_or_folded(db):
    res = run("runs", "--db", str(db))
    assert res.exit_code == 0 and max(len(line) for line in res.stdout.splitlines()) <= 80
    ids = [r["run_id"] for r in json.loads(run("runs", "--db", str(db), "--format", "json").stdout)]
    for rid in ids:
        assert rid[:24] in res.stdout
        if len(rid) <= 24:
            assert f" {rid} " in res.stdout
    wide = run("runs", "--db", str(db), "--wide")
    assert all(rid in wide.stdout for rid in ids) and "recorded_usage" in wide.stdout


@pytest.mark.parametrize(
    "args",
    [
        ("runs",),
        ("quarantine",),
        ("sql", "SELECT run_id, n_requests FROM runs"),
        ("simulate", "--no-store", "-p", "full"),
        ("fidelity",),
        ("tokens", "-t", "o200k"),
        ("calibrate", "-t", "o200k"),
        ("placeholders",),
        ("tokenizers",),
        ("show", "sample-long-1-94bf620e/sample-long-1", "-p", "seed_a", "--vs", "full"),
    ],
)
def test_every_format_json_parses(db, args):
    extra = [] if args[0] == "tokenizers" else ["--db", str(db)]
    res = run(*args, *extra, "--format", "json")
    assert res.exit_code == 0, res.output
    assert isinstance(json.loads(res.stdout), (list, dict))


def test_version():
    from replay import __version__

    res = run("--version")
    assert res.exit_code == 0 and res.stdout.strip() == f"replay {__version__}"


def test_a_read_command_on_a_missing_store_is_an_error(tmp_path):
    missing = tmp_path / "typo.duckdb"
    for args in (("runs",), ("simulate",), ("sql", "SELECT 1"), ("show", "x"), ("fidelity",)):
        res = run(*args, "--db", str(missing))
        assert res.exit_code == 2 and "no store at" in res.output, args
        assert not missing.exists()


def test_an_empty_runs_match_says_so(db):
    res = run("simulate", "--db", str(db), "--no-store", "--runs", "no-such-%")
    assert res.exit_code == 1 and "--runs 'no-such-%' matches no run" in str(res.exception)


def test_sweep_ends_with_its_summary_table(db, tmp_path):
    grid = tmp_path / "g.toml"
    grid.write_text(
        '[sweep]\nname = "fits"\npolicy = "seed_a"\nmode = "grid"\n[fixed]\nwindow = 130000\n'
        "reserve = 24576\n[grid]\nprotect = [8000, 43333]\n"
    )
    res = run("sweep", str(grid), "--db", str(db), "--executor", "serial", "--out", str(tmp_path))
    assert res.exit_code == 0, res.output
    tail = res.stdout[res.stdout.index("2 points, metrics summed over") :]
    assert "protect" in tail and "43,333" in tail and "8,000" in tail and "overflow" in tail
    doc = json.loads(
        run(
            "sweep", str(grid), "--db", str(db), "--executor", "serial", "--out", str(tmp_path), "--format", "json"
        ).stdout
    )
    assert sorted(r["protect"] for r in doc) == [8000, 43333]


def test_help_keeps_square_brackets():
    res = run("sweep", "--help", width=200)
    assert "Sweep file (TOML: [sweep], [fixed], [grid] or [random])." in res.stdout


def test_report_on_an_empty_runs_match_says_so(db, tmp_path):
    res = run("report", "--db", str(db), "--runs", "no-such-%", "--out", str(tmp_path / "r"))
    assert res.exit_code == 1 and "--runs 'no-such-%' matches no run" in str(res.exception)
    assert not (tmp_path / "r").exists()
