"""The synthetic runs the simulator tests use live in the importable test kit (replay.testing.runs)."""

from replay.testing.runs import SPANS, synth_run

__all__ = ["SPANS", "synth_run"]
