"""Loading from names, files and directories; special tokens count as plain text."""

from __future__ import annotations

import shutil

import pytest

from replay.errors import ReplayError
from replay.tokens import load_tokenizer


def test_claude_legacy_special_strings_are_text():
    tok = load_tokenizer("claude-legacy")
    assert tok.tokenizer_id.startswith("claude-legacy:")
    assert tok.count("<EOT>") > 1  # not the single control token 0
    assert 0 not in tok.encode("a <EOT> b")


def test_file_and_directory_share_vocab_hash(tmp_path):
    from pathlib import Path

    import anthropic

    src = Path(anthropic.__file__).parent / "tokenizer.json"
    model = tmp_path / "my-model"
    model.mkdir()
    shutil.copy(src, model / "tokenizer.json")
    by_dir, by_file = load_tokenizer(model), load_tokenizer(model / "tokenizer.json")
    assert by_dir.tokenizer_id.split(":")[1] == by_file.tokenizer_id.split(":")[1]
    assert by_dir.encode("hello world") == load_tokenizer("claude-legacy").encode("hello world")


def test_unknown_name_is_a_clear_error():
    with pytest.raises(ReplayError, match="built-in"):
        load_tokenizer("no-such-tokenizer")
