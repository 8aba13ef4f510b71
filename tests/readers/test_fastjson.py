"""loads_line gives exactly json.loads's values and errors."""

from __future__ import annotations

import json

import pytest

from replay.readers.fastjson import loads_line
from tests.conftest import CORPUS


def same(text: str):
    return loads_line(text.encode("utf-8", "surrogatepass"), text)


@pytest.mark.parametrize(
    "text",
    [
        '{"a": NaN, "b": Infinity, "c": -Infinity}',
        '{"n": 123456789012345678901234567890}',
        '{"s": "\\ud800 lone"}',
        '{"a": 1, "a": 2}',
        "[1.0, -0, 1e400, 0.1]",
        '{"u": "caf\\u00e9 \\ud83d\\ude00"}\n',
    ],
)
def test_values_as_json(text):
    got, want = same(text), json.loads(text)
    assert json.dumps(got) == json.dumps(want)
    assert type(got) is type(want)


@pytest.mark.parametrize("text", ['{"a": 1', '{"a": tru}', '{"a": 1} x'])
def test_errors_as_json(text):
    with pytest.raises(json.JSONDecodeError) as got:
        same(text)
    with pytest.raises(json.JSONDecodeError) as want:
        json.loads(text)
    assert (got.value.msg, got.value.pos) == (want.value.msg, want.value.pos)


def test_deep_nesting_is_recursion_error():
    with pytest.raises(RecursionError):
        same("[" * 100_000 + "]" * 100_000)


def test_corpus_lines_identical():
    files = sorted(CORPUS.rglob("*.jsonl"))
    assert files, f"no JSONL under {CORPUS}; set REPLAY_CORPUS to the shared corpus folder"
    n = 0
    for f in files:
        for raw in f.read_bytes().splitlines():
            if raw.strip():
                text = raw.decode("utf-8")
                assert same(text) == json.loads(text), f"{f}: {text[:200]}"
                n += 1
    assert n > 10_000
