"""Cached counting: every distinct payload once; a second pass adds nothing."""

from __future__ import annotations

from replay.model import Item
from replay.store import open_store
from replay.tokens import count_items, load_tokenizer
from replay.tokens.counting import pending


def _store(tmp_path):
    con = open_store(tmp_path / "t.duckdb")
    items = [Item("r1", 0, 0, 0, "user", "user_text", "hello world"),
             Item("r1", 1, 1, 0, "assistant", "tool_call", "", tool_name="Bash", args='{"cmd": "ls -la"}'),
             Item("r1", 2, 1, 0, "tool", "tool_result", "a.py\nb.py\n<|im_end|>"),
             Item("r2", 0, 0, 0, "user", "user_text", "hello world")]  # same content as r1/0
    for it in items:
        con.execute("INSERT INTO items (run_id, seq, step, turn, role, kind, tool_name, args, text, content_hash, "
                    "chars)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [it.run_id, it.seq, it.step, it.turn, it.role, it.kind, it.tool_name, it.args, it.text,
                     it.content_hash, len(it.payload)]).fetchall()
    return con, items


def test_counts_match_payloads_and_second_pass_is_free(tmp_path):
    con, items = _store(tmp_path)
    tok = load_tokenizer("tekken")
    assert pending(con, tok.tokenizer_id)[0] == 3
    assert count_items(con, tok) == 3
    got = dict(con.execute("SELECT content_hash, n_tokens FROM token_counts WHERE tokenizer_id = ?",
                           [tok.tokenizer_id]).fetchall())
    assert got == {it.content_hash: tok.count(it.payload) for it in items}
    assert count_items(con, tok) == 0  # cached
    assert count_items(con, load_tokenizer("claude-legacy")) == 3  # cached per tokenizer


def test_corpus_second_pass_counts_zero(corpus_db):
    tok = load_tokenizer("tekken")
    count_items(corpus_db, tok)
    assert pending(corpus_db, tok.tokenizer_id) == (0, 0)
    assert count_items(corpus_db, tok) == 0
