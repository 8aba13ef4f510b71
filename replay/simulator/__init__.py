"""Simulation: run arrays in, per-request and per-run counters out.

Entry points: ``replay.simulator.run.simulate_run`` (one run, raw counters), ``replay.simulator.load.load_run``,
``replay.simulator.caches.make_cache`` and ``replay.simulator.results.simulate_many``.
"""
