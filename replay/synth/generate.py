"""`generate`: N synthetic runs written as real harness logs, learned from an ingested store.

Each run i takes a donor run: by default the source's runs in seeded rounds (each used equally often, so formats
keep the source's share of runs), with ``mix`` a weighted draw of the format, then of a donor of that format. A
run is built from (seed, i) alone, so it does not depend on N or on how many workers write. Files go to
``out/<format>/<i // 1000>/``; ``out/.synth.json`` (hidden, so ingest skips it) records the seed, donors, densities
and the filler mixes.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from replay.errors import ReplayError
from replay.synth.filler import Filler, calibrate
from replay.synth.plan import Plan, build_plan
from replay.synth.profile import WRITERS, Donor, kind_density, load_donors
from replay.synth.write_claude import claude_code_lines
from replay.synth.write_codex import codex_lines

LINES: dict[str, Callable[[Plan], Iterator[bytes]]] = {"claude-code": claude_code_lines, "codex-rollout": codex_lines}


@dataclass
class Recipe:
    """Everything a worker needs to write any run: donors by format, format weights, filler mix per kind."""

    seed: int
    donors: dict[str, list[Donor]]
    weights: dict[str, float]
    mixes: dict[str, float]
    densities: dict[str, float] = field(default_factory=dict)

    def pick(self, index: int) -> tuple[str, Donor]:
        """The format and donor of run ``index``. When every donor weighs the same (the default mix, or one
        format), runs go through the donors in rounds, each round in its own seeded order (stratified: each donor
        is used N/D times, +-1, which keeps small samples close to the source); otherwise a weighted draw."""
        fmts = sorted(self.weights)
        per_donor = {self.weights[f] / len(self.donors[f]) for f in fmts if self.weights[f] > 0}
        if len(per_donor) == 1:
            pool = [(f, d) for f in fmts if self.weights[f] > 0 for d in self.donors[f]]
            order = list(range(len(pool)))
            random.Random(f"{self.seed}:round:{index // len(pool)}").shuffle(order)
            return pool[order[index % len(pool)]]
        rng = random.Random(f"{self.seed}:{index}:pick")
        fmt = rng.choices(fmts, [self.weights[f] for f in fmts])[0]
        return fmt, rng.choice(self.donors[fmt])


def parse_mix(text: str | None, available: dict[str, list[Donor]]) -> dict[str, float]:
    """``claude-code=0.7,codex-rollout=0.3`` -> weights; None -> the source's share of runs per format."""
    if not text:
        return {f: float(len(d)) for f, d in available.items()}
    out: dict[str, float] = {}
    for part in text.split(","):
        name, _, value = part.partition("=")
        name = name.strip()
        if name not in WRITERS:
            raise ReplayError(f"--mix {part!r}: format must be one of {', '.join(WRITERS)}")
        if name not in available:
            raise ReplayError(f"--mix {part!r}: the source store has no {name} runs to learn from")
        try:
            out[name] = float(value)
        except ValueError:
            raise ReplayError(f"--mix {part!r}: expected FORMAT=WEIGHT, e.g. claude-code=0.7") from None
    if not out or sum(out.values()) <= 0 or min(out.values()) < 0:
        raise ReplayError(f"--mix {text!r}: weights must be >= 0 and not all 0")
    return out


def learn(
    con: duckdb.DuckDBPyConnection,
    seed: int,
    tokenizer: str = "o200k",
    mix: str | None = None,
    exclude: str | None = None,
) -> Recipe:
    """Learn donors and per-kind token densities from the real runs in a store (only read)."""
    from replay.tokens.loading import load_tokenizer

    donors = load_donors(con, WRITERS, exclude)
    by_format: dict[str, list[Donor]] = {}
    for d in donors:
        by_format.setdefault(d.format, []).append(d)
    weights = parse_mix(mix, by_format)  # a bad --mix fails before the slow part
    tok = load_tokenizer(tokenizer)
    densities = kind_density(con, tok.count_many, tuple(by_format), seed=seed)
    mixes = {kind: calibrate(tok.count_many, target) for kind, target in densities.items()}
    return Recipe(seed, by_format, weights, mixes, densities)


def run_path(out: Path, fmt: str, plan: Plan) -> Path:
    folder = out / fmt / f"{plan.index // 1000:03d}"
    if fmt == "codex-rollout":
        stamp = plan.times[0].strftime("%Y-%m-%dT%H-%M-%S")
        return folder / f"rollout-{stamp}-{plan.session_id}.jsonl"
    return folder / f"{plan.session_id}.jsonl"


def write_run(recipe: Recipe, filler: Filler, index: int, out: Path) -> int:
    """Write run ``index``; return its size in bytes."""
    fmt, donor = recipe.pick(index)
    plan = build_plan(donor, index, fmt, filler, recipe.mixes, recipe.seed)
    path = run_path(out, fmt, plan)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = b"\n".join(LINES[fmt](plan)) + b"\n"
    path.write_bytes(data)
    return len(data)


_STATE: tuple[Recipe, Filler, Path] | None = None


def _init(recipe: Recipe, out: Path) -> None:
    global _STATE
    _STATE = (recipe, Filler(), out)


def _write_range(bounds: tuple[int, int]) -> tuple[int, int]:
    assert _STATE is not None, "worker not initialised"
    recipe, filler, out = _STATE
    return bounds[1] - bounds[0], sum(write_run(recipe, filler, i, out) for i in range(*bounds))


def generate(
    recipe: Recipe, runs: int, out: Path, workers: int = 1, on_progress: Callable[[int, int], None] | None = None
) -> int:
    """Write ``runs`` runs under ``out`` (on ``workers`` processes); return the bytes written."""
    if runs < 1:
        raise ReplayError(f"--runs {runs}: give at least 1")
    out.mkdir(parents=True, exist_ok=True)
    manifest = {
        "seed": recipe.seed,
        "runs": runs,
        "weights": recipe.weights,
        "densities": recipe.densities,
        "mixes": recipe.mixes,
        "donors": {f: [d.run_id for d in ds] for f, ds in recipe.donors.items()},
    }
    (out / ".synth.json").write_text(json.dumps(manifest, indent=1))
    step = 50
    ranges = [(i, min(runs, i + step)) for i in range(0, runs, step)]
    total = 0
    if workers <= 1:
        _init(recipe, out)
        results: Iterator[tuple[int, int]] = map(_write_range, ranges)
        for n, size in results:
            total += size
            if on_progress:
                on_progress(n, size)
        return total
    import multiprocessing as mp

    method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    with mp.get_context(method).Pool(min(workers, os.cpu_count() or 1), _init, (recipe, out)) as pool:
        for n, size in pool.imap_unordered(_write_range, ranges):
            total += size
            if on_progress:
                on_progress(n, size)
    return total
