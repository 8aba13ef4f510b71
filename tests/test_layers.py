"""The package's layers (pyproject's import-linter contract) hold, and no import hides inside a function to dodge
a circle: each layer imports only the ones below it, so it can be read and tested without those above."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("lint-imports")
    if exe is None:
        pytest.fail("lint-imports (import-linter) is not installed: pip install -e '.[test]'")
    env = {**os.environ, "PYTHONPATH": str(cwd)}  # the tree under test, not whichever replay is installed
    return subprocess.run([exe, "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True, check=False)


def test_layers_contract_is_kept() -> None:
    result = _lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_contract_catches_an_import_from_below(tmp_path: Path) -> None:
    """The same contract on a copy whose record types import the CLI: broken, and it says where."""
    shutil.copytree(ROOT / "replay", tmp_path / "replay", ignore=shutil.ignore_patterns("__pycache__", "_data"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    model = tmp_path / "replay" / "model.py"
    model.write_text(model.read_text() + "\nimport replay.cli  # noqa\n")
    result = _lint_imports(tmp_path)
    assert result.returncode != 0 and "replay.model -> replay.cli" in result.stdout, result.stdout


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(node: ast.AST, modules: set[str]) -> list[str]:
    """The replay modules an import statement names (``from pkg import module`` names the module)."""
    if isinstance(node, ast.Import):
        names = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
        names = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module for a in node.names]
    else:
        return []
    return [n for n in names if n in modules]


def _imports(root: Path) -> tuple[dict[str, Path], dict[str, set[str]], list[tuple[str, str, int]]]:
    """The package's files by module; per module its module-level imports of the package's modules (not those
    under TYPE_CHECKING); every import inside a function as (module, imported, line)."""
    files = {_module_name(p, root): p for p in (root / "replay").rglob("*.py")}
    modules = set(files)
    top: dict[str, set[str]] = {m: set() for m in modules}
    inner: list[tuple[str, str, int]] = []
    for module, path in files.items():
        for stmt in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(stmt, ast.If) and "TYPE_CHECKING" in ast.unparse(stmt.test):
                continue
            todo: list[tuple[ast.AST, bool]] = [(stmt, False)]
            while todo:
                node, in_function = todo.pop()
                for name in _imported(node, modules):
                    (inner.append((module, name, node.lineno)) if in_function else top[module].add(name))
                nested = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
                todo.extend((child, nested) for child in ast.iter_child_nodes(node))
    return files, top, inner


def _reaches(top: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, todo = set(), [start]
    while todo:
        module = todo.pop()
        if module == goal:
            return True
        if module not in seen:
            seen.add(module)
            todo.extend(top[module])
    return False


def _dodges(root: Path) -> list[str]:
    """Imports inside a function that, moved to the top, would close a circle of module-level imports."""
    files, top, inner = _imports(root)
    return [
        f"{files[m].relative_to(root)}:{line}: {m} imports {t} inside a function, and {t} reaches {m} through "
        "module-level imports: move what both need down a layer"
        for m, t, line in inner
        if t != m and _reaches(top, t, m)
    ]


def test_no_function_level_import_dodges_a_circle() -> None:
    dodges = _dodges(ROOT)
    assert not dodges, "\n".join(dodges)


def test_dodge_finder_sees_one(tmp_path: Path) -> None:
    """A circle through a third module, closed by an import inside a function; a type-only import is no circle."""
    package = tmp_path / "replay"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "low.py").write_text("def f():\n    from replay.high import g\n    return g\n")
    (package / "mid.py").write_text("import replay.low\n")
    (package / "high.py").write_text("from replay import mid\n\ndef g():\n    return mid\n")
    (package / "typed.py").write_text(
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from replay.high import g\n"
    )
    assert _dodges(tmp_path) == [
        "replay/low.py:2: replay.low imports replay.high inside a function, and replay.high reaches replay.low "
        "through module-level imports: move what both need down a layer"
    ]
