"""Cached counting: every distinct payload once; a second pass adds nothing."""

from __future__ import annotations

from replay.model import Item
from replay.store import open_store
from replay.tokens import count_items, load_tokenizer
from replay.tokens.counting import pending


def _store(tmp_path):
    con = open_store(tmp_path / "t.duckdb")
    items = [
        Item("r1", 0, 0, 0, "user", "user_text", "hello world"),
        Item("r1", 1, 1, 0, "assistant", "tool_call", "", tool_name="Bash", args='{"cmd": "ls -la"}'),
        Item("r1", 2, 1, 0, "tool", "tool_result", "a.py\nb.py\n<|im_end|>"),
        Item("r2", 0, 0, 0, "user", "user_text", "hello world"),
    ]  # same content as r1/0
    for it in items:
        con.execute(
            "INSERT INTO items (run_id, seq, step, turn, role, kind, tool_name, args, text, content_hash, "
            "chars)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                it.run_id,
                it.seq,
                it.step,
                it.turn,
                it.role,
                it.kind,
                it.tool_name,
                it.args,
                it.text,
                it.content_hash,
                len(it.payload),
            ],
        ).fetchall()
    return con, items


def test_counts_match_payloads_and_second_pass_is_free(tmp_path):
    con, items = _store(tmp_path)
    tok = load_tokenizer("tekken")
    assert pending(con, tok.tokenizer_id)[0] == 3
    assert count_items(con, tok) == 3
    got = dict(
        con.execute(
            "SELECT content_hash, n_tokens FROM token_counts WHERE tokenizer_id = ?", [tok.tokenizer_id]
        ).fetchall()
    )
    assert got == {it.content_hash: tok.count(it.payload) for it in items}
    assert count_items(con, tok) == 0  # cached
    assert count_items(con, load_tokenizer("claude-legacy")) == 3  # cached per tokenizer


def test_corpus_second_pass_counts_zero(corpus_db):
    tok = load_tokenizer("tekken")
    count_items(corpus_db, tok)
    assert pending(corpus_db, tok.tokenizer_id) == (0, 0, 0)
    assert count_items(corpus_db, tok) == 0


def test_an_item_larger_than_the_counting_memory_limit_is_counted(tmp_path, monkeypatch):
    """DuckDB's memory is lowered while counting; an item bigger than that limit raises it for itself."""
    from replay.tokens import counting

    monkeypatch.setattr(counting, "DB_MEMORY_MB", 1)
    con, _ = _store(tmp_path)
    big = Item("r3", 0, 0, 0, "tool", "tool_result", "line of output 12345\n" * 400_000)  # 8.4 MB
    con.execute(
        "INSERT INTO items (run_id, seq, step, turn, role, kind, text, content_hash, chars) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [big.run_id, big.seq, big.step, big.turn, big.role, big.kind, big.text, big.content_hash, len(big.payload)],
    ).fetchall()
    tok = load_tokenizer("o200k")
    assert count_items(con, tok) == 4
    got = con.execute("SELECT n_tokens FROM token_counts WHERE content_hash = ?", [big.content_hash]).fetchall()
    assert got == [(tok.count(big.payload),)]


def test_counting_memory_makes_room_for_the_key_index_and_the_largest_item():
    from replay.tokens.counting import DB_MEMORY_MB, db_memory_mb

    assert db_memory_mb(1_000, 0) == DB_MEMORY_MB
    assert db_memory_mb(100 * 2**20, 0) == 800  # 8 bytes a character of the largest payload
    assert db_memory_mb(1_000, 1_000_000) > DB_MEMORY_MB + 100  # a million keys: the index cannot spill
