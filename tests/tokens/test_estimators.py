"""Estimator values on known strings."""

from __future__ import annotations

from replay.tokens import Chars4, CJKChars4, ProxyTokenizer, load_tokenizer


def test_chars4():
    e = Chars4()
    assert [e.estimate(t) for t in ["", "a", "abcd", "abcde", "x" * 400]] == [0, 1, 1, 2, 100]
    assert e.estimate_many(["", "a", "abcd", "abcde", "x" * 400]) == [0, 1, 1, 2, 100]


def test_cjk_chars4_and_images():
    e = CJKChars4()
    assert e.estimate("你好世界") == 4  # one token per CJK char
    assert e.estimate("你好abcd") == 3  # 2 + 4/4
    assert e.estimate("hello world!") == 3
    assert e.estimate("data:image/png;base64,AAAA") == 1600
    assert e.estimate_many(["a", "b"], kinds=["image", None]) == [1600, 1]
    assert CJKChars4(cjk_per_char=0.5, image_tokens=85).estimate_many(["日本語です", "[image]"]) == [3, 85]


def test_proxy_scales_a_real_tokenizer():
    tok = load_tokenizer("claude-legacy")
    proxy = ProxyTokenizer(tok, scale=2.0)
    assert proxy.name == "proxy:claude-legacy"
    assert proxy.estimate("hello world") == 2 * tok.count("hello world")
    assert proxy.estimate_many(["hello", "world"]) == [2 * tok.count("hello"), 2 * tok.count("world")]


def test_bias_kinds_keep_image_placeholders_out_of_json():
    import polars as pl

    from replay.tokens.bias import classify

    texts = pl.Series(
        [
            "[image image/png]",
            "[image]",
            "x",
            "[Request interrupted by user]",
            '{"a": 1}',
            "[1, 2]",
            '[{"k": "v"}]',
            "你好世界你好",
            "def f():\n    return 1\n",
        ]
    )
    kinds = pl.Series(["image", "image", "image", "user_text", "tool_call", "tool_result", "text", "text", "text"])
    assert classify(texts, kinds).to_list() == [
        "image",
        "image",
        "image",
        "prose",
        "json",
        "json",
        "json",
        "cjk",
        "code",
    ]
