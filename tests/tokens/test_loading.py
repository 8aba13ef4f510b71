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
    assert by_dir.tokenizer_id == by_file.tokenizer_id == load_tokenizer("claude-legacy").tokenizer_id
    assert by_dir.encode("hello world") == load_tokenizer("claude-legacy").encode("hello world")


def test_unknown_name_is_a_clear_error():
    with pytest.raises(ReplayError, match="built-in"):
        load_tokenizer("no-such-tokenizer")


def test_user_tokenizer_json_id_is_its_content_not_its_path(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers

    hf = Tokenizer(models.WordLevel({"hello": 0, "world": 1, "[UNK]": 2}, unk_token="[UNK]"))
    hf.pre_tokenizer = pre_tokenizers.Whitespace()
    ids = set()
    for name in ("model-a", "model-b"):
        (tmp_path / name).mkdir()
        hf.save(str(tmp_path / name / "tokenizer.json"))
        ids |= {
            load_tokenizer(tmp_path / name).tokenizer_id,
            load_tokenizer(tmp_path / name / "tokenizer.json").tokenizer_id,
        }
    assert len(ids) == 1 and next(iter(ids)).startswith("hf:")
    hf.add_tokens(["extra"])
    hf.save(str(tmp_path / "model-a" / "tokenizer.json"))
    assert load_tokenizer(tmp_path / "model-a").tokenizer_id not in ids


def test_missing_file_is_an_error_listing_built_ins(tmp_path):
    with pytest.raises(ReplayError, match="o200k.*claude-legacy|claude-legacy.*o200k"):
        load_tokenizer(tmp_path / "nope" / "tokenizer.json")
