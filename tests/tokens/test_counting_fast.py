"""Counting with tiktoken (o200k, Tekken) gives the counts of the `tokenizers` encoder it replaced, on the real corpus,
streamed from the store a batch at a time and resumable after an interruption."""

from __future__ import annotations

import pytest

from replay.store import open_store
from replay.tokens import count_items, counting, load_tokenizer
from replay.tokens.tekken import tekken_files, tokenizers_twin
from replay.tokens.threads import SERIAL_CHARS, count_threaded, slices
from replay.tokens.tiktoken_file import TiktokenTokenizer

NAMES = ["o200k", "tekken"]
SPECIAL_LOOKING = [
    "<|endoftext|>",
    "a<|endoftext|>b <|endofprompt|>",
    "<|im_start|>user\nhi<|im_end|>",
    "<s>[INST] hi [/INST]</s>",
    "[TOOL_CALLS][AVAILABLE_TOOLS]<unk>",
    "<|fim_prefix|>x<|fim_suffix|>",
]


@pytest.fixture(scope="module")
def fresh_store(corpus_db, tmp_path_factory):
    """A private store holding the corpus's items and nothing counted (counted here, never in the shared store)."""
    con = open_store(tmp_path_factory.mktemp("fast") / "s.duckdb")
    con.register("corpus_items", corpus_db.sql("SELECT * FROM items").to_arrow_table())
    con.execute("INSERT INTO items SELECT * FROM corpus_items").fetchall()
    con.unregister("corpus_items")
    yield con
    con.close()


def _stored(con, tokenizer_id: str) -> dict[str, tuple[str, int]]:
    rows = con.execute(
        f"""
        SELECT i.content_hash, any_value({counting.PAYLOAD_SQL}), any_value(t.n_tokens) FROM items i
        JOIN token_counts t ON t.content_hash = i.content_hash AND t.tokenizer_id = ? GROUP BY i.content_hash""",
        [tokenizer_id],
    ).fetchall()
    return {h: (text, n) for h, text, n in rows}


@pytest.mark.parametrize("name", NAMES)
def test_store_counts_equal_tokenizers_on_the_corpus(name, fresh_store, monkeypatch):
    tok = load_tokenizer(name)
    assert isinstance(tok, TiktokenTokenizer)
    monkeypatch.setattr(counting, "BATCH_CHARS", 300_000)  # many batches: reads and writes interleave
    n_new, chars, _ = counting.pending(fresh_store, tok.tokenizer_id)
    assert count_items(fresh_store, tok) == n_new > 5_000 and chars > 5_000_000
    stored = _stored(fresh_store, tok.tokenizer_id)
    assert len(stored) == n_new
    sample, size = [], 0  # the raw encoder is slow: compare on the first 3 M characters, in hash order
    for h in sorted(stored):
        sample.append(stored[h])
        size += len(stored[h][0])
        if size > 3_000_000:
            break
    raw = tokenizers_twin(tok).encode_batch_fast([text for text, _ in sample], add_special_tokens=False)
    assert [n for _, n in sample] == [len(e.ids) for e in raw]


@pytest.mark.parametrize("name", NAMES)
def test_special_token_text_is_plain_text_as_before(name):
    tok = load_tokenizer(name)
    twin = tokenizers_twin(tok)
    want = [len(twin.encode(t, add_special_tokens=False).ids) for t in SPECIAL_LOOKING]
    assert tok.count_many(SPECIAL_LOOKING) == [tok.count(t) for t in SPECIAL_LOOKING] == want
    assert [tok.encode(t) for t in SPECIAL_LOOKING] == [
        twin.encode(t, add_special_tokens=False).ids for t in SPECIAL_LOOKING
    ]
    assert tok.count("<|endoftext|>") > 1


@pytest.mark.parametrize("stem", sorted(tekken_files()))
def test_tekken_ids_equal_mistral_common_on_the_corpus(stem, fresh_store):
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    ref = Tekkenizer.from_file(str(tekken_files()[stem]))
    tok = load_tokenizer(stem)
    texts = [
        r[0]
        for r in fresh_store.execute(
            f"SELECT DISTINCT {counting.PAYLOAD_SQL} FROM items WHERE chars < 5000 ORDER BY 1 LIMIT 600"
        ).fetchall()
    ] + SPECIAL_LOOKING
    assert [tok.encode(t) for t in texts] == [ref.encode(t, bos=False, eos=False) for t in texts]


def test_batches_are_bounded_and_cover_every_pending_hash(fresh_store, monkeypatch):
    monkeypatch.setattr(counting, "BATCH_CHARS", 200_000)
    longest = fresh_store.execute("SELECT max(chars) FROM items").fetchone()[0]
    n_new = counting.pending(fresh_store, "nobody:0000000000000000")[0]
    seen = []
    for hashes, texts in counting.pending_payloads(fresh_store, "nobody:0000000000000000"):
        assert len(hashes) == len(texts) and sum(map(len, texts)) < 200_000 + longest
        seen += hashes
    assert len(seen) == len(set(seen)) == n_new


def test_interrupted_count_resumes_to_the_same_counts(fresh_store, monkeypatch, tmp_path):
    tok = load_tokenizer("o200k")
    con = open_store(tmp_path / "r.duckdb")
    con.register("src", fresh_store.sql("SELECT * FROM items LIMIT 2000").to_arrow_table())
    con.execute("INSERT INTO items SELECT * FROM src").fetchall()
    monkeypatch.setattr(counting, "BATCH_CHARS", 100_000)
    calls = []

    def failing(texts):
        calls.append(len(texts))
        if len(calls) == 3:
            raise KeyboardInterrupt
        return TiktokenTokenizer.count_many(tok, texts)

    monkeypatch.setattr(tok, "count_many", failing)
    with pytest.raises(KeyboardInterrupt):
        count_items(con, tok)
    done = con.execute("SELECT count(*) FROM token_counts").fetchone()[0]
    assert done == sum(calls[:2]) > 0  # the batches counted before the interruption are kept
    monkeypatch.undo()
    count_items(con, tok)
    got = _stored(con, tok.tokenizer_id)
    assert [n for _, n in got.values()] == tok.count_many([text for text, _ in got.values()])


def test_threaded_counts_equal_serial():
    texts = [("word " * (i % 97)) + "\n\tx = {i}" * (i % 13) for i in range(3_000)]
    assert sum(map(len, texts)) > SERIAL_CHARS
    tok = load_tokenizer("o200k")
    assert count_threaded(tok.enc.encode_ordinary, texts, threads=3) == [tok.count(t) for t in texts]


@pytest.mark.parametrize("lengths, n", [([5, 1, 1, 1, 100, 2], 3), ([1] * 10, 4), ([50], 4), ([], 2)])
def test_slices_are_contiguous_and_cover_all(lengths, n):
    spans = slices(["x" * k for k in lengths], n)
    assert [i for a, b in spans for i in range(a, b)] == list(range(len(lengths)))
    assert len(spans) <= n


@pytest.mark.parametrize("name", NAMES)
def test_counting_a_large_item_does_not_hold_its_ids_as_python_ints(name):
    """A list of ids costs about 36 bytes a token (a 200 MB item: gigabytes); counting holds 4 bytes a token."""
    import tracemalloc

    tok = load_tokenizer(name)
    text = "def f(x):\n    return x * 2  # ok\n" * 60_000
    tracemalloc.start()
    try:
        n = tok.count(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert n == len(tok.encode(text))
    assert peak < 8 * n
