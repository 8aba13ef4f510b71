"""Simulation: run arrays in, per-request and per-run counters out."""

from replay.simulator.arrays import RunArrays, build
from replay.simulator.caches import CACHE_MODELS, make_cache
from replay.simulator.run import REQUEST_COLUMNS, simulate_run

__all__ = ["CACHE_MODELS", "REQUEST_COLUMNS", "RunArrays", "build", "make_cache", "simulate_run"]
