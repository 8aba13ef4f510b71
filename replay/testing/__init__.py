"""The policy author's test kit: the conformance rules every policy passes (:class:`PolicyConformance`,
:func:`check_policy`) and synthetic runs to try a policy on without a corpus (:func:`synth_run`). Needs pytest."""

from replay.testing.conformance import PolicyConformance, check_policy
from replay.testing.runs import synth_run

__all__ = ["PolicyConformance", "check_policy", "synth_run"]
