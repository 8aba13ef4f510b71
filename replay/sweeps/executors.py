"""Where sweep points run: serially, on a local process pool (all cores) or on Ray.

A sweep runs its shards of runs one after another on one executor (``map`` per shard); each worker gets a shard's
run arrays once and holds one shard at a time. ``map`` yields (point_id, run rows) as points finish: the rows as
plain columns (numpy arrays and lists) from the compiled kernels, or as a list of row dicts from the reference
path; the runner turns a batch of them into one frame. Workers never build frames (no polars in a worker).
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import tempfile
import traceback
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from itertools import chain, islice
from typing import Any

from replay.errors import ReplayError
from replay.metrics.prices import DEFAULT_PRICING, Pricing
from replay.policies import CompiledPolicy, policy_class
from replay.run_arrays import RunArrays
from replay.simulator.kernels.packed import PackedRuns, pack
from replay.sweeps.adapter import config_json, evaluate_point, resolve
from replay.sweeps.point_rows import point_columns, warm_up

Task = tuple[str, dict[str, Any]]
Rows = dict[str, Any] | list[dict[str, Any]]  # point_rows.point_columns, or reference rows
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
    def packed(self) -> PackedRuns:
        """The runs packed for the compiled kernels, built once per worker."""
        return pack(self.runs)

    @cached_property
    def requests(self) -> int:
        """Requests in the shard: what one point simulates."""
        return sum(r.n_requests for r in self.runs)


def runs_compiled(policy: str) -> bool:
    """True for a policy the compiled request loop runs (the built-ins), False for one written in Python."""
    return issubclass(policy_class(policy), CompiledPolicy)


def point_rows(ctx: Context, task: Task) -> Result:
    """All runs under one point: one row per run with param_ columns, metrics and the effective config."""
    pid, params = task
    base = {
        "sweep_id": ctx.sweep_id,
        "point_id": pid,
        "session": ctx.session,
        **{f"param_{k}": v for k, v in params.items()},
    }
    try:
        point = resolve(ctx.policy, params, ctx.cache, ctx.pricing)
    except ReplayError as exc:
        return pid, [{**base, "run_id": r.run_id, "error": str(exc)} for r in ctx.runs]
    base["config"] = config_json(point)
    try:
        fast = point_columns(ctx.packed, point, {**base, "error": None})
    except (Exception, SystemExit):  # noqa: BLE001 - the reference path below records the error per run
        fast = None
    if fast is not None:
        return pid, fast
    rows = []
    for run in ctx.runs:
        try:
            rows.append({**base, "run_id": run.run_id, "error": None, **evaluate_point(run, point)})
        except SystemExit as exc:  # a policy calling sys.exit must not end the sweep (or a worker) silently
            rows.append(
                {
                    **base,
                    "run_id": run.run_id,
                    "error": f"policy {ctx.policy} called sys.exit({exc.code!r}) on this run",
                }
            )
        except Exception as exc:  # noqa: BLE001 - recorded with the point, never silently dropped
            rows.append(
                {
                    **base,
                    "run_id": run.run_id,
                    "error": f"{type(exc).__name__}: {exc}"[:2000] + "\n" + traceback.format_exc(limit=3)[-1000:],
                }
            )
    return pid, rows


_CTX: tuple[str, Context] | None = None  # in a pool worker: the shard file it loaded, and its context


def _init(started: Any = None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle (one line, finished points kept)
    if started is not None:  # the pool counts its workers' starts: one past its size replaced a worker that died
        with started.get_lock():
            started.value += 1


def _work_many(items: list[tuple[str, Task]]) -> list[Result]:
    """A chunk of points in a pool worker, in order. The worker's marker file names the points it holds (the chunk,
    whose results go back together) and the one it is computing, so a worker that dies is known by what it held."""
    if not items:
        return []
    marker = _marker(os.path.dirname(items[0][0]), os.getpid())
    held = [task[0] for _, task in items]
    _write_marker(marker, None, held)
    results = []
    for item in items:
        results.append(_work(item, marker, held))
    return results


def _work(item: tuple[str, Task], marker: str, held: list[str]) -> Result:
    """One point in a pool worker; a task of a new shard replaces the worker's shard by the one in its file."""
    global _CTX
    path, task = item
    if _CTX is None or _CTX[0] != path:
        _CTX = None  # the old shard goes before the new one comes: one shard in memory
        with open(path, "rb") as f:
            _CTX = (path, pickle.load(f))
    _write_marker(marker, task[0], held)
    result = point_rows(_CTX[1], task)
    _write_marker(marker, None, held)
    return result


def _marker(folder: str, pid: int) -> str:
    return os.path.join(folder, f"at-{pid}")


def _write_marker(marker: str, point_id: str | None, held: list[str]) -> None:
    """The point the worker computes (None between points) and the points it holds, replaced whole (a rename)."""
    with open(marker + ".new", "w") as f:
        json.dump({"at": point_id, "held": held}, f)
    os.replace(marker + ".new", marker)


class Executor:
    """Runs the points of one shard of runs after another (``map``) on the same workers, started once."""

    def __init__(self, workers: int = 0) -> None:
        self.workers = workers

    def map(self, ctx: Context, tasks: Iterable[Task]) -> Iterator[Result]:
        for task in tasks:
            yield point_rows(ctx, task)

    def close(self) -> None:
        """Stop the workers."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


Serial = Executor

WINDOW = 64  # points per worker handed to the pool at a time: the tasks and results in flight stay bounded
# Request-configurations a shard's points may come to and still run in this process: the compiled loops simulate
# ~1 M a second on a core, and starting the pool (a forkserver importing the package, each worker loading the
# compiled loops) costs 2-3 s, so below this the pool would only be slower (the report's 5-point sweeps took 1.5-3 s
# each on it, a few milliseconds here).
IN_PROCESS = 2_000_000


class Pool(Executor):
    """A process pool over all cores (or ``workers``), started by the first shard with two points or more and more
    work than ``IN_PROCESS`` (a smaller shard of a built-in policy runs in this process). Each
    shard's context is written once to a file that every worker reads on its first task of the shard. ``tasks`` are
    consumed a window at a time (the next window queued behind the current one, so no worker waits), never all."""

    def __init__(self, workers: int = 0) -> None:
        super().__init__(workers or os.cpu_count() or 1)
        self.pool: Any = None
        self.folder: tempfile.TemporaryDirectory | None = None
        self.shards = 0
        self.started: Any = None  # workers started so far (a shared counter), against the pool's ``size``
        self.size = 0
        self.deaths = 0  # workers that died in a point (each point failed with a message)

    def map(self, ctx: Context, tasks: Iterable[Task]) -> Iterator[Result]:
        tasks = iter(tasks)
        first = list(islice(tasks, WINDOW * self.workers))
        if self.pool is None:
            more = list(islice(tasks, 1))
            tasks = chain(more, tasks)
            # a policy written in Python always runs on the pool: its code may exit or crash, which costs a worker
            # and the point it was on, never the sweep
            small = not more and len(first) * ctx.requests <= IN_PROCESS and runs_compiled(ctx.policy)
            if self.workers <= 1 or len(first) <= 1 or small:
                yield from super().map(ctx, chain(first, tasks))
                return
        if self.pool is None:
            self.pool = self._start(ctx.policy, min(self.workers, len(first)))
        path = self._write(ctx)
        failed = _Failed(ctx.sweep_id, ctx.session, tuple(r.run_id for r in ctx.runs))
        del ctx  # the driver keeps no copy of the shard while its points run
        chunks = max(1, min(16, len(first) // (8 * self.workers)))
        windows: Iterator[list] = _windows(((path, t) for t in chain(first, tasks)), len(first))

        def submit(window: list | None) -> tuple[list, Any] | None:
            # chunks as single tasks (imap_unordered's own chunking returns a generator, which cannot wait with a
            # timeout)
            if not window:
                return None
            return window, self.pool.imap_unordered(_work_many, list(_windows(iter(window), chunks)))

        current = submit(next(windows, None))
        while current is not None:
            following = submit(next(windows, None))  # queued now: workers go on while the current window finishes
            done: set[str] = set()
            try:
                for result in self._watched(current[1]):
                    done.add(result[0])
                    yield result
            except _WorkerDied as died:  # what it held fails; the rest of both windows runs on a new pool
                pending = current[0] + (following[0] if following else [])
                for result in _ready(current[1], *([following[1]] if following else [])):  # came back before it died
                    done.add(result[0])
                    yield result
                lost = {p for p in died.held if p not in done} | died.points
                for _, task in pending:
                    if task[0] in lost:
                        yield failed.rows(task, in_point=task[0] in died.points)
                left = [t for t in pending if t[1][0] not in done and t[1][0] not in lost]
                windows = chain(_windows(iter(left), len(first)), windows)
                self.pool = self._new_pool(self.size)
                following = submit(next(windows, None))
            current = following
        os.unlink(path)  # every point of the shard came back: no worker reads the file again

    def _watched(self, results: Any) -> Iterator[Result]:
        """The results of one window. A worker that died (a policy that exits, a crash in compiled code, the system
        killing it for memory, in a point or between points) raises _WorkerDied naming the point it was computing
        and the points it held, the pool stopped: before, the pool started a new worker and waited on the lost
        points forever. Past MAX_DEATHS the sweep fails."""
        import multiprocessing as mp

        while True:
            try:
                yield from results.next(timeout=1.0)
            except StopIteration:
                return
            except mp.TimeoutError:
                if self.started is None or self.started.value <= self.size:
                    continue
                points, held = self._lost_points()
                self._stop_pool()
                self._clear_markers()  # the stopped workers' points run again: never blamed on a later death
                self.deaths += 1
                if self.deaths > MAX_DEATHS:
                    self.close()
                    raise ReplayError(
                        f"sweep worker processes died {self.deaths} times, in points or between them (a policy that "
                        "exits or crashes its process, or the system killing them for memory); points "
                        "finished so far are kept: fix the policy or lower --workers, then rerun to continue"
                    ) from None
                raise _WorkerDied(points, held) from None

    def _lost_points(self) -> tuple[set[str], set[str]]:
        """The points that workers no longer alive were computing, and the points they held (their chunks, whose
        results had not gone back), read from their marker files."""
        lost: set[str] = set()
        held: set[str] = set()
        if self.folder is None:
            return lost, held
        for name in os.listdir(self.folder.name):
            if not name.startswith("at-") or name.endswith(".new"):
                continue
            marker = os.path.join(self.folder.name, name)
            try:
                os.kill(int(name[3:]), 0)
                continue  # alive
            except ProcessLookupError:
                pass
            except (PermissionError, ValueError):
                continue
            with open(marker) as f:
                state = json.load(f)
            os.unlink(marker)
            if state["at"] is not None:
                lost.add(state["at"])
            held.update(state["held"])
        return lost, held - lost

    def _clear_markers(self) -> None:
        if self.folder is not None:
            for name in os.listdir(self.folder.name):
                if name.startswith("at-"):
                    os.unlink(os.path.join(self.folder.name, name))

    def _start(self, policy: str, n: int) -> Any:
        warm_up(policy)  # compile (or load from the on-disk cache) once, before any worker starts
        # forkserver, never fork: a fork of a parent whose polars/numba/DuckDB threads run deadlocked workers and
        # crashed one in garbage collection; the server imports the package once and forks from one thread
        os.environ.setdefault("POLARS_MAX_THREADS", "1")
        self.folder = tempfile.TemporaryDirectory(prefix="replay-sweep-")
        return self._new_pool(n)

    def _new_pool(self, n: int) -> Any:
        import multiprocessing as mp

        method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
        context = mp.get_context(method)
        if method == "forkserver":
            context.set_forkserver_preload([__name__])  # import the package once, in the server, not per worker
        self.started, self.size = context.Value("i", 0), n
        return context.Pool(n, initializer=_init, initargs=(self.started,))

    def _write(self, ctx: Context) -> str:
        assert self.folder is not None
        self.shards += 1
        path = os.path.join(self.folder.name, f"shard-{self.shards}.pickle")
        with open(path, "wb") as f:
            pickle.dump(ctx, f, protocol=pickle.HIGHEST_PROTOCOL)
        return path

    def _stop_pool(self) -> None:
        if self.pool is not None:
            self.pool.terminate()
            self.pool.join()
            self.pool = None

    def close(self) -> None:
        self._stop_pool()
        if self.folder is not None:
            self.folder.cleanup()
            self.folder = None


MAX_DEATHS = 8  # worker deaths (each failing what it held) before the sweep stops: a policy that always dies


class _WorkerDied(Exception):
    """Pool workers died computing ``points`` and holding ``held`` (points of their chunks not computing when they
    died; none when an idle worker died); the pool is stopped."""

    def __init__(self, points: set[str], held: Iterable[str] = ()) -> None:
        super().__init__(points, held)
        self.points = points
        self.held = set(held)


@dataclass(frozen=True)
class _Failed:
    """What the rows of a point whose worker died need (the driver keeps no copy of the shard's runs)."""

    sweep_id: str
    session: str
    run_ids: tuple[str, ...]

    def rows(self, task: Task, in_point: bool = True) -> Result:
        """The point failed, every run with an error saying where its worker died."""
        pid, params = task
        error = (
            "the worker process died while computing this point (the policy exited or crashed its process, or the "
            "system killed it for memory); the other points ran"
            if in_point
            else "the worker process holding this point died between points (the system killed it, for memory or "
            "by a signal, or it could not load its shard of runs) before its result came back; the other points ran"
        )
        base = {"sweep_id": self.sweep_id, "point_id": pid, "session": self.session}
        base.update({f"param_{k}": v for k, v in params.items()})
        return pid, [{**base, "run_id": run_id, "error": error} for run_id in self.run_ids]


def _ready(*results: Any) -> Iterator[Result]:
    """The results already received from the pool (it may be stopped), without waiting for any other."""
    import multiprocessing as mp

    for chunks in results:
        while True:
            try:
                yield from chunks.next(timeout=0)
            except (StopIteration, mp.TimeoutError):
                break


def _windows(tasks: Iterator, size: int) -> Iterator[list]:
    while window := list(islice(tasks, size)):
        yield window


_RAY_CONTEXT: dict[str, Context] = {}  # in a Ray worker: the context of the shard it works on, fetched once


def _ray_point(key: str, holder: list, task: Task) -> Result:
    """One point on a Ray worker. The context comes as a reference inside a list (so Ray does not fetch it for
    every task) and is fetched and unpacked once per worker process and shard (``key``); the previous goes."""
    ctx = _RAY_CONTEXT.get(key)
    if ctx is None:
        import ray

        _RAY_CONTEXT.clear()
        ctx = _RAY_CONTEXT[key] = ray.get(holder[0])
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
        raise ReplayError(
            f"--executor ray: no Ray cluster at RAY_ADDRESS={address} ({exc}); start one with "
            "`ray start --head` or unset RAY_ADDRESS to start a local one"
        ) from exc
    except Exception as exc:
        if "timed out during startup" not in str(exc):
            raise
        raise ReplayError(
            "--executor ray: the local Ray node did not start within Ray's 30 s (a busy machine); "
            "start it once with `ray start --head --num-cpus N` and run with RAY_ADDRESS=auto"
        ) from exc


class Ray(Executor):
    """The same on Ray: each shard's context goes to the object store once (and is released when its points are
    done) and each worker fetches it once; points are submitted as workers free up (at most two per cluster CPU in
    flight), so a grid of any size streams through.

    Joins the cluster at RAY_ADDRESS when set (`replay sweep --ray-address`) or a Ray already initialised in this
    process, else starts a local one with ``workers`` CPUs (stopped by ``close``); REPLAY_RAY_LOCAL=1 asks for Ray's
    local mode (tests; a one-CPU local cluster on Ray versions without it)."""

    def __init__(self, workers: int = 0, local_mode: bool | None = None) -> None:
        super().__init__(workers)
        self.local_mode = os.environ.get("REPLAY_RAY_LOCAL") == "1" if local_mode is None else local_mode
        self.ray: Any = None
        self.started = False
        self.shards = 0

    def _connect(self) -> Any:
        if self.ray is None:
            try:
                import ray
            except ImportError as exc:
                raise ReplayError("--executor ray needs Ray: pip install 'replay[ray]'") from exc
            self.started = not ray.is_initialized()
            if self.started:
                _ray_start(ray, self.workers, self.local_mode)
            self.ray = ray
        return self.ray

    def map(self, ctx: Context, tasks: Iterable[Task]) -> Iterator[Result]:
        ray = self._connect()
        self.shards += 1
        key = f"{ctx.session}/{self.shards}"
        holder = [ray.put(ctx)]
        del ctx  # the object store holds the shard; the driver keeps no copy
        remote = ray.remote(_ray_point)
        limit = max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))
        todo = iter(tasks)
        pending = [remote.remote(key, holder, t) for t in islice(todo, limit)]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            pending.extend(remote.remote(key, holder, t) for t in islice(todo, 1))
            yield ray.get(done[0])

    def close(self) -> None:
        if self.started:
            self.ray.shutdown()
        self.ray, self.started = None, False


EXECUTORS: dict[str, type[Executor]] = {"serial": Serial, "local": Pool, "ray": Ray}


def get_executor(name: str, workers: int = 0) -> Executor:
    """The executor ``name`` (not started: its workers start with the first shard that needs them)."""
    if name not in EXECUTORS:
        raise ReplayError(f"--executor {name}: choose one of {', '.join(EXECUTORS)}")
    return EXECUTORS[name](workers)
