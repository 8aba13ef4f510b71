"""The README tested like code: every command in its code blocks runs on the bundled sample in a temporary folder,
in order, and each claim it makes is checked here (the set-up and test commands, which cannot run inside the suite,
are checked against .ci/run and pyproject.toml instead)."""

from __future__ import annotations

import re
import shlex
import shutil
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cli import app

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
SETUP = ["python -m venv .venv && . .venv/bin/activate", "pip install --no-compile -e . && replay demo"]
TEST_COMMAND = 'pip install --no-compile -e ".[test]" && python -m pytest'


def blocks() -> list[list[str]]:
    """Each ```sh block's commands, comments cut."""
    out = []
    for body in re.findall(r"```sh\n(.*?)```", README, re.S):
        out.append([line.split("  #")[0].strip() for line in body.splitlines() if line.strip()])
    return out


def test_the_readme_is_an_entry_point():
    words = len(re.sub(r"```.*?```", "", README, flags=re.S).split())
    assert words < 700, words
    intro = README.split("\n## ")[0].strip().splitlines()[2:]
    assert len(intro) == 3, intro  # what it is, in three lines
    for link in re.findall(r"\]\(([^)#]+)\)", README):
        assert (ROOT / link).exists(), link


def test_setup_and_test_commands_are_what_ci_runs():
    setup, test, *_ = blocks()
    assert setup == SETUP and test == [TEST_COMMAND]
    assert TEST_COMMAND in (ROOT / ".ci" / "run").read_text()  # .ci/run calls exactly the README's test command
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    named = re.findall(r"`([a-z-]+)`", README.split("## Extras")[1].split("## More")[0])
    for extra in ("claude-legacy", "vocab", "qwen", "llama", "ray", "notebooks"):
        assert extra in named and extra in extras, extra
    assert "jupyterlab" not in " ".join(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])


def _run(args: list[str], env: dict[str, str] | None = None):
    res = CliRunner().invoke(app, args, env={"COLUMNS": "80", **(env or {})})
    return res


def test_every_readme_command_runs_on_the_sample(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, demo_run):
    demo, demo_out = demo_run  # the set-up's second command, run once per session (tests/conftest.py)
    assert demo.exit_code == 0, demo.output
    assert (demo_out / "report.md").exists()
    monkeypatch.chdir(tmp_path)
    shutil.copytree(ROOT / "data", tmp_path / "data")
    assert len(list((tmp_path / "data" / "sample").glob("*.jsonl"))) == 7  # "Seven synthetic sessions"
    home = tmp_path / "home"
    shutil.copytree(ROOT / "data" / "sample", home / ".claude" / "projects" / "sample")
    env = {"HOME": str(home)}
    _, _, tour, own = blocks()
    for line in [*tour, *own]:
        argv = shlex.split(line)
        assert argv[0] == "replay", line
        res = _run(argv[1:], env)
        name = argv[1]
        if name == "check":  # exits 1 exactly when the candidate regresses a gated metric
            assert res.exit_code in (0, 1), res.output
            assert ("regression" in res.output) == (res.exit_code == 1), res.output
            continue
        assert res.exit_code == 0, f"{line}\n{res.output}"
        if name == "ingest" and len(argv) == 2:  # discovery: prints what it found where
            assert "claude-code" in res.output and ".claude/projects" in res.output, res.output
        if name == "tune":
            last = " ".join(res.output.split()).rsplit("ANSWER:", 1)
            assert len(last) == 2 and "recommended.toml" in last[1], res.output
    assert (tmp_path / "replay.duckdb").exists()
    for name in ("recommended.toml", "defaults.toml", "front.png"):
        assert (tmp_path / "out" / "tune" / name).exists(), name
    assert (tmp_path / "out" / "report" / "report.md").exists() and (
        tmp_path / "out" / "report" / "report.html"
    ).exists()
    assert "--watch" in _run(["ingest", "--help"], {"COLUMNS": "200"}).output
