"""A policy setting that cannot act at the window is a warning in simulate, sweep, check and show, naming the knob,
its value and a value that would act; every command has the same default window, said in its help."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cli import app
from replay.policies import make_policy
from replay.policies.base import DEFAULT_WINDOW
from replay.policies.window_fit import window_warnings
from replay.sweeps import from_dict
from replay.sweeps.window_warnings import sweep_window_warnings

SUMMARY_AT = "seed_a's summary_at 80,000 is at or above window - reserve (32,768 - 0 = 32,768)"


def run(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "80"})


def flat(text: str) -> str:
    return " ".join(text.split())


def test_a_trigger_above_the_usable_window_is_named_with_a_value_that_acts():
    (line,) = window_warnings(make_policy("seed_a"), 32_768, 0)
    assert line.startswith(SUMMARY_AT) and "--set summary_at=24000 would act" in line
    assert window_warnings(make_policy("seed_a"), 200_000, 24_576) == []  # the defaults act at the default window
    protect = window_warnings(make_policy("seed_a", {"protect": 40_000}), 32_768, 0)
    assert any("protect 40,000" in w and "nothing can be evicted" in w and "protect=24000" in w for w in protect)


def test_a_sweep_counts_the_points_a_setting_cannot_act_at():
    spec = from_dict(
        {
            "sweep": {"policy": "seed_a"},
            "fixed": {"window": 32_768, "reserve": 0},
            "grid": {"summary_at": [20_000, 30_000, 40_000]},
        }
    )
    (line,) = sweep_window_warnings(spec)
    assert "summary_at 40,000" in line and line.endswith("(1 of 3 points)")


def test_simulate_and_show_warn_under_the_table(sample_store: Path):
    res = run("simulate", "--db", str(sample_store), "--no-store", "-p", "seed_a", "--window", "32768")
    assert res.exit_code == 0, res.output
    out = flat(res.output)
    assert SUMMARY_AT in out and "--set summary_at=24000 would act" in out
    assert out.index("WARNINGS") > out.index("run_id")  # under the table, in one block
    rid = run("runs", "--db", str(sample_store), "--format", "json").stdout.split('"run_id":"')[1].split('"')[0]
    show = run("show", rid, "--db", str(sample_store), "-k", "0", "-p", "seed_a", "--window", "32768")
    assert show.exit_code == 0, show.output
    assert SUMMARY_AT in flat(show.output)


def test_check_warns_per_side(sample_store: Path, tmp_path: Path):
    root = Path(__file__).resolve().parents[2] / "examples" / "check"
    narrow = tmp_path / "narrow.toml"
    narrow.write_text((root / "candidate.toml").read_text().replace("window = 130000", "window = 32768"))
    res = CliRunner().invoke(app, ["check", str(root / "baseline.toml"), str(narrow), "--db", str(sample_store)])
    assert res.exit_code in (0, 1), res.output
    out = flat(res.output)
    assert "candidate: seed_a's summary_at" in out and "baseline: seed_a" not in out


@pytest.mark.parametrize("command", ["simulate", "show", "report"])
def test_one_default_window_said_in_help(command: str):
    res = run(command, "--help")
    assert f"{DEFAULT_WINDOW:,}" in flat(res.output) and "every command" in flat(res.output)
