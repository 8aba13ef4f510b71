"""At 80 columns every table-printing command keeps each shown number whole (a cell folds, a number is never cut
mid-digit), no line passes 80 characters, the column a command exists for stays visible, and no Python repr
leaks into the output."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

import replay.cli.common as common
from replay.cli import app
from replay.cli.common import cell, emit

RUN = "sample-long-1-94bf620e/sample-long-1"
NUMBER = re.compile(r"\d[\d,.]*\d|\d")
NUMERIC_TEXT = re.compile(r"[\d.,\s%\[\]/+\-]+")  # a text cell that holds only numbers ("[47.6, 64.4]")
REPR = re.compile(r"\{'|\[\('|<[\w.]+ object at 0x|\bNone\b|\bTrue\b|\bFalse\b")


@pytest.fixture(scope="module")
def db(sample_store: Path, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("eighty") / "s.duckdb"
    shutil.copy(sample_store, path)
    return path


def _whole(number: str, text: str) -> bool:
    return re.search(rf"(?<![\d,.]){re.escape(number)}(?![\d,]|\.\d)", text) is not None


def _numbers(frame: pl.DataFrame) -> list[str]:
    """Every number a table of ``frame`` prints: numeric cells as ``cell`` formats them, and the numbers inside
    text cells that hold nothing else."""
    out = []
    for col in frame.columns:
        for v in frame[col].to_list():
            if v is None or isinstance(v, bool):
                continue
            if isinstance(v, (int, float)):
                out.append(cell(v))
            elif isinstance(v, str) and NUMERIC_TEXT.fullmatch(v):
                out += NUMBER.findall(v)
    return out


COMMANDS = [
    ("runs",),
    ("runs", "--by", "model"),
    ("runs", "--by", "day"),
    ("sql", "SELECT run_id, n_requests, harness FROM runs"),
    ("simulate", "--no-store", "-p", "seed_a"),
    ("simulate", "--no-store", "-p", "full", "--window", "32768"),
    ("fidelity",),
    ("tokens", "-t", "o200k"),
    ("calibrate", "-t", "o200k"),
    ("placeholders",),
    ("behaviour", "-p", "masking"),
    ("tune", "-t", "tekken", "--window", "32000", "--reserve", "4000", "--points", "6", "--executor", "serial"),
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:3]))
def test_no_number_is_cut_at_80_columns(db: Path, tmp_path: Path, monkeypatch, args: tuple[str, ...]):
    shown: list[pl.DataFrame] = []
    fit = common.fit_columns

    def recording(*a, **k):
        kept, hidden = fit(*a, **k)
        shown.append(kept)
        return kept, hidden

    monkeypatch.setattr(common, "fit_columns", recording)
    extra = ["--out", str(tmp_path / "out")] if args[0] == "tune" else []
    res = CliRunner().invoke(app, [*args, "--db", str(db), *extra], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    text = res.stdout
    assert max(len(line) for line in text.splitlines()) <= 80, text
    assert not REPR.search(text), REPR.search(text)
    if args[0] not in ("calibrate", "placeholders"):  # the sample has no recorded prompt usage, no placeholders
        assert shown, "the command printed no table through emit"
    for frame in shown:
        for number in _numbers(frame):
            assert _whole(number, text), f"{number} is not whole in:\n{text}"


def test_the_reason_to_exist_column_stays_visible(monkeypatch):
    """calibrate's bias, placeholders' interval, fidelity's verdict: kept at 80 columns however many columns
    come before them and however wide a text column is."""
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr(common, "console", common.Console(markup=False, width=80, record=True))
    bias = pl.DataFrame(
        {
            "estimator": ["cjk_chars4"],
            "part": ["tool_result"],
            "content": ["prose"],
            "items": [1444],
            "chars": [1584402],
            "real_tokens": [460632],
            "est_tokens": [396100],
            "bias": [-0.1401],
        }
    )
    emit(bias, keep=("bias",), wide=False)
    out = common.console.export_text()
    assert "-0.1401" in out and "bias" in out and "est_tokens" in out.split("left out")[1]
    common.console.export_text(clear=True)
    wide_text = pl.DataFrame(
        {"choice": ["recommended: fewest overflows"], "overflow_incidents": [0], "fails_on": ["x" * 300]}
    )
    emit(wide_text, keep=("overflow_incidents", "fails_on"))
    out = common.console.export_text()
    assert "overflow_" in out and max(len(line) for line in out.splitlines()) <= 80
    assert out.count("x") >= 300  # folded onto more lines, never cut


def test_fidelity_shows_its_verdict_at_80_columns(db: Path):
    res = CliRunner().invoke(app, ["fidelity", "--db", str(db)], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    assert "verdict" in res.stdout and ("missed" in res.stdout or "within" in res.stdout)
