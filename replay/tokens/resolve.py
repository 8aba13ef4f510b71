"""The one resolver every command uses: `-t NAME|PATH` (or a stored tokenizer id) -> a tokenizer id whose counts
are all in the store. No tokenizer given -> None, which means labelled chars/4 estimates; anything else that
cannot be resolved is an error, never a silent fallback."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import duckdb

from replay.errors import ReplayError
from replay.store import scalar
from replay.tokens import builtins
from replay.tokens.counting import count_items, pending
from replay.tokens.loading import load_tokenizer, tokenizer_id_of, unknown_message
from replay.tokens.tokenizer import CountingTokenizer
from replay.tokens.vocab_files import as_path, path_kind

TOKENIZER_ID = re.compile(r"^[\w.\-]+:[0-9a-f]{16}$")


def beside(spec: str | None, folder: Path) -> str | None:
    """A tokenizer path written in a file under ``folder`` is relative to that folder (when it exists there)."""
    if spec and not as_path(spec).is_absolute() and path_kind(folder / spec) is not None:
        return str((folder / spec).resolve())
    return spec


def _read_only(con: duckdb.DuckDBPyConnection) -> bool:
    return scalar(con, "SELECT current_setting('access_mode')") == "read_only"


def _stored(con: duckdb.DuckDBPyConnection, tokenizer_id: str) -> bool:
    return scalar(con, "SELECT count(*) FROM token_counts WHERE tokenizer_id = ?", [tokenizer_id]) > 0


def count_pending(con: duckdb.DuckDBPyConnection, tok: CountingTokenizer, spec: str, progress: bool = True) -> int:
    """Count the items ``tok`` has not counted yet; on a read-only store, say which command counts them."""
    n_new = pending(con, tok.tokenizer_id)[0]
    if n_new == 0:
        return 0
    if _read_only(con):
        raise ReplayError(
            f"{n_new:,} items have no {tok.tokenizer_id} counts in this store (opened read-only); "
            f"count them first: replay tokens -t {spec} --db STORE"
        )
    return count_items(con, tok, progress=progress)


@dataclass(frozen=True)
class Resolved:
    tokenizer_id: str
    counted: int  # content hashes counted by this call


def _from_id(con: duckdb.DuckDBPyConnection, tokenizer_id: str, progress: bool) -> Resolved:
    """A tokenizer id: a built-in's current id is loaded and counted; another must be fully counted already."""
    name = tokenizer_id.split(":", 1)[0]
    if builtins.lookup(name) is not None and tokenizer_id_of(name) == tokenizer_id:
        counted = count_pending(con, load_tokenizer(name), name, progress) if pending(con, tokenizer_id)[0] else 0
        return Resolved(tokenizer_id, counted)
    if not _stored(con, tokenizer_id):
        raise ReplayError(
            f"tokenizer id {tokenizer_id!r} has no counts in this store and names no installed "
            f"built-in; pass the tokenizer itself: -t NAME|PATH (`replay tokenizers` lists names)"
        )
    n_new = pending(con, tokenizer_id)[0]
    if n_new:
        raise ReplayError(
            f"tokenizer id {tokenizer_id!r}: {n_new:,} items have no counts in this store; pass the "
            "tokenizer itself (-t NAME|PATH) so they are counted"
        )
    return Resolved(tokenizer_id, 0)


def resolve(con: duckdb.DuckDBPyConnection, spec: str | Path | None, progress: bool = True) -> Resolved | None:
    """The tokenizer for ``spec`` (built-in name, file, directory, or a stored id) with every item counted.

    ``None`` or "" means no tokenizer: callers then use chars/4 and label it. Unknown names, missing files and
    ids without counts raise ReplayError listing the built-ins."""
    if spec is None or not str(spec).strip():
        return None
    text = str(spec).strip()
    exists = path_kind(as_path(text)) is not None
    if not exists and TOKENIZER_ID.match(text):
        return _from_id(con, text, progress)
    if not exists and builtins.lookup(text) is None:
        raise ReplayError(unknown_message(text))
    known = tokenizer_id_of(text)
    if known is not None and pending(con, known)[0] == 0:
        return Resolved(known, 0)  # every item already counted: no need to load the vocabulary
    tok = load_tokenizer(text)
    return Resolved(tok.tokenizer_id, count_pending(con, tok, text, progress))


def resolve_given(con: duckdb.DuckDBPyConnection, spec: str | Path | None, progress: bool = True) -> Resolved:
    """:func:`resolve` for a command that needs a tokenizer: an empty ``spec`` is an error, not chars/4."""
    res = resolve(con, spec, progress)
    if res is None:
        raise ReplayError(
            f"-t/--tokenizer {str(spec or '')!r} names no tokenizer; {unknown_message('').split('; ', 1)[1]}"
        )
    return res


def resolve_tokenizer(con: duckdb.DuckDBPyConnection, spec: str | Path | None, progress: bool = True) -> str | None:
    """The id of :func:`resolve`'s tokenizer, or None (chars/4) when no tokenizer is given."""
    res = resolve(con, spec, progress)
    return res.tokenizer_id if res else None
