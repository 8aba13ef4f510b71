"""The source is formatted, lint-clean and type-checked: the ruff and mypy runs a contributor makes, inside the test
command."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("ruff")
    command = [exe] if exe else [sys.executable, "-m", "ruff"]
    return subprocess.run([*command, *args], cwd=ROOT, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("args", [("format", "--check", "."), ("check", ".")], ids=["format", "lint"])
def test_ruff_passes(args: tuple[str, ...]) -> None:
    result = _ruff(*args)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_passes() -> None:
    """``mypy`` over replay/ (settings in pyproject.toml) reports no error."""
    exe = shutil.which("mypy")
    command = [exe] if exe else [sys.executable, "-m", "mypy"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
