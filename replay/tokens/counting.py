"""Count tokens of every distinct item payload once per tokenizer, cached in the store's token_counts table."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from replay.tokens.tokenizer import CountingTokenizer

# The SQL twin of replay.model.Item.payload (what the content_hash was computed over).
PAYLOAD_SQL = ("CASE WHEN kind = 'tool_call' THEN coalesce(tool_name, '') || '(' || coalesce(args, '') || ')' "
               "|| coalesce(text, '') ELSE coalesce(text, '') END")
BATCH_CHARS = 4_000_000  # text per encode_batch call: large enough to keep both cores busy


def pending(con: duckdb.DuckDBPyConnection, tokenizer_id: str) -> tuple[int, int]:
    """Distinct content hashes not yet counted for this tokenizer, and their characters."""
    row = con.execute("""
        SELECT count(*), coalesce(sum(chars), 0) FROM (
            SELECT content_hash, any_value(chars) AS chars FROM items GROUP BY content_hash) i
        ANTI JOIN (SELECT content_hash FROM token_counts WHERE tokenizer_id = ?) t USING (content_hash)""",
                      [tokenizer_id]).fetchall()[0]
    return int(row[0]), int(row[1])


def count_items(con: duckdb.DuckDBPyConnection, tokenizer: CountingTokenizer, progress: bool = False) -> int:
    """Count each item payload not yet in token_counts for ``tokenizer``; return how many hashes were added."""
    tid = tokenizer.tokenizer_id
    n_new, total_chars = pending(con, tid)
    if n_new == 0:
        return 0
    rows = con.execute(f"""
        SELECT content_hash, payload FROM (
            SELECT content_hash, any_value({PAYLOAD_SQL}) AS payload FROM items GROUP BY content_hash) i
        ANTI JOIN (SELECT content_hash FROM token_counts WHERE tokenizer_id = ?) t USING (content_hash)""",
        [tid]).fetchall()
    bar = task = None
    if progress:
        from replay.progress import bar as make_bar

        bar = make_bar()
        bar.start()
        task = bar.add_task(f"counting {tokenizer.name}", total=max(total_chars, 1))
    added = 0
    try:
        for batch_rows in _batches(rows):
            hashes, texts = [r[0] for r in batch_rows], [r[1] for r in batch_rows]
            counts = tokenizer.count_many(texts)
            batch = pa.table({"tokenizer_id": pa.array([tid] * len(hashes)), "content_hash": pa.array(hashes),
                              "n_tokens": pa.array(counts, pa.int32())})
            con.register("_token_batch", batch)
            con.execute("INSERT INTO token_counts SELECT tokenizer_id, content_hash, n_tokens FROM _token_batch "
                        "ON CONFLICT DO NOTHING").fetchall()
            con.unregister("_token_batch")
            added += len(hashes)
            if bar is not None:
                bar.update(task, advance=sum(len(t) for t in texts))
    finally:
        if bar is not None:
            bar.stop()
    return added


def _batches(rows: list[tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """Split rows into batches of about BATCH_CHARS of text each."""
    out: list[list[tuple[str, str]]] = [[]]
    size = 0
    for row in rows:
        if size >= BATCH_CHARS:
            out.append([])
            size = 0
        out[-1].append(row)
        size += len(row[1])
    return [b for b in out if b]


def token_frame(con: duckdb.DuckDBPyConnection, tokenizer_id: str):
    """Items joined with their counts for ``tokenizer_id`` (a polars frame)."""
    from replay.store import frame

    return frame(con, """
        SELECT i.run_id, i.seq, i.step, i.role, i.kind, i.chars, i.content_hash, t.n_tokens
        FROM items i LEFT JOIN token_counts t ON t.content_hash = i.content_hash AND t.tokenizer_id = ?
        ORDER BY i.run_id, i.seq""", [tokenizer_id])
