"""The Ray executor on a local two-worker cluster, in shards of runs, gives the same rows as the process pool."""

from __future__ import annotations

import pytest

from replay.sweeps import from_dict, run_sweep
from replay.sweeps.results import sweep_frame

GRID = {"protect": [4000, 20000], "summary_at": [30000, 50000], "reclaim_floor": [0.0625, 0.25]}
PER_SWEEP = {"sweep_id", "session", "name", "computed_at"}  # the sweep and when: not the result


def differing(a, b) -> list[str]:
    """The result columns in which two sweeps' rows differ (rows matched by point and run)."""
    key = ["point_id", "run_id"]
    a, b = a.sort(key), b.sort(key)
    return [c for c in sorted(set(a.columns) - PER_SWEEP) if not a[c].equals(b[c])]


def spec(name: str) -> object:
    return from_dict(
        {
            "sweep": {"policy": "seed_a", "runs": "%", "batch": 3, "name": name},
            "fixed": {"window": 60000, "reserve": 8000},
            "grid": GRID,
        }
    )


@pytest.fixture()
def ray_cluster():
    """A local Ray cluster of 2 worker CPUs, as `ray start --head --num-cpus 2` would give."""
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install 'replay[ray]')")
    for attempt in range(3):
        try:
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
            break
        except Exception as exc:  # noqa: BLE001 - Ray's own startup timeout on a loaded machine
            if "timed out during startup" not in str(exc):
                raise
            if attempt == 2:
                pytest.skip(f"Ray's local node did not start within its 30 s, 3 times: {exc}")
    yield ray
    ray.shutdown()


SHARD_ITEMS = 500  # the sample's 7 runs in 5 shards: each worker replaces its shard 4 times


def test_ray_two_workers_equals_pool(sample_db, ray_cluster) -> None:
    ray_out = run_sweep(sample_db, spec("ray"), executor="ray", progress=False, shard_items=SHARD_ITEMS)
    pool_out = run_sweep(sample_db, spec("pool"), executor="local", workers=2, progress=False)
    assert ray_cluster.cluster_resources()["CPU"] == 2
    assert ray_out.points == pool_out.points == 8 and ray_out.errors == pool_out.errors == 0
    a, b = sweep_frame(sample_db, ray_out.sweep_id), sweep_frame(sample_db, pool_out.sweep_id)
    assert len(a) == len(b) == 8 * ray_out.runs
    assert differing(a, b) == []


class InProcessRay:
    """Ray's API as the Ray executor uses it, run in this process (for machines where a Ray node cannot start):
    checks the streaming (at most two points per CPU in flight) and that a shard is fetched once per worker."""

    def __init__(self, cpus: int) -> None:
        self.cpus, self.store, self.in_flight, self.peak, self.gets = cpus, {}, 0, 0, 0

    def is_initialized(self) -> bool:
        return True

    def cluster_resources(self) -> dict:
        return {"CPU": self.cpus}

    def put(self, value):
        self.store[id(value)] = value
        return id(value)

    def get(self, ref):
        if isinstance(ref, int):
            self.gets += 1
            return self.store[ref]
        return ref()

    def remote(self, fn):
        ray = self

        class Remote:
            @staticmethod
            def remote(*args):
                ray.in_flight += 1
                ray.peak = max(ray.peak, ray.in_flight)
                return lambda: fn(*args)

        return Remote

    def wait(self, pending, num_returns=1):
        self.in_flight -= 1
        return pending[:1], pending[1:]


def test_ray_path_streams_and_fetches_context_once(sample_db, monkeypatch) -> None:
    import sys

    fake = InProcessRay(cpus=2)
    monkeypatch.setitem(sys.modules, "ray", fake)
    ray_out = run_sweep(sample_db, spec("ray-inprocess"), executor="ray", progress=False, shard_items=SHARD_ITEMS)
    pool_out = run_sweep(sample_db, spec("pool-inprocess"), executor="serial", progress=False)
    assert fake.peak <= 4 and fake.gets == 5  # once per shard (one worker, this process)
    a, b = sweep_frame(sample_db, ray_out.sweep_id), sweep_frame(sample_db, pool_out.sweep_id)
    assert len(a) == len(b) and differing(a, b) == []
