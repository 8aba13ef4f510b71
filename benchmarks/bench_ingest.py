"""Ingest throughput on the corpus beside DuckDB's own read_json on the same JSONL files.

    python benchmarks/bench_ingest.py [CORPUS]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

import duckdb

from replay.ingest import expand_paths, ingest
from replay.store import open_store

CORPUS = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "shared" / "corpus")


def main() -> None:
    files = expand_paths([CORPUS])
    jsonl = [f for f in files if f.suffix == ".jsonl"]
    mb_all = sum(f.stat().st_size for f in files) / 1e6
    mb_jsonl = sum(f.stat().st_size for f in jsonl) / 1e6
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        ingest(open_store(Path(tmp) / "a.duckdb"), jsonl)
        t_replay_jsonl = time.perf_counter() - t0
        t0 = time.perf_counter()
        ingest(open_store(Path(tmp) / "b.duckdb"), files)
        t_replay_all = time.perf_counter() - t0
        con = duckdb.connect(str(Path(tmp) / "c.duckdb"))
        t0 = time.perf_counter()
        for i, f in enumerate(jsonl):
            con.execute(f"CREATE TABLE t{i} AS SELECT * FROM read_json(?, format='newline_delimited', "
                        "union_by_name=true, maximum_object_size=67108864, ignore_errors=true)", [str(f)])
        t_duck = time.perf_counter() - t0
    print(f"JSONL files: {len(jsonl)}, {mb_jsonl:.1f} MB")
    print(f"replay ingest (JSONL)      {mb_jsonl / t_replay_jsonl:7.2f} MB/s  ({t_replay_jsonl:.2f} s)")
    print(f"duckdb read_json (JSONL)   {mb_jsonl / t_duck:7.2f} MB/s  ({t_duck:.2f} s)")
    print(f"ratio replay / read_json   {t_duck / t_replay_jsonl:7.2f}x")
    print(f"replay ingest (all {len(files)} files, {mb_all:.1f} MB) {mb_all / t_replay_all:.2f} MB/s")


if __name__ == "__main__":
    main()
