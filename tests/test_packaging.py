"""The wheel carries the demo sample and the examples, and replay finds them when installed outside a checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "replay", "data/sample", "examples")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """`pip wheel . --no-deps` from a copy of the sources (the checkout stays clean of build/)."""
    src = tmp_path_factory.mktemp("src")
    for rel in SOURCES:
        if (ROOT / rel).is_dir():
            shutil.copytree(ROOT / rel, src / rel, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy(ROOT / rel, src / rel)
    out = tmp_path_factory.mktemp("w")
    res = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(src), "-w", str(out), "--no-deps", "-q"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr
    return next(out.glob("replay-*.whl"))


def test_wheel_lists_the_sample_and_the_examples(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for f in (ROOT / "data" / "sample").iterdir():
        assert f"replay/_data/sample/{f.name}" in names
    for f in (ROOT / "examples").rglob("*"):
        if f.is_file() and "__pycache__" not in f.parts:  # the tests import examples/policies
            assert f"replay/_data/examples/{f.relative_to(ROOT / 'examples').as_posix()}" in names
    assert "replay/cli/bundled.py" in names and "replay/cli/report_cmds.py" in names
    assert "replay/reports/templates/transcript.html.j2" in names  # show --transcript renders it
    assert "replay/policies/inspect_models.json" in names  # inspect_ai's model windows (fidelity's preset)


def test_installed_replay_finds_its_sample_outside_the_checkout(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code = (
        "import replay, replay.cli.bundled as b; print(replay.__file__); print(b.bundled('sample')); "
        "print(b.bundled('examples'))"
    )
    res = subprocess.run(
        [sys.executable, "-c", code],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(site)},
    )
    assert res.returncode == 0, res.stderr
    module, sample, examples = (Path(line) for line in res.stdout.split())
    assert module.is_relative_to(site)  # the wheel's copy, not the checkout
    assert sample == site / "replay" / "_data" / "sample" and len(list(sample.glob("*.jsonl"))) == 7
    assert (examples / "check" / "baseline.toml").is_file()


def test_an_unwritable_cache_folder_falls_back_with_a_note(tmp_path):
    """A read-only home (here: a cache path under a file) must not stop replay: the compile cache moves to the
    temporary folder and says so once."""
    import tempfile

    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"} | {"XDG_CACHE_HOME": "/dev/null/cache"}
    out = subprocess.run(
        [sys.executable, "-c", "import replay.jit, numba; print(numba.config.CACHE_DIR)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "cannot be written" in out.stderr and out.stdout.strip().startswith(tempfile.gettempdir())


def test_core_install_is_lean():
    """JupyterLab and the notebook kernel are an extra: the command line neither installs nor imports them."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    notebook_only = ("jupyterlab", "ipykernel", "nbclient", "nbformat", "ipython")
    core = [d.lower() for d in project["dependencies"]]
    assert not [d for d in core if d.startswith(notebook_only)], core
    extras = project["optional-dependencies"]
    assert any(d.startswith("jupyterlab") for d in extras["notebooks"])
    for name in ("nbclient", "nbformat", "ipykernel"):  # tests/test_notebook.py runs the notebook
        assert any(d.startswith(name) for d in extras["test"]), name
    imports = [
        path
        for path in (ROOT / "replay").rglob("*.py")
        for line in path.read_text().splitlines()
        if line.lstrip().startswith(("import ", "from ")) and line.split()[1].split(".")[0].lower() in notebook_only
    ]
    assert not imports, imports


def test_every_command_works_with_no_writable_home(tmp_path, sample_db_path):
    """HOME and XDG_CACHE_HOME where nothing can be written (under a regular file: even root cannot): numba's cache
    falls back with a note and each command does its work (every command failed at import before)."""
    (tmp_path / "a-file").write_text("")
    home = tmp_path / "a-file" / "home"
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env |= {"HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")}
    db = tmp_path / "s.duckdb"
    db.write_bytes(sample_db_path.read_bytes())
    sample = ROOT / "data" / "sample" / "sample-short-1.jsonl"
    commands = (
        ["policies"],
        ["runs", "--db", str(db)],
        ["simulate", "-p", "last_n", "--db", str(db), "--no-store"],
        ["ingest", str(sample), "--db", str(tmp_path / "new.duckdb")],
    )
    started = [  # independent of one another: run side by side (each spends seconds importing)
        subprocess.Popen(
            [sys.executable, "-m", "replay", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
        for args in commands
    ]
    try:
        for args, proc in zip(commands, started, strict=True):
            _, stderr = proc.communicate(timeout=600)
            assert proc.returncode == 0 and "Traceback" not in stderr, (args, stderr)
            assert "cannot be written; compiled code is cached in" in stderr, (args, stderr)
    finally:
        for proc in started:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
