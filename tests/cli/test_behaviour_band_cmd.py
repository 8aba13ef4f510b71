"""behaviour calibrate / predict and --behaviour on simulate, sweep and tune (issue 24): the calibration file states
its provenance and held-out check and is refused for another harness; a point appears only with a calibration of
the run's harness; the tune chart marks where pressure falls under 1%."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from replay.cli import app

ARMS = Path(__file__).resolve().parents[2].parent / "shared" / "behaviour" / "complexity_trap_arms_given.csv"
OH = "%corpus/openhands/%"
SWE = "%swea-lgetter%"


@pytest.fixture(scope="module")
def db(corpus, tmp_path_factory) -> Path:
    from replay.ingest import ingest
    from replay.store import open_store

    path = tmp_path_factory.mktemp("band") / "b.duckdb"
    con = open_store(path)
    ingest(con, [corpus / "openhands", *sorted((corpus / "swe-agent").glob("swea-lgetter-*"))])
    con.close()
    return path


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> tuple[Path, Path]:
    arms = pl.read_csv(ARMS).filter(pl.col("scaffold") == "openhands")
    raw = arms.filter(pl.col("strategy") == "Raw Agent").select(pl.col("instance_id").alias("task"), "turn_count")
    pol = arms.filter(pl.col("strategy") != "Raw Agent").select(pl.col("instance_id").alias("task"), "turn_count")
    folder = tmp_path_factory.mktemp("tables")
    paired = raw.join(pol, on="task").rename({"turn_count": "raw_turns", "turn_count_right": "policy_turns"})
    paired.write_csv(folder / "paired.csv")
    paired.select("task", "raw_turns").head(120).write_csv(folder / "lengths.csv")
    return folder / "paired.csv", folder / "lengths.csv"


def invoke(*args: str) -> str:
    res = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"}, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.stdout


def fails(*args: str) -> str:
    res = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    assert res.exit_code != 0
    return str(res.exception) + res.output


@pytest.fixture(scope="module")
def cal(db, tables, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cal") / "cal.toml"
    invoke(
        "behaviour", "calibrate", "--paired", str(tables[0]), "--policy", "masking", "--set", "keep_last=5",
        "--cap", "250", "--runs", OH, "--out", str(out), "--db", str(db),
    )  # fmt: skip
    return out


def test_calibration_file_states_provenance_and_held_out_check(cal, tables) -> None:
    doc = tomllib.loads(cal.read_text())
    assert doc["calibration"]["harness"] == "openhands" and doc["calibration"]["settings"]["keep_last"] == 5
    prov = doc["provenance"]
    assert prov["paired_file"] == str(tables[0]) and len(prov["paired_sha256"]) == 64 and prov["tasks"] == 500
    assert abs(prov["reproduced_ratio"] - prov["observed_ratio"]) <= 0.005
    held = doc["held_out"]
    assert held["fit_tasks"] + held["check_tasks"] == 500 and held["interval_lo"] < held["interval_hi"]
    assert isinstance(held["inside"], bool) and len(doc["replicates"]["rate"]) >= 100


def test_calibrate_without_a_reference_says_what_it_leaves_out(db, tables, tmp_path) -> None:
    """Without --reference the raw lengths alone decide each task's exposure: the command says so on stderr, and
    what a reference would change."""
    args = ["behaviour", "calibrate", "--paired", str(tables[0]), "--set", "keep_last=5", "--cap", "250"]
    args += ["--runs", OH, "--db", str(db)]
    res = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "a.toml")], env={"COLUMNS": "200"})
    assert res.exit_code == 0 and "no --reference" in res.stderr and "no --reference" not in res.stdout
    ref = tmp_path / "ref.csv"
    pl.read_csv(tables[0]).with_columns(policy_turns=pl.col("raw_turns")).write_csv(ref)
    res = CliRunner().invoke(app, [*args, "--reference", str(ref), "--out", str(tmp_path / "b.toml")])
    assert res.exit_code == 0 and "no --reference" not in res.stderr


def test_predict_gives_a_ratio_with_an_interval_beside_the_band(db, cal, tables) -> None:
    args = ("--lengths", str(tables[1]), "--cap", "250", "--runs", OH, "--db", str(db))
    wide = json.loads(invoke("behaviour", "predict", "--calibration", str(cal), "--set", "keep_last=40", *args))
    narrow = json.loads(invoke("behaviour", "predict", "--calibration", str(cal), "--set", "keep_last=5", *args))
    for out in (wide, narrow):
        lo, hi = out["ratio_interval_95"]
        assert lo <= out["ratio_point"] <= hi and out["band_ratio_lo"] <= out["ratio_point"] <= out["band_ratio_hi"]
        assert "not a bound" in out["note"] and out["tasks"] == 120
    assert wide["ratio_point"] < narrow["ratio_point"]  # a wider window presses less
    assert wide["band_95"] is None and "give --reference" in wide["band_assumes"]


def test_predict_band_with_a_no_loop_reference(db, cal, tables, tmp_path) -> None:
    ref = tmp_path / "ref.csv"
    pl.read_csv(tables[0]).with_columns(policy_turns=pl.col("raw_turns")).write_csv(ref)  # a rerun equal to raw
    args = ("--lengths", str(tables[1]), "--cap", "250", "--runs", OH, "--db", str(db), "--set", "keep_last=5")
    out = json.loads(invoke("behaviour", "predict", "--calibration", str(cal), "--reference", str(ref), *args))
    lo, hi = out["band_95"]
    assert lo == pytest.approx(1.0) and hi >= out["band_ratio_hi"] * 0.9 and str(ref) in out["band_assumes"]


def test_a_calibration_with_a_rerun_spread_keeps_it_for_its_predictions(db, cal, tables, tmp_path) -> None:
    """Calibrated with --reference (the given SWE-agent Gemini 2.5 Flash M=10 arm, whose calibration fits h = 0),
    the file keeps the spread; predict uses it for the point and, with no --reference of its own, for band_95. A
    wider window than the calibrated one, where the raw lengths alone see less exposure, predicts more with it."""
    swe = pl.read_csv(ARMS).filter(pl.col("experiment").str.starts_with("gemini_2.5_flash-agent"))
    raw = swe.filter(pl.col("strategy") == "Raw Agent").select(pl.col("instance_id").alias("task"), "turn_count")
    pol = swe.filter(pl.col("strategy") != "Raw Agent").select(pl.col("instance_id").alias("task"), "turn_count")
    ref = tmp_path / "ref.csv"
    raw.join(pol, on="task").rename({"turn_count": "raw_turns", "turn_count_right": "policy_turns"}).write_csv(ref)
    spread_cal = tmp_path / "cal.toml"
    invoke(
        "behaviour", "calibrate", "--paired", str(tables[0]), "--policy", "masking", "--set", "keep_last=5",
        "--cap", "250", "--runs", OH, "--reference", str(ref), "--out", str(spread_cal), "--db", str(db),
    )  # fmt: skip
    doc = tomllib.loads(spread_cal.read_text())
    assert doc["rerun"]["reference"] == str(ref) and len(doc["rerun"]["reference_sha256"]) == 64
    assert sum(len(doc["rerun"][f"bin_{b}"]) for b in range(5)) == doc["rerun"]["tasks"]
    assert abs(doc["provenance"]["reproduced_ratio"] - doc["provenance"]["observed_ratio"]) <= 0.005
    args = ("--lengths", str(tables[1]), "--cap", "250", "--runs", OH, "--db", str(db), "--set", "keep_last=10")
    with_spread = json.loads(invoke("behaviour", "predict", "--calibration", str(spread_cal), *args))
    without = json.loads(invoke("behaviour", "predict", "--calibration", str(cal), *args))
    assert with_spread["ratio_point"] > without["ratio_point"]
    assert with_spread["band_95"] is not None and str(ref) in with_spread["band_assumes"]


def test_predict_refuses_another_pool_than_the_calibrations(db, cal, tables) -> None:
    args = ("--lengths", str(tables[1]), "--cap", "250", "--db", str(db), "--set", "keep_last=5")
    assert "not the calibration's" in fails(
        "behaviour", "predict", "--calibration", str(cal), "--runs", "%corpus/openhands/oh-eval%", *args
    )


def test_a_calibration_is_refused_for_another_harness(db, cal, tables) -> None:
    args = ("--lengths", str(tables[1]), "--cap", "250", "--db", str(db), "--set", "keep_last=5")
    assert "does not carry across harnesses" in fails(
        "behaviour", "predict", "--calibration", str(cal), "--runs", SWE, *args
    )


def test_simulate_behaviour_band_and_point_only_for_the_calibrated_harness(db, cal) -> None:
    base = ("simulate", "-p", "masking", "--set", "keep_last=5", "--db", str(db), "--no-store", "--format", "json")
    rows = json.loads(invoke(*base, "--runs", "%swea-lgetter%", "--behaviour", "--cap", "150"))
    assert rows and all("pressured_requests" in r and "turns_hi" in r and "turns_point" not in r for r in rows)
    assert all(r["turns_lo"] <= r["turns_hi"] for r in rows)
    swe = json.loads(
        invoke(*base, "--runs", "%swea-lgetter%", "--behaviour", "--cap", "150", "--calibration", str(cal))
    )
    assert all("turns_point" not in r for r in swe)  # an openhands calibration gives swe-agent runs no point
    oh = json.loads(invoke(*base, "--runs", OH, "--behaviour", "--cap", "250", "--calibration", str(cal)))
    assert any(r.get("turns_point") is not None for r in oh)
    plain = json.loads(invoke(*base, "--runs", OH))
    assert "pressured_requests" not in plain[0]
    assert "belong to --behaviour" in fails(*base, "--cap", "250")


def test_behaviour_rows_stored_with_the_band(db) -> None:
    invoke("behaviour", "-p", "masking", "--set", "keep_last=3", "--runs", "%swea-lgetter%", "--cap", "150",
           "--db", str(db), "--format", "json")  # fmt: skip
    from replay.store import open_store

    con = open_store(db, read_only=True)
    rows = con.execute(
        "SELECT pressured_requests, mech_requests, turns_lo, turns_hi, cap, turns_point FROM behaviour_runs "
        "WHERE json_extract(config, '$.keep_last')::INT = 3"
    ).fetchall()
    con.close()
    assert rows and all(r[4] == 150 and r[2] <= r[3] and r[5] is None for r in rows)
    assert any(r[0] > 0 for r in rows)


def test_sweep_and_tune_behaviour(db, tmp_path) -> None:
    spec = tmp_path / "s.toml"
    spec.write_text('[sweep]\npolicy = "masking"\nruns = "%swea-lgetter%"\n[grid]\nkeep_last = [1, 5, 40]\n')
    out = json.loads(invoke("sweep", str(spec), "--db", str(db), "--executor", "serial", "--out", str(tmp_path),
                            "--behaviour", "--cap", "150", "--format", "json"))  # fmt: skip
    by_k = {int(r["keep_last"]): r for r in out}
    assert by_k[1]["pressured_share"] >= by_k[5]["pressured_share"] >= by_k[40]["pressured_share"]
    assert by_k[1]["turns_hi"] >= by_k[40]["turns_hi"] >= by_k[40]["turns_lo"]


def test_tune_chart_marks_where_pressure_falls_under_one_percent() -> None:
    import matplotlib.pyplot as plt

    from replay.reports.plots import behaviour_band

    points = pl.DataFrame(
        {
            "keep_last": [2, 4, 8, 16],
            "pressured_share": [0.3, 0.05, 0.009, 0.0],
            "pressured_requests": [30, 5, 1, 0],
            "recorded_turns": [100] * 4,
            "turns_lo": [100.0] * 4,
            "turns_hi": [300.0, 180.0, 110.0, 100.0],
        }
    )
    fig, ax = plt.subplots()
    behaviour_band(points, ["keep_last"], ax)
    texts = [t.get_text() for t in ax.texts]
    assert "pressured < 1% from keep_last = 8" in texts
    assert ax.collections  # the band is shaded
    plt.close(fig)


def test_a_pool_of_mixed_harnesses_is_refused(db, tables, tmp_path) -> None:
    out = tmp_path / "c.toml"
    args = ("--paired", str(tables[0]), "--cap", "250", "--out", str(out), "--db", str(db), "--set", "keep_last=5")
    assert "a pool is raw runs of one harness" in fails("behaviour", "calibrate", "--runs", "%", *args)
    assert not out.exists()


def test_a_calibration_of_the_former_model_is_refused(db, cal, tables, tmp_path) -> None:
    old = tmp_path / "old.toml"
    old.write_text(cal.read_text().replace('hazard_per = "task_length_recurrence"\n', 'hazard_per = "loop_exposure"\n'))
    args = ("--lengths", str(tables[1]), "--cap", "250", "--runs", OH, "--db", str(db), "--set", "keep_last=5")
    assert "calibrate again" in fails("behaviour", "predict", "--calibration", str(old), *args)
