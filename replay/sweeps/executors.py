"""Where sweep points run: serially, on a local process pool (all cores) or on Ray.

Every executor gets the run arrays once per worker and yields (point_id, run rows) as points finish: the rows as
plain columns (numpy arrays and lists) from the compiled kernels, or as a list of row dicts from the reference
path; the runner turns a batch of them into one frame. Workers never build frames (no polars in a worker).
"""

from __future__ import annotations

import os
import signal
import traceback
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from itertools import chain, islice
from typing import Any

from replay.errors import ReplayError
from replay.metrics.prices import DEFAULT_PRICING, Pricing
from replay.simulator import kernels
from replay.simulator.arrays import RunArrays
from replay.sweeps.adapter import config_json, evaluate_point, resolve

Task = tuple[str, dict[str, Any]]
Rows = dict[str, Any] | list[dict[str, Any]]  # kernels.point_columns, or reference rows
Result = tuple[str, Rows]


@dataclass(frozen=True)
class Context:
    """What every worker needs besides the point: the runs and the fixed sweep settings."""

    sweep_id: str
    policy: str
    cache: str
    session: str
    runs: tuple[RunArrays, ...]
    pricing: Pricing = DEFAULT_PRICING

    @cached_property
    def packed(self) -> kernels.PackedRuns:
        """The runs packed for the compiled kernels, built once per worker."""
        return kernels.pack(self.runs)


def point_rows(ctx: Context, task: Task) -> Result:
    """All runs under one point: one row per run with param_ columns, metrics and the effective config."""
    pid, params = task
    base = {"sweep_id": ctx.sweep_id, "point_id": pid, "session": ctx.session,
            **{f"param_{k}": v for k, v in params.items()}}
    try:
        point = resolve(ctx.policy, params, ctx.cache, ctx.pricing)
    except ReplayError as exc:
        return pid, [{**base, "run_id": r.run_id, "error": str(exc)} for r in ctx.runs]
    base["config"] = config_json(point)
    try:
        fast = kernels.point_columns(ctx.packed, point, {**base, "error": None})
    except (Exception, SystemExit):  # noqa: BLE001 - the reference path below records the error per run
        fast = None
    if fast is not None:
        return pid, fast
    rows = []
    for run in ctx.runs:
        try:
            rows.append({**base, "run_id": run.run_id, "error": None, **evaluate_point(run, point)})
        except SystemExit as exc:  # a policy calling sys.exit must not end the sweep (or a worker) silently
            rows.append({**base, "run_id": run.run_id,
                         "error": f"policy {ctx.policy} called sys.exit({exc.code!r}) on this run"})
        except Exception as exc:  # noqa: BLE001 - recorded with the point, never silently dropped
            rows.append({**base, "run_id": run.run_id, "error": f"{type(exc).__name__}: {exc}"[:2000] + "\n"
                         + traceback.format_exc(limit=3)[-1000:]})
    return pid, rows


_CTX: Context | None = None


def _init(ctx: Context) -> None:
    global _CTX
    _CTX = ctx
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle (one line, finished points kept)


def _work(task: Task) -> Result:
    assert _CTX is not None, "worker not initialised"
    return point_rows(_CTX, task)


def run_serial(ctx: Context, tasks: Iterable[Task], workers: int = 1) -> Iterator[Result]:
    for task in tasks:
        yield point_rows(ctx, task)


WINDOW = 64  # points per worker handed to the pool at a time: the tasks and results in flight stay bounded


def run_pool(ctx: Context, tasks: Iterable[Task], workers: int = 0) -> Iterator[Result]:
    """A process pool over all cores (or ``workers``); runs sent once per worker by the initializer. ``tasks`` are
    consumed a window at a time (the next window queued behind the current one, so no worker waits), never all."""
    import multiprocessing as mp

    n = workers or os.cpu_count() or 1
    tasks = iter(tasks)
    first = list(islice(tasks, WINDOW * n))
    if n <= 1 or len(first) <= 1:
        yield from run_serial(ctx, chain(first, tasks))
        return
    kernels.warm_up(ctx.policy)  # compile (or load from the on-disk cache) once, before any worker starts
    chunks = max(1, min(16, len(first) // (8 * n)))
    # forkserver, never fork: a fork of a parent whose polars/numba/DuckDB threads run deadlocked workers and
    # crashed one in garbage collection; the server imports the package once and forks from one thread
    os.environ.setdefault("POLARS_MAX_THREADS", "1")
    method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    context = mp.get_context(method)
    if method == "forkserver":
        context.set_forkserver_preload([__name__])  # import the package once, in the server, not per worker
    with context.Pool(min(n, len(first)), initializer=_init, initargs=(ctx,)) as pool:
        windows = (pool.imap_unordered(_work, w, chunksize=chunks) for w in _windows(chain(first, tasks), len(first)))
        current = next(windows, None)
        while current is not None:
            following = next(windows, None)  # queued now, so workers go on while the current window's last finish
            yield from current
            current = following


def _windows(tasks: Iterator[Task], size: int) -> Iterator[list[Task]]:
    while window := list(islice(tasks, size)):
        yield window


_RAY_CONTEXT: dict[str, Context] = {}  # in a Ray worker: the context of the sweep it works for, fetched once


def _ray_point(session: str, holder: list, task: Task) -> Result:
    """One point on a Ray worker. The context comes as a reference inside a list (so Ray does not fetch it for
    every task) and is fetched and unpacked once per worker process and sweep."""
    ctx = _RAY_CONTEXT.get(session)
    if ctx is None:
        import ray

        _RAY_CONTEXT.clear()
        ctx = _RAY_CONTEXT[session] = ray.get(holder[0])
    return point_rows(ctx, task)


def _ray_start(ray: Any, workers: int, local_mode: bool) -> None:
    """Join the cluster at RAY_ADDRESS (``auto``: the one `ray start` runs on this machine), else start a local one
    with ``workers`` CPUs (all cores when 0)."""
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "ignore_reinit_error": True}
    address = os.environ.get("RAY_ADDRESS")
    try:
        if address:  # a running cluster brings its own CPUs: num_cpus may not be given when joining
            ray.init(address=address, **kwargs)
            return
        if workers:
            kwargs["num_cpus"] = workers
        try:
            ray.init(local_mode=True, **kwargs) if local_mode else ray.init(**kwargs)
        except RuntimeError as exc:  # Ray >= 2.4x dropped local mode: use a one-node local cluster instead
            if "local_mode" not in str(exc):
                raise
            ray.init(**{**kwargs, "num_cpus": workers or 1})
    except ConnectionError as exc:
        raise ReplayError(f"--executor ray: no Ray cluster at RAY_ADDRESS={address} ({exc}); start one with "
                          "`ray start --head` or unset RAY_ADDRESS to start a local one") from exc
    except Exception as exc:
        if "timed out during startup" not in str(exc):
            raise
        raise ReplayError("--executor ray: the local Ray node did not start within Ray's 30 s (a busy machine); "
                          "start it once with `ray start --head --num-cpus N` and run with RAY_ADDRESS=auto") from exc


def run_ray(ctx: Context, tasks: Iterable[Task], workers: int = 0, local_mode: bool | None = None
            ) -> Iterator[Result]:
    """The same on Ray: the context goes to the object store once and each worker fetches it once; points are
    submitted as workers free up (at most two per cluster CPU in flight), so a grid of any size streams through.

    Joins the cluster at RAY_ADDRESS when set (`replay sweep --ray-address`), else starts a local one with
    ``workers`` CPUs; REPLAY_RAY_LOCAL=1 asks for Ray's local mode (tests; a one-CPU local cluster on Ray
    versions without it)."""
    local_mode = os.environ.get("REPLAY_RAY_LOCAL") == "1" if local_mode is None else local_mode
    try:
        import ray
    except ImportError as exc:
        raise ReplayError("--executor ray needs Ray: pip install 'replay[ray]'") from exc
    started = not ray.is_initialized()
    if started:
        _ray_start(ray, workers, local_mode)
    try:
        holder = [ray.put(ctx)]
        remote = ray.remote(_ray_point)
        limit = max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
        todo = iter(tasks)
        pending = [remote.remote(ctx.session, holder, t) for t in islice(todo, limit)]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            pending.extend(remote.remote(ctx.session, holder, t) for t in islice(todo, 1))
            yield ray.get(done[0])
    finally:
        if started:
            ray.shutdown()


EXECUTORS = {"serial": run_serial, "local": run_pool, "ray": run_ray}


def get_executor(name: str):
    if name not in EXECUTORS:
        raise ReplayError(f"--executor {name}: choose one of {', '.join(EXECUTORS)}")
    return EXECUTORS[name]
