"""The policy author's examples (examples/policies/): the Python policy passes the conformance kit and runs through
`simulate`, `sweep` and `tune`; its compiled twin becomes a built-in by one new file plus one registration line, and
then matches the Python policy request by request."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from examples.policies.keep_recent import KeepRecent
from replay.cli import app
from replay.policies import PolicyBase, make_policy
from replay.sweeps.policy_file import load_policy_file
from replay.testing import PolicyConformance

ROOT = Path(__file__).resolve().parents[2]
PATH = "examples.policies.keep_recent:KeepRecent"


class TestKeepRecentConforms(PolicyConformance):
    @pytest.fixture
    def policy(self) -> PolicyBase:
        return KeepRecent()


def test_a_no_op_is_told_from_a_policy() -> None:
    """The kit's last rule fails a policy whose trigger never fires (the same as sending everything)."""
    from replay.testing.conformance import check_acts
    from replay.testing.runs import synth_run

    with pytest.raises(AssertionError, match="does nothing"):
        check_acts(make_policy(PATH, {"trigger": "1.0", "keep": "100000"}), synth_run(120, seed=3))


def _cli(*args: str) -> str:
    r = CliRunner().invoke(app, list(args))
    assert r.exit_code == 0, r.output
    return r.output


def test_python_example_through_simulate_sweep_and_tune(sample_store: Path, tmp_path: Path) -> None:
    db = str(sample_store)
    out = _cli("simulate", "-p", PATH, "--set", "keep=2", "--window", "32000", "--reserve", "4000", "--db", db)
    assert "keep_recent" in out
    grid = tmp_path / "grid.toml"
    grid.write_text(
        f'[sweep]\nname = "example"\npolicy = "{PATH}"\nmode = "grid"\nruns = "%"\n\n'
        "[fixed]\nwindow = 32000\nreserve = 4000\n\n[grid]\nkeep = [1, 4]\n",
        encoding="utf-8",
    )
    out = _cli("sweep", str(grid), "--db", db, "--executor", "serial", "--out", str(tmp_path / "sw"), "--format", "csv")
    header, *rows = [line for line in out.splitlines() if line.startswith(("keep,", "1.0,", "4.0,", "1,", "4,"))]
    assert header.startswith("keep,") and len(rows) == 2, out  # one row per point
    tuned = tmp_path / "tune"
    args = ["tune", "-t", "tekken", "--window", "32000", "--reserve", "4000", "--policy", PATH, "--db", db]
    out = " ".join(_cli(*args, "--out", str(tuned), "--points", "3", "--executor", "serial").split())
    assert f"replay tune: {PATH}" in out
    assert load_policy_file(tuned / "recommended.toml").name == PATH


SCRATCH_CHECK = textwrap.dedent(
    """
    import numpy as np
    from replay.policies import make_policy
    from replay.simulator.kernels.trace import views_of
    from replay.testing import check_policy, synth_run
    from replay.policies import Budget

    compiled = make_policy("keep_recent", {"keep": "3"})
    python = make_policy("examples.policies.keep_recent:KeepRecent", {"keep": "3"})
    check_policy(compiled)
    for seed in range(3):
        run = synth_run(80, seed=seed)
        a = views_of(run, compiled, Budget(60_000, 8_000)).views
        b = views_of(run, python, Budget(60_000, 8_000)).views
        assert [v.prompt_tokens for v in a] == [v.prompt_tokens for v in b], seed
        assert all((x.forms == y.forms).all() for x, y in zip(a, b)), seed
    print("compiled == python")
    """
)


def test_compiled_example_is_one_file_plus_registration() -> None:
    """In a scratch copy of the package: copy the file, add its module to POLICY_MODULES, regenerate; the compiled
    policy then passes the kit and gives the Python policy's views, request by request. The scratch folder is
    fixed and copies keep their times, so the compiled loop is reused from numba's cache after the first run."""
    tmp_path = Path(tempfile.gettempdir()) / f"replay-example-policy-{os.getuid()}"
    shutil.rmtree(tmp_path, ignore_errors=True)
    pkg = tmp_path / "replay"
    shutil.copytree(ROOT / "replay", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "examples" / "policies" / "keep_recent_compiled.py", pkg / "policies" / "keep_recent.py")
    init = pkg / "policies" / "__init__.py"
    text = init.read_text(encoding="utf-8")
    registered, n = re.subn(r"(POLICY_MODULES = \[\n(?:    \"\w+\",\n)*)\]", r'\1    "keep_recent",\n]', text)
    assert n == 1, "POLICY_MODULES not found in replay/policies/__init__.py"
    init.write_text(registered, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    stale = subprocess.run(
        [sys.executable, "-m", "replay.policies.generate", "--check"], cwd=tmp_path, env=env, capture_output=True
    )
    assert stale.returncode == 1 and b"stale" in stale.stderr  # registered, not yet dispatched
    refused = subprocess.run(
        [
            sys.executable,
            "-c",
            "from replay.testing import check_policy; from replay.policies import make_policy; "
            "check_policy(make_policy('keep_recent'))",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert refused.returncode != 0 and "registered but" in refused.stderr, refused.stderr[-2000:]
    subprocess.run([sys.executable, "-m", "replay.policies.generate"], cwd=tmp_path, env=env, check=True)
    done = subprocess.run(
        [sys.executable, "-c", SCRATCH_CHECK], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1500
    )
    assert done.returncode == 0 and "compiled == python" in done.stdout, done.stderr[-3000:]
