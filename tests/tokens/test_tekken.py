"""The converted Tekken BPE gives exactly mistral_common's ids."""

from __future__ import annotations

import json
import random

import pytest

from replay.tokens import load_tokenizer
from replay.tokens.tekken import tekken_files

SAMPLES = [
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n\n\n",
    json.dumps({"path": "/src/a.py", "lines": [1, 2, 3], "ok": True, "note": "naïve café"}, indent=2),
    "The quick brown fox jumps over the lazy dog. It's 3.14159 o'clock; DON'T PANIC!!",
    "日本語のテキストと中文文本，还有한국어 텍스트。",
    "<s>[INST] special strings [/INST]</s> <|im_end|> <unk> [TOOL_CALLS]",
    "   \t\t\n\r\n\n   trailing   ",
    "🤗👍🏽 emoji ZWJ 👨‍👩‍👧",
    "x" * 5000,
    "",
]


def _random_texts(n: int) -> list[str]:
    rng = random.Random(7)
    alphabet = "abcXYZ019 \n\t{}[]():;,.'\"-_/\\é中あ한🤗\u200b\x00"
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 300))) for _ in range(n)]


@pytest.mark.parametrize("stem", sorted(tekken_files()))
def test_ids_identical_to_mistral_common(stem, tmp_path, monkeypatch):
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    ref = Tekkenizer.from_file(str(tekken_files()[stem]))
    tok = load_tokenizer(stem)
    texts = SAMPLES + _random_texts(300)
    mismatches = [t for t in texts if tok.encode(t) != ref.encode(t, bos=False, eos=False)]
    assert not mismatches, mismatches[:3]
    assert tok.count_many(texts) == [len(ref.encode(t, bos=False, eos=False)) for t in texts]


def test_cache_reused(monkeypatch, tmp_path):
    from replay.tokens.tekken import cache_dir, load_tekken

    monkeypatch.setenv("REPLAY_CACHE", str(tmp_path))
    assert cache_dir() == tmp_path
    path = tekken_files()[max(tekken_files())]
    tok = load_tekken(path)
    cached = list(tmp_path.glob("tekken_*.tokenizer.json"))
    assert len(cached) == 1
    assert load_tekken(path).to_str() == tok.to_str()
    cached[0].write_text('{"truncated')  # a damaged cache entry is rebuilt, not an error
    assert load_tekken(path).to_str() == tok.to_str()
