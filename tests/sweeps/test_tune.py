"""replay tune: Pareto front, zero-overflow filter, grid sizing, recommendation, policy file round trip, CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from replay.cli import app
from replay.errors import ReplayError
from replay.sweeps.pareto import non_dominated, pareto_front
from replay.sweeps.policy_file import load_policy_file
from replay.sweeps.select import OBJECTIVES, aggregate_points, feasible, front, recommend
from replay.sweeps.tune import tune
from replay.sweeps.tune_grid import level_counts, tune_grid, tune_spec

ROOT = Path(__file__).resolve().parents[2]


def pts(rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(
        rows,
        schema=[
            "point_id",
            "summaries_per_100",
            "cache_hit_rate",
            "repeat_evicted",
            "cost_usd",
            "overflow_incidents",
            "errors",
        ],
        orient="row",
    )


def test_dominated_points_are_excluded() -> None:
    df = pts(
        [
            ("a", 1.0, 0.8, 10, 5.0, 0, 0),
            ("b", 2.0, 0.7, 12, 6.0, 0, 0),  # worse than a everywhere
            ("c", 1.0, 0.8, 10, 5.5, 0, 0),  # equal to a except cost: dominated
            ("d", 0.5, 0.6, 20, 9.0, 0, 0),
        ]
    )  # fewest summaries: on the front
    assert front(df)["point_id"].to_list() == ["a", "d"]


def test_ties_are_kept() -> None:
    df = pts([("a", 1.0, 0.8, 10, 5.0, 0, 0), ("b", 1.0, 0.8, 10, 5.0, 0, 0), ("c", 1.0, 0.8, 11, 5.0, 0, 0)])
    assert non_dominated(df, OBJECTIVES).tolist() == [True, True, False]


def test_maximised_objective_and_nulls_count_as_worst() -> None:
    df = pl.DataFrame({"x": [1.0, 1.0, None], "y": [0.5, 0.9, 0.99]})
    assert pareto_front(df, [("x", "min"), ("y", "max")])["on_front"].to_list() == [False, True, True]
    with pytest.raises(ReplayError, match="no column"):
        non_dominated(df, [("z", "min")])


def test_zero_overflow_filter_and_fallback() -> None:
    df = pts([("a", 1.0, 0.9, 1, 1.0, 3, 0), ("b", 1.0, 0.5, 9, 9.0, 0, 0), ("c", 1.0, 0.5, 9, 9.0, 0, 1)])
    ok, zero = feasible(df)
    assert zero and ok["point_id"].to_list() == ["b"]  # c errored on a run: never chosen
    ok, zero = feasible(pts([("a", 1.0, 0.9, 1, 1.0, 3, 0), ("d", 1.0, 0.9, 1, 1.0, 5, 0), ("e", 1, 1, 1, 1, 3, 0)]))
    assert not zero and ok["point_id"].to_list() == ["a", "e"]  # the fewest incidents, flagged


def test_recommendation_rule() -> None:
    df = pts([("a", 3.0, 0.70, 10, 10.00, 0, 0), ("b", 1.0, 0.80, 10, 10.04, 0, 0), ("c", 0.5, 0.9, 10, 12.0, 0, 0)])
    assert recommend(front(df))["point_id"] == "b"  # within 0.5% of the cheapest, higher cache hit
    assert recommend(front(df), cost_tie=0.0)["point_id"] == "a"
    tied = pts([("a", 1.0, 0.8, 10, 5.0, 0, 0), ("b", 1.0, 0.8, 10, 5.0, 0, 0)])
    tied = tied.with_columns(margin=pl.Series([0.25, 0.1]))
    assert recommend(front(tied))["point_id"] == "a"
    assert recommend(front(tied), prefer={"margin": "low"})["point_id"] == "b"


def test_grid_is_relative_to_window_and_sized_by_points() -> None:
    assert level_counts([3, 2, 1.5, 1.5, 1.5], 96) == [4, 3, 2, 2, 2]
    g = tune_grid("seed_a", 64_000, 96)
    assert min(g["summary_at"]) == 25_600 and max(g["summary_at"]) == 57_600
    for n in (1, 8, 40, 150):
        size = len(tune_spec("seed_a", 64_000, 8_000, None, n).points())
        assert 1 <= size <= n
    assert tune_spec("seed_a", 64_000, 8_000, "t", 40).sweep_id == tune_spec("seed_a", 64_000, 8_000, "t", 40).sweep_id
    with pytest.raises(ReplayError, match="no tuning space"):
        tune_grid("full", 64_000)
    with pytest.raises(ReplayError, match="reserve"):
        tune_spec("seed_a", 8_000, 9_000, None)
    with pytest.raises(ReplayError, match="--window must be"):  # the window is what is wrong, not the reserve
        tune_spec("seed_a", 0, 0, None)


def test_aggregate_recomputes_ratios_from_sums() -> None:
    frame = pl.DataFrame(
        {
            "point_id": ["p", "p"],
            "run_id": ["r1", "r2"],
            "error": [None, None],
            "requests": [10, 30],
            "summaries": [1, 1],
            "prompt_tokens": [100, 300],
            "cached_tokens": [0, 300],
            "overflow_incidents": [0, 2],
            "repeat_evicted": [1, 2],
            "cost_usd": [1.0, 2.0],
            "param_summary_at": [5.0, 5.0],
        }
    )
    row = aggregate_points(frame).row(0, named=True)
    assert row["summaries_per_100"] == 5.0 and row["cache_hit_rate"] == 0.75
    assert (row["runs"], row["runs_with_overflow"], row["overflow_incidents"], row["summary_at"]) == (2, 1, 2, 5.0)


@pytest.fixture()
def sample_store(sample_db_path: Path, tmp_path: Path) -> Path:
    path = tmp_path / "s.duckdb"
    shutil.copy(sample_db_path, path)
    return path


def test_tune_writes_a_policy_file_check_accepts(sample_store: Path, tmp_path: Path) -> None:
    from replay.store import open_store

    con = open_store(sample_store)
    res = tune(con, "seed_a", 32_000, 4_000, None, tmp_path / "t", points=6, executor="serial", progress=False)
    again = tune(con, "seed_a", 32_000, 4_000, None, None, points=6, executor="serial", progress=False)
    con.close()
    assert again.computed == 0 and again.recommended["point_id"] == res.recommended["point_id"]  # resumed
    pf = load_policy_file(res.files["policy"])
    assert pf.name == "seed_a" and pf.params == res.params
    assert pf.params["window"] == 32_000 and pf.params["reserve"] == 4_000
    from replay.sweeps.tune_report import edge_knobs, summary_lines

    text = "\n".join(summary_lines(res))
    # the default summary_at (80,000) cannot fire at this window: said before anything else
    assert "seed_a's default summary_at 80,000 is at or above window - reserve (28,000)" in text
    assert all(e.split(" = ")[0] in res.spec.grid for e in edge_knobs(res))
    assert any(line.startswith("recommended") for line in summary_lines(res))
    d = res.defaults
    if res.gate_passed:  # check's default gate passes the recommendation against the defaults
        tol = []
    else:  # none passes: the summary says why and gives the --tol that would accept the recommendation
        assert "no swept point passes `replay check`'s default gate" in text
        if res.recommended["point_id"] == "defaults":
            assert pf.params == {"window": 32_000, "reserve": 4_000}
            return
        assert res.recommended["overflow_incidents"] < d["overflow_incidents"]
        tol = text.split("recommended.toml --tol ", 1)[1].split("\n")[0].split(" --tol ")
        tol = [x for t in tol for x in ("--tol", t.strip())]
    assert isinstance(pf.params["summary_at"], int) and pf.params["summary_at"] <= 28_000
    out = CliRunner().invoke(
        app, ["check", str(res.files["defaults"]), str(res.files["policy"]), "--db", str(sample_store), *tol]
    )
    assert out.exit_code == 0, out.output
    if tol:  # without the tolerances the gate fails: the sentence told the truth
        out = CliRunner().invoke(
            app, ["check", str(res.files["defaults"]), str(res.files["policy"]), "--db", str(sample_store)]
        )
        assert out.exit_code == 1, out.output


def test_every_tunable_policy_has_a_valid_grid_below_the_usable_window() -> None:
    from replay.policies import make_policy, tunable
    from replay.sweeps.adapter import split_params

    assert {
        "seed_a",
        "seed_b",
        "seed_c",
        "clear_tool_uses",
        "auto_compact",
        "openhands",
        "openhands_tokens",
        "openhands_recent",
        "masking",
        "last_n",
        "drop_oldest",
    } == set(tunable())
    for policy in tunable():
        spec = tune_spec(policy, 65_536, 8_192, None, 24)
        assert 1 < len(spec.points()) <= 24, policy
        for p in spec.points():
            make_policy(policy, split_params(p)[2])  # every point is a valid config
    g = tune_grid("clear_tool_uses", 65_536, 96, 8_192)
    assert max(g["trigger"]) < 57_344 and min(g["trigger"]) == 19_700  # 0.3 W .. just below window - reserve
    assert max(tune_grid("auto_compact", 65_536, 96, 8_192)["threshold"]) < 57_344 / 65_536
    assert max(tune_grid("seed_a", 32_768, 96, 4_096)["summary_at"]) < 28_672


def test_fit_warnings_name_settings_that_cannot_fit_the_window() -> None:
    from replay.sweeps.tune_grid import fit_warnings

    (w,) = fit_warnings("seed_a", 32_768, 4_096)
    assert "default summary_at 80,000 is at or above window - reserve (28,672)" in w
    assert "over 13,107-28,099 instead" in w
    (w,) = fit_warnings("clear_tool_uses", 65_536, 8_192)
    assert "default trigger 100,000" in w and "57,344" in w
    assert fit_warnings("auto_compact", 65_536, 8_192) == []  # 0.835 x 65,536 = 54,723 fits
    (w,) = fit_warnings("auto_compact", 65_536, 16_384)  # ... but not under 49,152
    assert "default threshold 0.835 (= 54,723 tokens)" in w
    assert fit_warnings("seed_a", 200_000, 20_000) == [] and fit_warnings("masking", 8_000, 4_000) == []
    assert "summary_at 9,000" in fit_warnings("seed_a", 10_000, 2_000, {"summary_at": 9_000})[0]


def test_gate_is_checks_gate_and_gives_the_tolerances_that_would_pass() -> None:
    from replay.sweeps.select import gate, overflowing_runs

    def rows(pid, over, cost, evicted):
        return [
            {
                "point_id": pid,
                "run_id": r,
                "error": None,
                "requests": 10,
                "summaries": 0,
                "prompt_tokens": 100,
                "cached_tokens": 50,
                "overflow_incidents": o,
                "evicted_failures": 0,
                "repeat_evicted": e,
                "repeat_evicted_tokens": 0,
                "emergencies": 0,
                "cost_usd": c,
                "uncached_tokens": 50,
            }
            for r, o, c, e in zip(("r1", "r2"), over, cost, evicted, strict=True)
        ]

    dflt = pl.DataFrame(rows("d", (2, 0), (1.0, 1.0), (1, 1)))
    frame = pl.DataFrame(
        rows("same", (2, 0), (1.0, 1.0), (1, 1))
        + rows("cheap_overflow", (0, 1), (0.5, 0.5), (1, 1))
        + rows("dear", (0, 0), (1.2, 1.2), (1, 1))
    )
    g = {r["point_id"]: r for r in gate(frame, dflt).iter_rows(named=True)}
    assert g["same"]["gate_ok"] and g["same"]["gate_blockers"] == ""
    assert (
        not g["cheap_overflow"]["gate_ok"]
        and "overflow_incidents up in 1 run(s)" in g["cheap_overflow"]["gate_blockers"]
        and "--tol overflow_incidents=1" in g["cheap_overflow"]["gate_tol"]
    )
    assert not g["dear"]["gate_ok"] and g["dear"]["gate_blockers"] == "cost_usd +20% worse"
    assert g["dear"]["gate_tol"] == "--tol cost_usd=0.2"
    assert overflowing_runs(frame, "cheap_overflow") == [("r2", 1)] and overflowing_runs(dflt) == [("r1", 2)]


@pytest.mark.parametrize(
    "policy",
    [
        "seed_b",
        "seed_c",
        "auto_compact",
        "openhands",
        "openhands_tokens",
        "openhands_recent",
        "masking",
        "last_n",
        "drop_oldest",
    ],
)
def test_tune_runs_for_every_policy(policy: str, sample_store: Path, tmp_path: Path) -> None:
    r = CliRunner().invoke(
        app,
        [
            "tune",
            "-t",
            "tekken",
            "--window",
            "32000",
            "--reserve",
            "4000",
            "--policy",
            policy,
            "--db",
            str(sample_store),
            "--out",
            str(tmp_path),
            "--points",
            "3",
            "--executor",
            "serial",
        ],
    )
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())  # console lines wrap at the terminal width
    assert f"replay tune: {policy}" in text and "pass `replay check`'s default gate" in text
    assert "recommended" in text and (tmp_path / "recommended.toml").exists()
    assert load_policy_file(tmp_path / "recommended.toml").name == policy


def test_cli_tune_on_the_sample(sample_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "tune"
    r = CliRunner().invoke(
        app,
        [
            "tune",
            "-t",
            "tekken",
            "--window",
            "32000",
            "--reserve",
            "4000",
            "--db",
            str(sample_store),
            "--out",
            str(out),
            "--points",
            "8",
            "--executor",
            "serial",
        ],
    )
    assert r.exit_code == 0, r.output
    for name in (
        "recommended.toml",
        "defaults.toml",
        "front.csv",
        "front.parquet",
        "points.parquet",
        "front.png",
        "front.svg",
    ):
        assert (out / name).stat().st_size > 0, name
    fr = pl.read_csv(out / "front.csv")
    assert fr["recommended"].sum() <= 1
    text = " ".join(r.output.split())  # console lines wrap at the terminal width
    assert "Pareto front" in text and "recommended" in text and "defaults at this window" in text
    # the warning comes before the sweep's table
    assert text.index("default summary_at 80,000") < text.index("Pareto front")
    assert "…" not in r.output  # at 80 columns cells fold, no number is cut
    pf = load_policy_file(out / "recommended.toml")
    assert pf.tokenizer and pf.tokenizer.startswith("tekken")
    pts_all = pl.read_parquet(out / "points.parquet")
    assert pts_all.height == 8 and pts_all["recommended"].sum() <= 1 and "gate_ok" in pts_all.columns
    # recommended.toml is accepted by simulate (--policy-file), sweep (a one-point sweep) and check
    sim = CliRunner().invoke(
        app,
        [
            "simulate",
            "--policy-file",
            str(out / "recommended.toml"),
            "--db",
            str(sample_store),
            "--no-store",
            "--format",
            "json",
        ],
    )
    assert sim.exit_code == 0, sim.output
    assert "real:tekken" in sim.output  # the file's tokenizer (its policy: --show-config below)
    cfg = CliRunner().invoke(
        app, ["simulate", "--policy-file", str(out / "recommended.toml"), "--show-config", "--db", str(sample_store)]
    )
    assert cfg.exit_code == 0 and '"kind": "seed_a"' in cfg.output, cfg.output
    assert f'"summary_at": {pf.params.get("summary_at", 80_000)}' in cfg.output  # the file's knob, not the default
    sw = CliRunner().invoke(
        app,
        [
            "sweep",
            str(out / "recommended.toml"),
            "--db",
            str(sample_store),
            "--executor",
            "serial",
            "--out",
            str(tmp_path / "sw"),
        ],
    )
    assert sw.exit_code == 0, sw.output
    assert "1 points x 7 runs" in sw.output
    from replay.sweeps.spec import load_spec

    spec = load_spec(out / "recommended.toml")
    assert spec.policy == "seed_a" and spec.points() == [pf.params]


def test_tune_counts_the_harness_prefix_claude_code_at_32k(corpus_db) -> None:
    """At 32,768 / 4,096 the Claude Code runs' harness prefix alone overflows several of them: tune must say so
    (no point is called overflow-free) and name those runs; without the prefix it would have looked feasible."""
    from replay.tokens.resolve import resolve_tokenizer

    tid = resolve_tokenizer(corpus_db, "claude-legacy")
    res = tune(
        corpus_db, "seed_a", 32_768, 4_096, tid, points=8, runs="%claude-code%", executor="serial", progress=False
    )
    assert not res.zero_overflow and res.recommended["overflow_incidents"] > 0
    assert any(r.startswith("ccb-ocak-minimax-m3") for r in res.unfittable)
    assert all(tokens + 4_096 > 32_768 for tokens in res.unfittable.values())
    from replay.sweeps.tune_report import summary_lines

    text = "\n".join(summary_lines(res))
    assert "overflow under any policy at this window" in text and "the recommendation still overflows" in text
    # the runs that still overflow are named with their counts, most first; unfittable ones starred
    assert res.overflowing and res.overflowing == sorted(res.overflowing, key=lambda rc: (-rc[1], rc[0]))
    name, n = res.overflowing[0]
    assert f"{name} ({n:,}{'*' if name in res.unfittable else ''})" in text
    assert any(r in res.unfittable for r, _ in res.overflowing)


def test_tune_priced_as_a_new_model_says_check_prices_differently(sample_store: Path, tmp_path: Path) -> None:
    r = CliRunner().invoke(
        app,
        [
            "tune",
            "-t",
            "tekken",
            "--window",
            "32000",
            "--reserve",
            "4000",
            "--policy",
            "masking",
            "--model",
            "gpt-4o",
            "--db",
            str(sample_store),
            "--out",
            str(tmp_path),
            "--points",
            "2",
            "--executor",
            "serial",
        ],
    )
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())
    assert "priced as gpt-4o" in text and "note: the gate priced every run as gpt-4o" in text


def test_tune_ends_with_an_answer_on_the_readme_example(
    sample_store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's tune example (tekken, 65,536 window, 8,192 reserve) at 80 columns ends with an ANSWER a user
    can act on: the point that passes, or the trade-off table and the setting nearest to passing, whose failed
    rules `replay check` confirms."""
    import re

    db = sample_store  # this module's copy: one per test
    monkeypatch.chdir(tmp_path)  # short relative paths: the sentences below do not fold inside a path
    out = Path("tune")
    args = ["tune", "-t", "tekken", "--window", "65536", "--reserve", "8192", "--points", "16"]
    r = CliRunner().invoke(
        app, [*args, "--executor", "serial", "--db", str(db), "--out", str(out)], env={"COLUMNS": "80"}
    )
    assert r.exit_code == 0, r.output
    assert max(len(line) for line in r.output.splitlines()) <= 80
    text = " ".join(r.output.split())
    answer = text.rsplit("ANSWER: ", 1)[1]
    assert "recommended.toml" in answer
    if "no swept setting passes the gate" not in answer:
        assert "it passes `replay check`'s gate" in answer
        ok = CliRunner().invoke(
            app, ["check", str(out / "defaults.toml"), str(out / "recommended.toml"), "--db", str(db)]
        )
        assert ok.exit_code == 0, ok.output
        return
    assert "no point passes the gate: the trade-off" in text  # one table: overflows vs cost vs the gate's rules
    trade = r.output[r.output.index("the trade-off") : r.output.index("replay tune: seed_a")]
    for column in ("overflow_", "cost_", "fails_on", "defaults (the baseline)", "nearest to passing"):
        assert column in trade, trade
    assert text.index("WARNINGS (") < text.index("ANSWER: ")  # the warnings in one block, the answer last
    tol = re.search(r"gate it with `replay check \S+ \S+ ((?:--tol \S+ ?)+)`", answer)
    assert tol, answer
    ok = CliRunner().invoke(
        app,
        ["check", str(out / "defaults.toml"), str(out / "recommended.toml"), "--db", str(db), *tol.group(1).split()],
    )
    assert ok.exit_code == 0, ok.output  # the tolerances the answer gives do accept the recommendation
    near = re.search(r"nearest to passing is point (\w+) \((\S+)\): it fails only on (.+?), with", answer)
    assert near, answer
    failed = [part.split(" ")[0] for part in near.group(3).split(", ")]
    near_file = out / "nearest.toml" if (out / "nearest.toml").exists() else out / "recommended.toml"
    res = CliRunner().invoke(
        app, ["check", str(out / "defaults.toml"), str(near_file), "--db", str(db), "--format", "json"]
    )
    assert res.exit_code == 1, res.output
    doc = json.loads(res.stdout)
    regressed = {m["metric"] for m in doc["metrics"] if m["regressed"]} | {
        r["metric"] for r in doc["changed_runs"] if r["regressed"]
    }
    assert regressed == set(failed), (regressed, failed)
