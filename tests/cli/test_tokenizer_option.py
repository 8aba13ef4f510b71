"""`-t/--tokenizer NAME|PATH` on every command: an unknown name exits 2 listing the built-ins (never chars/4),
a bare built-in name counts and yields real counts, and a name and a path to the same file are one tokenizer."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import duckdb
import pytest

from replay.tokens import builtins

POLICY = '[policy]\nname = "seed_a"\n{extra}[params]\nwindow = 130000\nreserve = 24576\n'
SWEEP = '[sweep]\npolicy = "seed_a"\nbatch = 1\n{extra}[fixed]\nwindow = 130000\n[grid]\nreserve = [24576]\n'


@pytest.fixture(scope="module")
def db(corpus: Path, tmp_path_factory) -> Path:
    from replay.ingest import ingest
    from replay.store import open_store

    path = tmp_path_factory.mktemp("tok-cli") / "s.duckdb"
    con = open_store(path)
    ingest(con, [corpus / "claude-code" / "ccl-sample-37f83ec9.jsonl"])
    con.close()
    return path


def replay_main(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    """Run the installed entry point in-process (ReplayError -> exit 2 happens there); exit code, stdout, stderr."""
    from replay.cli import main

    monkeypatch.setattr(sys, "argv", ["replay", *args])
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out, err = capsys.readouterr()
    return code, out, " ".join(err.split())


def counted_ids(db: Path) -> set[str]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {r[0] for r in con.execute("SELECT DISTINCT tokenizer_id FROM token_counts").fetchall()}
    finally:
        con.close()


def _args(command: str, spec: str, db: Path, tmp: Path) -> list[str]:
    if command == "sweep":
        grid = tmp / "g.toml"
        grid.write_text(SWEEP.format(extra=f'tokenizer = "{spec}"\n'))
        return ["sweep", str(grid), "--db", str(db), "--executor", "serial", "--out", str(tmp / "out")]
    if command == "check":
        base, cand = tmp / "b.toml", tmp / "c.toml"
        base.write_text(POLICY.format(extra=f'tokenizer = "{spec}"\n'))
        cand.write_text(POLICY.format(extra=""))
        return ["check", str(base), str(cand), "--db", str(db)]
    if command == "tune":
        return [
            "tune",
            "-t",
            spec,
            "--window",
            "32768",
            "--reserve",
            "4096",
            "--db",
            str(db),
            "--out",
            str(tmp / "tune"),
            "--executor",
            "serial",
        ]
    return [command, "-t", spec, "--db", str(db)]


@pytest.mark.parametrize("command", ["simulate", "sweep", "tune", "check", "fidelity", "report"])
@pytest.mark.parametrize("spec", ["nonsense", "claude"])
def test_unknown_tokenizer_exits_2_listing_built_ins(command, spec, db, tmp_path, monkeypatch, capsys):
    before = counted_ids(db)
    code, out, err = replay_main(monkeypatch, capsys, *_args(command, spec, db, tmp_path))
    assert code == 2, (out, err)
    assert f"tokenizer {spec!r}: no such file or built-in" in err
    assert "o200k" in err and "claude-legacy" in err and "replay tokenizers" in err
    assert counted_ids(db) == before  # nothing was simulated or counted on a guess


def test_missing_file_exits_2(db, tmp_path, monkeypatch, capsys):
    code, _, err = replay_main(monkeypatch, capsys, "simulate", "-t", str(tmp_path / "gone.json"), "--db", str(db))
    assert code == 2 and "no such file or built-in" in err


def test_bare_name_on_simulate_counts_and_is_real(db, monkeypatch, capsys):
    name_id = builtins.lookup("claude-legacy")
    code, out, err = replay_main(
        monkeypatch, capsys, "simulate", "-t", "claude-legacy", "--db", str(db), "--format", "json"
    )
    assert code == 0, err
    rows = json.loads(out[out.index("[") : out.rindex("]") + 1])
    sources = {r["token_source"] for r in rows}
    assert len(sources) == 1 and next(iter(sources)).startswith("real:claude-legacy:"), sources
    tid = next(iter(sources)).removeprefix("real:")
    assert tid in counted_ids(db)
    con = duckdb.connect(str(db), read_only=True)
    stored = {r[0] for r in con.execute("SELECT DISTINCT tokenizer_id FROM simulations").fetchall()}
    con.close()
    assert stored == {tid}  # the row names the vocabulary, not the bare name
    # The same file by path is the same tokenizer: same id, nothing counted again.
    code, out, _ = replay_main(
        monkeypatch, capsys, "simulate", "-t", str(name_id.path()), "--db", str(db), "--format", "json", "--no-store"
    )
    assert code == 0 and json.loads(out[out.index("[") : out.rindex("]") + 1])[0]["token_source"] == f"real:{tid}"


def test_no_tokenizer_is_labelled_estimate(db, monkeypatch, capsys):
    code, out, _ = replay_main(monkeypatch, capsys, "simulate", "--db", str(db), "--no-store", "--format", "json")
    assert code == 0
    assert {r["token_source"] for r in json.loads(out[out.index("[") : out.rindex("]") + 1])} == {"estimate:chars/4"}


def test_sweep_by_name_and_by_path_is_one_sweep(db, tmp_path, monkeypatch, capsys):
    path = builtins.lookup("o200k").path()
    code, out, err = replay_main(monkeypatch, capsys, *_args("sweep", "o200k", db, tmp_path))
    assert code == 0, err
    first = out.split("sweep ", 1)[1].split(":", 1)[0]
    code, out, err = replay_main(monkeypatch, capsys, *_args("sweep", str(path), db, tmp_path))
    assert code == 0, err
    assert out.split("sweep ", 1)[1].split(":", 1)[0] == first and "1 already done, 0 computed" in " ".join(out.split())
    con = duckdb.connect(str(db), read_only=True)
    sources = {
        r[0]
        for r in con.execute("SELECT DISTINCT token_source FROM sweep_results WHERE sweep_id = ?", [first]).fetchall()
    }
    con.close()
    assert sources == {f"real:{next(i for i in counted_ids(db) if i.startswith('o200k:'))}"}


def test_tokenizers_lists_package_version_licence_and_id(monkeypatch, capsys):
    from replay.tokens import load_tokenizer

    code, out, _ = replay_main(monkeypatch, capsys, "tokenizers", "--format", "json")
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["o200k"]["package"] == "litellm" and rows["o200k"]["licence"] == "MIT" and rows["o200k"]["version"]
    assert rows["o200k"]["tokenizer_id"] == load_tokenizer("o200k").tokenizer_id
    assert rows["qwen"]["package"] == "dashscope" and rows["llama3"]["vocabulary_licence"].startswith("Llama 3")
    assert next(r for r in rows.values() if r["alias"] == "tekken")["name"].startswith("tekken_")
    code, out, _ = replay_main(monkeypatch, capsys, "tokenizers")
    assert code == 0 and all(name in out for name in ("o200k", "cl100k", "deepseek-v3", "llama3", "claude-legacy"))


def test_old_tokenizer_id_option_goes_through_the_resolver(db, monkeypatch, capsys):
    code, _, err = replay_main(
        monkeypatch,
        capsys,
        "simulate",
        "--tokenizer-id",
        "claude-legacy",
        "--db",
        str(db),
        "--no-store",
        "--format",
        "json",
    )
    assert code == 0, err
    code, _, err = replay_main(monkeypatch, capsys, "simulate", "--tokenizer-id", "nonsense", "--db", str(db))
    assert code == 2 and "no such file or built-in" in err


def test_check_refuses_two_different_tokenizers(db, tmp_path, monkeypatch, capsys):
    base, cand = tmp_path / "b.toml", tmp_path / "c.toml"
    base.write_text(POLICY.format(extra='tokenizer = "o200k"\n'))
    cand.write_text(POLICY.format(extra='tokenizer = "claude-legacy"\n'))
    code, _, err = replay_main(monkeypatch, capsys, "check", str(base), str(cand), "--db", str(db))
    assert code == 2 and "one token count" in err
    code, out, err = replay_main(monkeypatch, capsys, "check", str(base), str(cand), "--db", str(db), "-t", "o200k")
    assert code == 0, err


def test_tokens_json_parses_with_numbers(db, monkeypatch, capsys):
    code, out, err = replay_main(monkeypatch, capsys, "tokens", "-t", "o200k", "--db", str(db), "--format", "json")
    assert code == 0, err
    rows = json.loads(out)
    assert rows and all(isinstance(r["tokens"], int) and isinstance(r["chars"], int) for r in rows)
    assert "o200k:" in err  # the counting note goes to stderr, so stdout stays JSON


@pytest.mark.parametrize("command", ["tokens", "tune"])
def test_an_empty_tokenizer_is_an_error_not_a_traceback(command, db, monkeypatch, capsys):
    """`-t ""` names no tokenizer: these commands need one (they crashed on None before)."""
    args = [command, "-t", "", "--db", str(db)] + (
        ["--policy", "last_n", "--window", "130000", "--reserve", "0"] if command == "tune" else []
    )
    code, _, err = replay_main(monkeypatch, capsys, *args)
    assert code == 2 and "names no tokenizer" in err and "o200k" in err
