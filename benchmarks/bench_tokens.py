"""Benchmark count_items against raw Tokenizer.encode_batch on the same text, and the cached second pass.

Usage: python benchmarks/bench_tokens.py [--tokenizer tekken] [--corpus /work/shared/corpus]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from replay.ingest import ingest
from replay.store import open_store
from replay.tokens import count_items, load_tokenizer
from replay.tokens.counting import PAYLOAD_SQL


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokenizer", default="tekken")
    parser.add_argument("--corpus", default=str(Path(__file__).resolve().parents[2] / "shared" / "corpus"))
    args = parser.parse_args()
    tok = load_tokenizer(args.tokenizer)
    with tempfile.TemporaryDirectory() as tmp:
        con = open_store(Path(tmp) / "bench.duckdb")
        ingest(con, [args.corpus])
        texts = [r[0] for r in con.execute(
            f"SELECT any_value({PAYLOAD_SQL}) FROM items GROUP BY content_hash").fetchall()]
        mb = sum(len(t.encode("utf-8", "surrogatepass")) for t in texts) / 1e6
        start = time.perf_counter()
        tok.hf.encode_batch(texts, add_special_tokens=False)
        raw = time.perf_counter() - start
        fast = getattr(tok.hf, "encode_batch_fast", None)
        start = time.perf_counter()
        if fast:
            fast(texts, add_special_tokens=False)
        raw_fast = time.perf_counter() - start if fast else float("nan")
        start = time.perf_counter()
        added = count_items(con, tok)
        first = time.perf_counter() - start
        start = time.perf_counter()
        again = count_items(con, tok)
        second = time.perf_counter() - start
    print(f"{tok.tokenizer_id}: {len(texts):,} distinct payloads, {mb:.2f} MB")
    print(f"raw encode_batch       {mb / raw:6.2f} MB/s")
    print(f"raw encode_batch_fast  {mb / raw_fast:6.2f} MB/s")
    print(f"count_items (1st pass) {mb / first:6.2f} MB/s  ({added:,} hashes)")
    print(f"count_items / raw encode_batch_fast: {raw_fast / first:.2f}x throughput")
    print(f"cached 2nd pass: {second * 1000:.1f} ms ({again} new), speedup {first / second:,.0f}x")


if __name__ == "__main__":
    main()
