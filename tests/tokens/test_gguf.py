"""A tiny GGUF file written with gguf's GGUFWriter loads as a working tokenizer."""

from __future__ import annotations

import gguf

from replay.tokens import load_tokenizer


def _write(path, model: str, tokens: list[str], merges=None, scores=None, types=None) -> None:
    w = gguf.GGUFWriter(str(path), arch="llama")
    w.add_tokenizer_model(model)
    w.add_token_list(tokens)
    if merges:
        w.add_token_merges(merges)
    if scores:
        w.add_token_scores(scores)
    if types:
        w.add_token_types(types)
    w.add_chat_template("{% for m in messages %}<|u|>{{ m.content }}{% endfor %}")
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def test_gguf_bpe(tmp_path):
    tokens = ["h", "e", "l", "o", "Ġ", "w", "r", "d", "he", "ll", "hell", "hello", "Ġw", "or", "Ġwor", "ld", "Ġworld"]
    merges = ["h e", "l l", "he ll", "hell o", "Ġ w", "o r", "Ġw or", "l d", "Ġwor ld"]
    path = tmp_path / "tiny.gguf"
    _write(path, "gpt2", tokens, merges=merges)
    tok = load_tokenizer(path)
    assert tok.tokenizer_id.startswith("gguf:")  # named by content, not by the file's name
    other = tmp_path / "renamed-copy.gguf"
    other.write_bytes(path.read_bytes())
    assert load_tokenizer(other).tokenizer_id == tok.tokenizer_id
    assert tok.encode("hello world") == [tokens.index("hello"), tokens.index("Ġworld")]
    assert tok.chat_template and "<|u|>" in tok.chat_template


def test_gguf_spm_unigram(tmp_path):
    tokens = ["<unk>", "<s>", "</s>", "▁hello", "▁world", "▁", "h", "e", "l", "o", "w", "r", "d", "<", ">", "s"]
    scores = [0.0, 0.0, 0.0, -1.0, -1.0, -3.0] + [-5.0] * 10
    types = [2, 3, 3] + [1] * 13
    path = tmp_path / "spm.gguf"
    _write(path, "llama", tokens, scores=scores, types=types)
    tok = load_tokenizer(path)
    assert tok.encode("hello world") == [3, 4]
    assert 1 not in tok.encode("<s>hello")  # control tokens are never produced from text
