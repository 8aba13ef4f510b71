"""Benchmark replay's counting against raw `tokenizers` encode_batch_fast on the same corpus text, in one run.

For each tokenizer: MB/s of the raw `tokenizers` encoder (the tiktoken vocabulary converted to a `tokenizers` BPE,
as counting ran before), of the ways tiktoken can use the cores (serial, its own encode_ordinary_batch threads,
replay's slices on a lasting thread pool, a forkserver process pool), and of `count_items` (store in, store out);
then the ratio count_items / raw and whether every stored count equals the raw encoder's (exit 1 if not).
Best of --repeat runs, raw and replay interleaved, since the machine may be shared.

Usage: python benchmarks/bench_tokens.py [--tokenizer o200k --tokenizer tekken] [--corpus DIR] [--repeat 2]
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from replay.ingest import ingest
from replay.store import open_store
from replay.tokens import count_items, load_tokenizer
from replay.tokens.counting import PAYLOAD_SQL
from replay.tokens.tekken import tokenizers_twin
from replay.tokens.threads import cores, count_threaded, slices
from replay.tokens.tiktoken_file import TiktokenTokenizer

_worker_tok: TiktokenTokenizer | None = None


def _init_worker(name: str) -> None:
    global _worker_tok
    _worker_tok = load_tokenizer(name)


def _count_chunk(texts: list[str]) -> list[int]:
    return [len(_worker_tok.enc.encode_ordinary(t)) for t in texts]


def best(fn: Callable[[], object], repeat: int) -> tuple[float, object]:
    """Shortest wall time of ``repeat`` calls, and the last result."""
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return min(times), out


def bench(name: str, con, texts: list[str], hashes: list[str], mb: float, repeat: int) -> bool:
    tok = load_tokenizer(name)
    if not isinstance(tok, TiktokenTokenizer):
        print(f"{tok.tokenizer_id}: not counted by tiktoken; nothing to compare")
        return True
    twin = tokenizers_twin(tok)
    tid = tok.tokenizer_id

    def raw() -> list[int]:
        return [len(e.ids) for e in twin.encode_batch_fast(texts, add_special_tokens=False)]

    def replay() -> dict[str, int]:
        con.execute("DELETE FROM token_counts WHERE tokenizer_id = ?", [tid]).fetchall()
        count_items(con, tok)
        return dict(
            con.execute("SELECT content_hash, n_tokens FROM token_counts WHERE tokenizer_id = ?", [tid]).fetchall()
        )

    raw_s = replay_s = float("inf")
    for _ in range(repeat):  # interleaved, so both see the same load
        t, raw_counts = best(raw, 1)
        raw_s = min(raw_s, t)
        t, stored = best(replay, 1)
        replay_s = min(replay_s, t)
    again_s, again = best(lambda: count_items(con, tok), 1)
    enc = tok.enc.encode_ordinary
    serial_s, _ = best(lambda: [len(enc(t)) for t in texts], repeat)
    batch_s, _ = best(lambda: [len(x) for x in tok.enc.encode_ordinary_batch(texts, num_threads=cores())], repeat)
    threads_s, _ = best(lambda: count_threaded(enc, texts), repeat)
    start = time.perf_counter()
    with multiprocessing.get_context("forkserver").Pool(cores(), _init_worker, (name,)) as pool:
        pool.map(_count_chunk, [["warm"]] * cores())
        pool_start = time.perf_counter() - start
        chunks = [texts[a:b] for a, b in slices(texts, cores() * 8)]
        pool_s, _ = best(lambda: pool.map(_count_chunk, chunks), repeat)
    identical = [stored.get(h) for h in hashes] == raw_counts
    print(f"\n{tid}: {len(texts):,} distinct payloads, {mb:.2f} MB, {cores()} cores")
    print(f"  raw tokenizers encode_batch_fast     {mb / raw_s:6.2f} MB/s")
    print(f"  tiktoken serial                      {mb / serial_s:6.2f} MB/s")
    print(f"  tiktoken encode_ordinary_batch       {mb / batch_s:6.2f} MB/s  ({cores()} threads, one task per text)")
    print(f"  replay slices on a thread pool       {mb / threads_s:6.2f} MB/s  ({cores()} threads)")
    print(
        f"  forkserver process pool              {mb / pool_s:6.2f} MB/s  ({cores()} workers; "
        f"+{pool_start:.1f} s to start and load the vocabulary)"
    )
    print(f"  replay count_items (store to store)  {mb / replay_s:6.2f} MB/s")
    print(f"  ratio count_items / raw tokenizers: {raw_s / replay_s:.2f}x")
    print(f"  identical counts: {'yes' if identical else 'NO'}")
    print(f"  cached 2nd pass: {again_s * 1000:.0f} ms ({again} new)")
    return identical


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokenizer", action="append", help="repeatable; default o200k and tekken")
    parser.add_argument("--corpus", default=str(Path(__file__).resolve().parents[2] / "shared" / "corpus"))
    parser.add_argument("--repeat", type=int, default=2, help="best of this many runs of each")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        con = open_store(Path(tmp) / "bench.duckdb")
        ingest(con, [args.corpus])
        rows = con.execute(
            f"SELECT content_hash, any_value({PAYLOAD_SQL}) FROM items GROUP BY content_hash ORDER BY content_hash"
        ).fetchall()
        hashes, texts = [r[0] for r in rows], [r[1] for r in rows]
        mb = sum(len(t.encode("utf-8", "surrogatepass")) for t in texts) / 1e6
        ok = [bench(name, con, texts, hashes, mb, args.repeat) for name in args.tokenizer or ["o200k", "tekken"]]
    if not all(ok):
        sys.exit("counts differ from the raw tokenizers encoder")


if __name__ == "__main__":
    main()
