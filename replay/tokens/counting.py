"""Count tokens of every distinct item payload once per tokenizer, cached in the store's token_counts table.

Memory is bounded by a batch, not by the store: the payloads still to count stream from DuckDB in Arrow record
batches (one row per content hash, picked by rowid so no aggregate holds payloads), are counted about
BATCH_CHARS characters at a time, and each batch's counts are written before the next batch is read."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import duckdb
import pyarrow as pa

from replay.store.memory import BYTES_PER_CHAR, bounded_db_memory
from replay.tokens.tokenizer import CountingTokenizer

# The SQL twin of replay.model.Item.payload (what the content_hash was computed over).
PAYLOAD_SQL = (
    "CASE WHEN kind = 'tool_call' THEN coalesce(tool_name, '') || '(' || coalesce(args, '') || ')' "
    "|| coalesce(text, '') ELSE coalesce(text, '') END"
)
UNCOUNTED = "(SELECT content_hash FROM token_counts WHERE tokenizer_id = ?)"
BATCH_CHARS = 4_000_000  # text per count_many call: enough to keep every core busy, small next to the store
FETCH_ROWS = 256  # rows per Arrow record batch read from DuckDB
DB_MEMORY_MB = 128  # DuckDB's memory while counting: a scan of a big store would keep every block it read


def pending(con: duckdb.DuckDBPyConnection, tokenizer_id: str) -> tuple[int, int, int]:
    """Distinct content hashes not yet counted for this tokenizer, their characters and the largest one's."""
    row = con.execute(
        f"""
        SELECT count(*), coalesce(sum(chars), 0), coalesce(max(chars), 0) FROM (
            SELECT content_hash, any_value(chars) AS chars FROM items GROUP BY content_hash) i
        ANTI JOIN {UNCOUNTED} t USING (content_hash)""",
        [tokenizer_id],
    ).fetchall()[0]
    return int(row[0]), int(row[1]), int(row[2])


KEY_BYTES = 128  # token_counts primary-key index per row: it stays in memory (measured ~82 bytes a key)


def db_memory_mb(largest_chars: int, keys: int) -> int:
    """DuckDB's memory while counting: DB_MEMORY_MB or room for the largest payload (up to 4 bytes a character,
    twice: the string and its Arrow copy), whichever is more, plus the token_counts key index, which cannot spill
    (``keys``: its rows once this count is done)."""
    return max(DB_MEMORY_MB, -(-BYTES_PER_CHAR * largest_chars // 2**20)) + -(-KEY_BYTES * keys // 2**20)


def pending_payloads(con: duckdb.DuckDBPyConnection, tokenizer_id: str) -> Iterator[tuple[list[str], list[str]]]:
    """(content hashes, payloads) not yet counted for ``tokenizer_id``, about BATCH_CHARS characters at a time,
    streamed on a cursor of its own (so ``con`` may write while this is read)."""
    reader = con.cursor()
    try:
        batches = reader.sql(
            f"""
            SELECT content_hash, {PAYLOAD_SQL} AS payload FROM items WHERE rowid IN (
                SELECT min(i.rowid) FROM items i ANTI JOIN {UNCOUNTED} t USING (content_hash)
                GROUP BY i.content_hash)""",
            params=[tokenizer_id],
        ).to_arrow_reader(FETCH_ROWS)
        hashes: list[str] = []
        texts: list[str] = []
        size = 0
        for batch in batches:
            for h, text in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True):
                hashes.append(h)
                texts.append(text)
                size += len(text)
                if size >= BATCH_CHARS:
                    yield hashes, texts
                    hashes, texts, size = [], [], 0
        if hashes:
            yield hashes, texts
    finally:
        reader.close()


def _write(con: duckdb.DuckDBPyConnection, tokenizer_id: str, hashes: list[str], counts: list[int]) -> None:
    batch = pa.table(
        {
            "tokenizer_id": pa.array([tokenizer_id] * len(hashes)),
            "content_hash": pa.array(hashes),
            "n_tokens": pa.array(counts, pa.int32()),
        }
    )
    con.register("_token_batch", batch)
    try:
        con.execute(
            "INSERT INTO token_counts SELECT tokenizer_id, content_hash, n_tokens FROM _token_batch "
            "ON CONFLICT DO NOTHING"
        ).fetchall()
    finally:
        con.unregister("_token_batch")


def count_items(con: duckdb.DuckDBPyConnection, tokenizer: CountingTokenizer, progress: bool = False) -> int:
    """Count each item payload not yet in token_counts for ``tokenizer``; return how many hashes were added.
    Each batch is committed as it is counted, so an interrupted count resumes where it stopped."""
    tid = tokenizer.tokenizer_id
    n_new, total_chars, largest = pending(con, tid)
    if n_new == 0:
        return 0
    added = 0
    bar = _progress(f"counting {tokenizer.name}", total_chars, progress)
    keys = con.execute("SELECT count(*) FROM token_counts").fetchall()[0][0] + n_new
    with bounded_db_memory(con, db_memory_mb(largest, keys)), bar as advance:
        for hashes, texts in pending_payloads(con, tid):
            _write(con, tid, hashes, tokenizer.count_many(texts))
            added += len(hashes)
            advance(sum(len(t) for t in texts))
    return added


@contextmanager
def _progress(label: str, total: int, show: bool) -> Iterator[Callable[[int], None]]:
    """A rich bar on stderr advanced by characters counted (a no-op when ``show`` is false)."""
    if not show:
        yield lambda n: None
        return
    from replay.progress import bar as make_bar

    bar = make_bar()
    task = bar.add_task(label, total=max(total, 1))
    with bar:
        yield lambda n: bar.update(task, advance=n)
