"""The one way into the compiled driver's parameters: a registered policy that the generated dispatch does not run
(or runs under another code: dispatch.py is stale) is refused, never simulated as the full history."""

from __future__ import annotations

import numpy as np

from replay.errors import ReplayError
from replay.policies import Budget, CompiledPolicy, registry
from replay.policies.dispatch import DISPATCHED
from replay.policies.generate import COMMAND, TARGET


def kernel_params(policy: CompiledPolicy, budget: Budget) -> np.ndarray:
    """``policy.params(budget)`` once the generated dispatch is known to run this policy under its code."""
    registry()  # gives every registered class its code
    if DISPATCHED.get(policy.name) != policy.code or policy.code < 0:
        raise ReplayError(
            f"policy {policy.name} (code {policy.code}) is registered but {TARGET} dispatches "
            f"{'code ' + str(DISPATCHED[policy.name]) if policy.name in DISPATCHED else 'no such policy'}: "
            f"the file is stale; run `{COMMAND}`"
        )
    return policy.params(budget)
