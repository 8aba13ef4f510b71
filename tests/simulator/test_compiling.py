"""The compiled loop is compiled per policy: the generated tables name each policy's kernel, the first call of a
policy's loop says it compiles, and `replay warm` compiles ahead of use."""

from __future__ import annotations

import numba
import pytest
from typer.testing import CliRunner

from replay.cli import app
from replay.policies import CompiledPolicy, registry
from replay.policies.dispatch import DECIDES, SETUPS
from replay.simulator.kernels import compiling


def test_tables_hold_each_compiled_policy_under_its_code():
    for cls in registry().values():
        if not issubclass(cls, CompiledPolicy) or cls.kernel_module() is None:
            continue
        assert DECIDES[cls.code].py_func.__module__ == cls.kernel_module(), cls.name
        if cls.code in SETUPS:
            assert SETUPS[cls.code].py_func.__module__ == cls.kernel_module(), cls.name
    assert 0 not in DECIDES  # full has no kernel: it sends everything


class FakeKernel:
    """Stands for a numba dispatcher: compiling it by signature gives an entry point that records its calls."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.overloads: dict = {}
        self.signatures: list[tuple] = []

        def fake_entry(code, *args):
            return code

        self.py_func = fake_entry

    def compile(self, sig):
        self.signatures.append(sig)
        return self.entry_point

    def entry_point(self, code, *args):
        self.calls.append((code, *args))
        return code


def test_first_call_says_it_compiles_then_never_again(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(compiling, "_READY", set())
    kernel = FakeKernel()
    assert compiling.call_policy_kernel(kernel, 3, "seed_a", 1.0) == 3
    err = capsys.readouterr().err
    assert "compiling seed_a (once per install, ~30 s on 2 idle cores)" in err and "compiled seed_a in" in err
    assert compiling.marker("fake_entry", 3).exists()
    monkeypatch.setattr(compiling, "_READY", set())
    compiling.marker("fake_entry", 4).parent.joinpath("seconds-fake_entry").write_text("71.6")
    compiling.call_policy_kernel(kernel, 4, "masking", 1.0)  # the next compile expects what the last one took
    assert "compiling masking (once per install, ~72 s here last time)" in capsys.readouterr().err
    compiling.call_policy_kernel(kernel, 3, "seed_a", 1.0)
    monkeypatch.setattr(compiling, "_READY", set())  # a new process: the marker file says it is compiled
    compiling.call_policy_kernel(kernel, 3, "seed_a", 1.0)
    assert capsys.readouterr().err == ""
    assert len(kernel.calls) == 4
    # the policy code is given as a compile-time constant: numba never types the loop with a plain integer first
    assert all(
        sig[0] == numba.types.literal(code) for sig, (code, *_) in zip(kernel.signatures, kernel.calls, strict=True)
    )


@pytest.mark.parametrize("name", ["masking", "examples.policies.keep_recent:KeepRecent"])
def test_warm_compiles_the_named_policy(name):
    """A built-in's loops, or the one loop every policy written in Python shares."""
    res = CliRunner().invoke(app, ["warm", name])
    assert res.exit_code == 0, res.output
    assert f"{name}: compiled and cached" in res.output


def test_warm_refuses_unknown_policy():
    res = CliRunner().invoke(app, ["warm", "no_such_policy"])
    assert res.exit_code != 0


def test_compile_in_background_leaves_the_loop_cached(tmp_path, monkeypatch):
    """The demo compiles the report's other policies in a child process while it works on seed_a: the child
    writes numba's cache and the markers this process reads, and nothing is started for a compiled loop."""
    from replay.policies import policy_class

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(compiling, "_READY", set())
    monkeypatch.setattr(compiling.os, "cpu_count", lambda: 1)
    assert compiling.compile_in_background(["full"]) is None  # no spare core: this process compiles as it goes
    monkeypatch.setattr(compiling.os, "cpu_count", lambda: 2)
    child = compiling.compile_in_background(["full"])
    assert child is not None and child.wait(timeout=600) == 0
    assert compiling.is_ready("run_kernel", policy_class("full").code)
    assert compiling.compile_in_background(["full"]) is None


def test_a_policy_compiles_beside_the_fit_only_when_the_fit_compiles_too(tmp_path, monkeypatch):
    from replay.policies import policy_class

    started: list[list[str]] = []
    monkeypatch.setattr(compiling, "compile_in_background", started.append)
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(compiling, "_READY", set())
    compiling.compile_beside_the_fit("seed_a")  # nothing compiled: recorded's loop here, seed_a's in a child
    compiling.compile_beside_the_fit("recorded")  # the fit's own policy: one loop, compiled here
    compiling.marker("run_kernel", policy_class("recorded").code).parent.mkdir(parents=True)
    compiling.marker("run_kernel", policy_class("recorded").code).touch()
    compiling.compile_beside_the_fit("masking")  # the fit's loop is cached: masking's alone, compiled here
    assert started == [["seed_a"]]


def test_a_second_checkout_of_the_same_code_is_keyed_apart(tmp_path, monkeypatch):
    """numba finds a cached loop by its source file's path: another checkout of identical sources compiles again,
    so its markers (and cache folder) must not say it is compiled."""
    import shutil

    from replay import jit

    here = jit.source_hash()
    copy = tmp_path / "replay"
    for folder in jit.COMPILED_SOURCES:
        shutil.copytree(jit.PACKAGE / folder, copy / folder)
    monkeypatch.setattr(jit, "PACKAGE", copy)
    jit.source_hash.cache_clear()
    try:
        assert jit.source_hash() != here
    finally:
        monkeypatch.undo()
        jit.source_hash.cache_clear()
    assert jit.source_hash() == here
