"""One policy's ``setup`` and ``decide`` inside the compiled loop, chosen while the loop is compiled.

The loop's entry points take the policy code as a compile-time constant (``numba.literally``), so numba compiles
(and caches) one loop per policy with only that policy's code in it: a command compiles what it runs, not every
policy. The tables are generated from the registry (``replay.policies.dispatch``); code ``PYTHON`` is every policy
written in Python, whose loop calls back into the policy object (``replay.policies.python_kernel``).
"""

from __future__ import annotations

from typing import Any, cast

from numba import types
from numba.core.errors import TypingError
from numba.extending import overload

from replay.policies import python_kernel
from replay.policies.dispatch import DECIDES, SETUPS


def setup(code, p, r, st):  # noqa: ARG001 - typed and compiled by the overload below
    """Policy ``code``'s setup (nothing for a policy without one); compiled code only."""
    raise NotImplementedError("replay.simulator.kernels.select.setup runs inside compiled code only")


def decide(code, p, r, st):  # noqa: ARG001
    """Policy ``code``'s decide (nothing for a policy without one); compiled code only."""
    raise NotImplementedError("replay.simulator.kernels.select.decide runs inside compiled code only")


def _pick(table: dict, code, what: str):
    if not isinstance(code, types.IntegerLiteral):
        raise TypingError(
            f"replay.simulator.kernels.select.{what}: the policy code must be a compile-time constant; "
            "call it from a function that calls numba.literally(code) first"
        )
    fn = table.get(code.literal_value)
    if code.literal_value == python_kernel.PYTHON:  # every policy written in Python: a call back into it
        fn = python_kernel.setup if what == "setup" else python_kernel.decide
    if fn is None:

        def nothing(code, p, r, st):
            return

        return nothing

    def call(code, p, r, st):
        fn(p, r, st)

    return call


@overload(setup, prefer_literal=True, inline="always")
def _setup(code, p, r, st):
    return _pick(SETUPS, code, "setup")


# decide runs before every request: its wrapper is a function of its own compiled without reference counting
# (``replay.jit.compiled``'s ``borrowed``). Inlined into the loop, as setup is, it copied the Run and the State, an
# incref and a decref of every array in them (some 45) around each call: most of a cheap decide's cost.
@overload(decide, prefer_literal=True, jit_options=cast(Any, {"_nrt": False}))  # numba's typed options omit _nrt
def _decide(code, p, r, st):
    return _pick(DECIDES, code, "decide")
