"""Sweep specs from TOML: a policy, fixed parameters, a grid or random search space, the runs.

[sweep]
name = "seed-a-protected"      # optional; the sweep id is a hash of everything below
policy = "two_tier"            # a registered name or "package.module:Class"
mode = "grid"                  # or "random" (then `samples` and `seed`)
runs = "%"                     # LIKE pattern on run id or source path
tokenizer = "o200k"            # built-in name or tokenizer path (relative to this file); "" = chars/4
cache = "auto"                 # cache model name; auto: each run under its provider's own
price_model = ""               # price (and cache) every run as this model ("" = each run's own)
batch = 16                     # points committed per transaction
max_points = 1000000           # a sweep of more points is refused before it runs (raise to run a bigger one)

[prices]                       # optional: model (or glob) -> {input, output, cache_read, ...} USD/Mtok
[price]                        # optional: input = .., output = .. for every run

[fixed]                        # same for every point
window = 130000

[grid]                         # mode = "grid": the cartesian product
protected_tokens = [12000, 43333]

[random]                       # mode = "random": ranges {low, high, log, int} or lists (choices)
summary_trigger = {low = 40000, high = 110000, int = true}
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import random
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from replay.config_text import read_config_text
from replay.errors import ReplayError
from replay.metrics.prices import Pricing, price_fields
from replay.policies import canonical

TABLES = {"sweep", "fixed", "grid", "random", "prices", "price"}
# Bump when a metric's definition changes: results stored under an older definition are then not resumed.
METRICS_VERSION = 4  # 2: cost includes the summarisation calls; 3: provider prices and caches, outputs in cost;
# 4: repeat reads by content (same lines or command), repeat_same_resource* beside them
SWEEP_KEYS = {
    "name",
    "policy",
    "mode",
    "runs",
    "tokenizer",
    "cache",
    "batch",
    "samples",
    "seed",
    "description",
    "price_model",
    "max_points",
}
NOT_IN_ID = ("batch", "name", "max_points")  # settings that do not change any result


NAME_RE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,99}")
MAX_POINTS = 1_000_000  # a sweep of more points is refused before anything runs, unless max_points raises it
LARGEST = 2**31 - 1  # the most max_points may allow (the store counts a sweep's points in 32 bits)


def stable_id(obj: Any, n: int = 12) -> str:
    """Short hash of a JSON-able object (sorted keys): equal specs, equal ids."""
    return hashlib.blake2b(json.dumps(obj, sort_keys=True, default=str).encode(), digest_size=n // 2).hexdigest()


@dataclass(frozen=True)
class SweepSpec:
    """A parsed sweep: everything that decides its results, hence its id."""

    policy: str
    fixed: dict[str, Any] = field(default_factory=dict)
    grid: dict[str, list[Any]] = field(default_factory=dict)
    space: dict[str, Any] = field(default_factory=dict)
    mode: str = "grid"
    samples: int = 32
    seed: int = 0
    runs: str | None = None
    tokenizer: str | None = None
    cache: str = "auto"
    batch: int = 16
    name: str = ""
    prices: dict[str, dict[str, Any]] = field(default_factory=dict)  # model or glob -> price fields
    price: dict[str, Any] = field(default_factory=dict)  # price fields for every run
    price_model: str | None = None
    max_points: int = MAX_POINTS

    def pricing(self) -> Pricing:
        """How the sweep's runs are priced (genai-prices, then [prices], then [price]; price_model for all)."""
        table = {str(k).lower(): price_fields(v, f"[prices] {k}") for k, v in self.prices.items()}
        return Pricing(table, price_fields(self.price, "[price]"), self.price_model, "[prices]")

    @property
    def sweep_id(self) -> str:
        key = {k: v for k, v in self.__dict__.items() if k not in NOT_IN_ID}
        key["metrics_version"] = METRICS_VERSION
        return (self.name + "-" if self.name else "") + stable_id(key)

    @property
    def n_points(self) -> int:
        """Points in the sweep, counted without building one: the grid's product of list lengths, else
        ``samples`` (random draws that repeat a point are dropped, so at most that many)."""
        if self.mode == "grid":
            return grid_size(self.grid)
        size = domain_size(self.space)
        return self.samples if size is None else min(self.samples, size)

    def iter_points(self) -> Iterator[dict[str, Any]]:
        """Every point, one at a time: fixed parameters merged with one grid combination or one random draw."""
        swept = grid_points(self.grid) if self.mode == "grid" else random_points(self.space, self.samples, self.seed)
        return ({**self.fixed, **p} for p in swept)

    def points(self) -> list[dict[str, Any]]:
        """Every point in a list (small sweeps; the runner streams ``iter_points``)."""
        return list(self.iter_points())

    @property
    def swept_names(self) -> list[str]:
        return sorted(self.grid if self.mode == "grid" else self.space)


def point_id(params: dict[str, Any]) -> str:
    return stable_id(params, 16)


def grid_size(grid: dict[str, list[Any]]) -> int:
    """Points in the cartesian product of the grid's lists."""
    return math.prod(len(v) for v in grid.values())


def grid_points(grid: dict[str, list[Any]]) -> Iterator[dict[str, Any]]:
    """The grid's combinations, lazily, in a fixed order (names sorted, the last name varying fastest)."""
    names = sorted(grid)
    for combo in itertools.product(*(grid[n] for n in names)):
        yield dict(zip(names, combo, strict=True))


def _number(where: str, value: Any) -> float:
    """A finite number from the sweep file, else an error naming the key."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ReplayError(f"{where} = {value!r}: expected a finite number")
    return float(value)


def _whole(where: str, value: Any, lo: int, hi: int | None = None) -> int:
    """A whole number in [lo, hi] from the sweep file, else an error naming the key and the range."""
    num = _number(where, value)
    if not num.is_integer() or num < lo or (hi is not None and num > hi):
        allowed = f"{lo:,} or more" if hi is None else f"{lo:,} to {hi:,}"
        raise ReplayError(f"{where} = {value!r}: expected a whole number, {allowed}")
    return int(num)


def check_range(name: str, dom: Any) -> None:
    """A [random] domain: a non-empty list of choices, or {low, high} with finite low <= high (low > 0 with log)."""
    where = f"[random] {name}"
    if isinstance(dom, list):
        if not dom:
            raise ReplayError(f"{where}: an empty list of choices")
        return
    if not isinstance(dom, dict) or "low" not in dom or "high" not in dom:
        raise ReplayError(f"{where}: give a list of choices or {{low = .., high = ..}}")
    unknown = set(dom) - {"low", "high", "log", "int"}
    if unknown:
        raise ReplayError(f"{where}: unknown keys {sorted(unknown)}; a range takes low, high, log, int")
    lo, hi = _number(f"{where}.low", dom["low"]), _number(f"{where}.high", dom["high"])
    if lo > hi:
        raise ReplayError(f"{where}: low = {dom['low']} is above high = {dom['high']}")
    if dom.get("log") and lo <= 0:
        raise ReplayError(f"{where}: log = true needs low > 0 (got {dom['low']}); a log range cannot start at 0")
    for flag in ("log", "int"):
        if flag in dom and not isinstance(dom[flag], bool):
            raise ReplayError(f"{where}.{flag} = {dom[flag]!r}: expected true or false")


def _draw(rng: random.Random, name: str, dom: Any) -> Any:
    check_range(name, dom)
    if isinstance(dom, list):
        return rng.choice(dom)
    lo, hi = float(dom["low"]), float(dom["high"])
    if dom.get("log"):
        value = math.exp(rng.uniform(math.log(lo), math.log(hi)))
    else:
        value = rng.uniform(lo, hi)
    integer = dom.get("int", isinstance(dom["low"], int) and isinstance(dom["high"], int))
    return int(round(value)) if integer else value


def domain_size(space: dict[str, Any]) -> int | None:
    """How many distinct points a [random] space holds when it is finite (lists of choices and integer ranges), else
    None."""
    size = 1
    for name, dom in space.items():
        check_range(name, dom)
        if isinstance(dom, list):
            size *= len({json.dumps(v, sort_keys=True) for v in dom})
        elif dom.get("int", isinstance(dom["low"], int) and isinstance(dom["high"], int)) and not dom.get("log"):
            size *= int(round(float(dom["high"]))) - int(round(float(dom["low"]))) + 1
        else:
            return None
    return size


MAX_REPEATS = 10_000  # draws in a row that only repeat earlier points: the space is (nearly) exhausted


def random_points(space: dict[str, Any], samples: int, seed: int) -> Iterator[dict[str, Any]]:
    """``samples`` distinct draws from ``space``, lazily (seeded; a draw that repeats a point is drawn again). Stops
    early when the space holds fewer points, or after MAX_REPEATS draws in a row found nothing new. Only the ids of
    the points drawn are kept, as integers."""
    rng, names = random.Random(seed), sorted(space)
    size = domain_size(space)
    wanted = samples if size is None else min(samples, size)
    seen: set[int] = set()
    repeats = 0
    while len(seen) < wanted and repeats < MAX_REPEATS:
        p = {n: _draw(rng, n, space[n]) for n in names}
        pid = int(point_id(p), 16)
        if pid in seen:
            repeats += 1
            continue
        repeats = 0
        seen.add(pid)
        yield p


def check_size(spec: SweepSpec, where: str) -> None:
    """Refuse, before anything is built or run, a sweep of more points than its limit."""
    size = spec.n_points
    if size <= spec.max_points:
        return
    if spec.mode == "grid":
        axes = " x ".join(f"{len(spec.grid[n]):,} {n}" for n in sorted(spec.grid))
        what, narrow = f"the [grid] has {size:,} points ({axes})", 'narrow the [grid] lists or use mode = "random"'
    else:
        what, narrow = f"samples = {size:,}", "draw fewer samples"
    raise_it = (
        f", or raise the limit with max_points = {size} in [sweep] (or --max-points {size})"
        if size <= LARGEST
        else f" (no sweep holds more than {LARGEST:,})"
    )
    raise ReplayError(f"{where}: {what}, over the limit of {spec.max_points:,} points; {narrow}{raise_it}")


def from_dict(doc: dict[str, Any], where: str = "sweep", max_points: int | None = None) -> SweepSpec:
    """Validate a parsed TOML document and build the spec; ``max_points`` (--max-points) overrides the file's
    limit on the number of points."""
    sweep = doc.get("sweep")
    if not isinstance(sweep, dict) or "policy" not in sweep:
        raise ReplayError(f'{where}: needs a [sweep] table with policy = "NAME"')
    unknown = (set(sweep) - SWEEP_KEYS) | (set(doc) - TABLES)
    if unknown:
        raise ReplayError(
            f"{where}: unknown keys {sorted(unknown)}; "
            f"[sweep] takes {sorted(SWEEP_KEYS)}; tables are [fixed], [grid], [random]"
        )
    for table in ("fixed", "grid", "random", "prices", "price"):
        if table in doc and not isinstance(doc[table], dict):
            raise ReplayError(f"{where}: [{table}] must be a table")
    mode = sweep.get("mode", "grid" if "grid" in doc else "random")
    if mode not in ("grid", "random"):
        raise ReplayError(f"{where}: mode = {mode!r}; choose grid or random")
    grid = doc.get("grid", {})
    for name, values in grid.items():
        if not isinstance(values, list) or not values:
            raise ReplayError(f"{where}: [grid] {name} must be a non-empty list")
    if mode == "random" and not doc.get("random"):
        raise ReplayError(f'{where}: mode = "random" needs a [random] table of ranges')
    for name, dom in (doc.get("random") or {}).items():
        check_range(name, dom)
    name = str(sweep.get("name", ""))
    if name and not NAME_RE.fullmatch(name):
        raise ReplayError(
            f"{where}: [sweep] name = {name!r}: use letters, digits, '.', '_' and '-' (not starting "
            "with '.'); the name is part of file names under --out"
        )
    max_points = _whole(
        "[sweep] max_points" if max_points is None else "--max-points",
        sweep.get("max_points", MAX_POINTS) if max_points is None else max_points,
        1,
        LARGEST,
    )
    spec = SweepSpec(
        policy=canonical(str(sweep["policy"])),  # a descriptive alias is stored under its seed name
        fixed=doc.get("fixed", {}),
        grid=grid,
        space=doc.get("random", {}),
        mode=mode,
        samples=_whole("[sweep] samples", sweep.get("samples", 32), 1),
        seed=_whole("[sweep] seed", sweep.get("seed", 0), 0),
        runs=sweep.get("runs") or None,
        tokenizer=sweep.get("tokenizer") or None,
        cache=str(sweep.get("cache", "auto")),
        batch=_whole("[sweep] batch", sweep.get("batch", 16), 1),
        name=name,
        prices=doc.get("prices", {}),
        price=doc.get("price", {}),
        price_model=sweep.get("price_model") or None,
        max_points=max_points,
    )
    check_size(spec, where)
    return spec


def load_spec(path: Path, max_points: int | None = None) -> SweepSpec:
    try:
        doc = tomllib.loads(read_config_text(path, "sweep file"))
    except tomllib.TOMLDecodeError as exc:
        raise ReplayError(f"{path}: not valid TOML: {exc}") from None
    from dataclasses import replace

    from replay.tokens.resolve import beside

    if "policy" in doc and "sweep" not in doc:  # a policy file (tune's recommended.toml): a one-point sweep
        from replay.sweeps.policy_file import load_policy_file, sweep_document

        return from_dict(sweep_document(load_policy_file(Path(path))), str(path), max_points)  # tokenizer resolved
    spec = from_dict(doc, str(path), max_points)
    return replace(spec, tokenizer=beside(spec.tokenizer, Path(path).parent))
