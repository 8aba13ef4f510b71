"""The background compile child (``compile_in_background``): compiles the per-request loop of the policies named on
its command line into numba's on-disk cache, importing only what compiling needs (the CLI's imports would add about
a second to the first command that waits for it)."""

from __future__ import annotations

import sys

from replay.policies import Budget, make_policy
from replay.simulator.kernels.trace import trace_run
from replay.synth.long_run import long_run


def warm_per_request(names: list[str]) -> None:
    """Run each policy's per-request loop once on a small synthetic run, which compiles and caches it."""
    run = long_run(2)
    for name in names:
        trace_run(run, make_policy(name), Budget(200_000, 0))


if __name__ == "__main__":
    warm_per_request(sys.argv[1:])
