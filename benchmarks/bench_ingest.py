"""Ingest throughput on the corpus beside DuckDB's own read_json on the same JSONL files.

    python benchmarks/bench_ingest.py [CORPUS] [--rounds 3] [--workers 0]
Both sides run ``--rounds`` times, alternating, each into a fresh store; the best round of each is compared (the
machine is shared: the best round is the one least disturbed by other processes). Pool start-up and every commit
count: each round is a complete ``ingest()`` call.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import duckdb

from replay.ingest import expand_paths, ingest
from replay.store import open_store

DEFAULT_CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (the parse workers)."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def timed(fn) -> tuple[float, float]:
    c0, t0 = cpu_seconds(), time.perf_counter()
    fn()
    return time.perf_counter() - t0, cpu_seconds() - c0


def read_json_all(db: Path, jsonl: list[Path]) -> None:
    con = duckdb.connect(str(db))
    for i, f in enumerate(jsonl):
        con.execute(
            f"CREATE TABLE t{i} AS SELECT * FROM read_json(?, format='newline_delimited', "
            "union_by_name=true, maximum_object_size=67108864, ignore_errors=true)",
            [str(f)],
        )
    con.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus", nargs="?", type=Path, default=DEFAULT_CORPUS)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=0, help="parse processes (0: every core)")
    args = ap.parse_args()
    files = expand_paths([args.corpus])
    jsonl = [f for f in files if f.suffix == ".jsonl"]
    mb_all = sum(f.stat().st_size for f in files) / 1e6
    mb_jsonl = sum(f.stat().st_size for f in jsonl) / 1e6
    replay_runs, duck_runs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            replay_runs.append(
                timed(lambda r=r: ingest(open_store(Path(tmp) / f"a{r}.duckdb"), jsonl, workers=args.workers))
            )
            duck_runs.append(timed(lambda r=r: read_json_all(Path(tmp) / f"c{r}.duckdb", jsonl)))
        t_all, _ = timed(lambda: ingest(open_store(Path(tmp) / "b.duckdb"), files, workers=args.workers))
    (t_replay, c_replay), (t_duck, c_duck) = min(replay_runs), min(duck_runs)
    print(
        f"JSONL files: {len(jsonl)}, {mb_jsonl:.1f} MB; best of {args.rounds} rounds "
        f"(all rounds, s: replay {', '.join(f'{t:.2f}' for t, _ in replay_runs)}; "
        f"read_json {', '.join(f'{t:.2f}' for t, _ in duck_runs)})"
    )
    print(f"replay ingest (JSONL)      {mb_jsonl / t_replay:7.2f} MB/s  ({t_replay:.2f} s wall, {c_replay:.2f} s CPU)")
    print(f"duckdb read_json (JSONL)   {mb_jsonl / t_duck:7.2f} MB/s  ({t_duck:.2f} s wall, {c_duck:.2f} s CPU)")
    print(f"ratio replay / read_json   {t_duck / t_replay:7.2f}x")
    print(f"replay ingest (all {len(files)} files, {mb_all:.1f} MB) {mb_all / t_all:.2f} MB/s ({t_all:.2f} s)")


if __name__ == "__main__":
    main()
