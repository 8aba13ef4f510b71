"""resolve_tokenizer: NAME|PATH|stored id -> an id whose counts are all in the store; never a silent chars/4."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from replay.errors import ReplayError
from replay.tokens import builtins
from replay.tokens.counting import pending
from replay.tokens.resolve import beside, resolve, resolve_tokenizer


@pytest.fixture()
def store(corpus: Path, tmp_path: Path) -> Path:
    from replay.ingest import ingest
    from replay.store import open_store

    db = tmp_path / "r.duckdb"
    con = open_store(db)
    ingest(con, [corpus / "claude-code" / "ccl-sample-37f83ec9.jsonl"])
    con.close()
    return db


def test_no_tokenizer_means_estimate(store: Path) -> None:
    con = duckdb.connect(str(store))
    assert resolve_tokenizer(con, None) is None and resolve_tokenizer(con, "  ") is None


@pytest.mark.parametrize("spec", ["nonsense", "claude", "o200k_base", "./no/such/tokenizer.json"])
def test_unknown_is_an_error_listing_built_ins(store: Path, spec: str) -> None:
    con = duckdb.connect(str(store))
    with pytest.raises(ReplayError) as err:
        resolve_tokenizer(con, spec)
    assert "o200k" in str(err.value) and "claude-legacy" in str(err.value)
    assert con.execute("SELECT count(*) FROM token_counts").fetchone()[0] == 0


def test_name_counts_once_then_id_and_path_reuse(store: Path) -> None:
    con = duckdb.connect(str(store))
    first = resolve(con, "claude-legacy", progress=False)
    assert first.counted > 0 and pending(con, first.tokenizer_id)[0] == 0
    path = builtins.lookup("claude-legacy").path()
    again = resolve(con, str(path), progress=False)
    assert (again.tokenizer_id, again.counted) == (first.tokenizer_id, 0)
    assert resolve_tokenizer(con, first.tokenizer_id) == first.tokenizer_id


def test_stored_id_without_all_counts_is_an_error(store: Path) -> None:
    con = duckdb.connect(str(store))
    con.execute("INSERT INTO token_counts SELECT 'hf:0123456789abcdef', content_hash, 1 FROM items LIMIT 1")
    with pytest.raises(ReplayError, match="have no counts"):
        resolve_tokenizer(con, "hf:0123456789abcdef")
    with pytest.raises(ReplayError, match="has no counts in this store"):
        resolve_tokenizer(con, "hf:fedcba9876543210")


def test_read_only_store_names_the_command_that_counts(store: Path) -> None:
    con = duckdb.connect(str(store), read_only=True)
    with pytest.raises(ReplayError, match="replay tokens -t cl100k"):
        resolve_tokenizer(con, "cl100k")


def test_paths_in_files_are_relative_to_the_file(tmp_path: Path) -> None:
    (tmp_path / "tok").mkdir()
    (tmp_path / "tok" / "tokenizer.json").write_text("{}")
    assert beside("tok", tmp_path) == str((tmp_path / "tok").resolve())
    assert beside("o200k", tmp_path) == "o200k"


def test_counted_tokenizer_is_not_loaded_again(store: Path, tmp_path: Path, monkeypatch) -> None:
    import shutil

    import replay.tokens.resolve as resolve_mod
    from replay.tokens import loading

    con = duckdb.connect(str(store))
    tid = resolve_tokenizer(con, "o200k", progress=False)
    copy = tmp_path / "model"
    copy.mkdir()
    shutil.copy(builtins.lookup("claude-legacy").path(), copy / "tokenizer.json")
    cl = resolve_tokenizer(con, str(copy), progress=False)
    for spec in ("o200k", str(builtins.lookup("o200k").path()), "claude-legacy", str(copy)):
        assert loading.tokenizer_id_of(spec) == (tid if "o200k" in spec or "fb374" in spec else cl)
    monkeypatch.setattr(resolve_mod, "load_tokenizer", lambda spec: pytest.fail(f"loaded {spec}"))
    assert resolve_tokenizer(con, "o200k") == tid and resolve_tokenizer(con, str(copy)) == cl
    assert resolve_tokenizer(con, str(builtins.lookup("o200k").path())) == tid
