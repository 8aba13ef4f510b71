"""Tekken (tiktoken-style rank) vocabularies: counted by tiktoken, or converted to a Hugging Face `tokenizers` BPE
(cached on disk) where a `tokenizers` tokenizer is wanted."""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Callable
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

from replay.errors import ReplayError
from replay.tokens.tiktoken_file import TiktokenTokenizer
from replay.tokens.vocab_files import read_json, want


def cache_dir() -> Path:
    """Where converted tokenizers live: $REPLAY_CACHE or ~/.cache/replay."""
    path = Path(os.environ.get("REPLAY_CACHE", Path.home() / ".cache" / "replay"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def file_digest(path: Path) -> str:
    """Short content hash of a vocabulary file (part of every tokenizer_id)."""
    h = hashlib.blake2b(digest_size=8)
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _byte_map() -> dict[int, str]:
    """GPT-2 byte-to-unicode table used by the ByteLevel pre-tokenizer."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs, strict=True)}


def ranks_to_bpe(ranks: dict[bytes, int], pattern: str, id_offset: int = 0) -> Tokenizer:
    """Build a BPE with every valid two-way split of each token as a merge, prioritised by the token's rank."""
    bmap = _byte_map()

    def enc(b: bytes) -> str:
        return "".join(bmap[x] for x in b)

    vocab = {enc(tok): rank + id_offset for tok, rank in ranks.items()}
    merges: list[tuple[int, int, int, str, str]] = []
    for tok, rank in ranks.items():
        for i in range(1, len(tok)):
            left, right = ranks.get(tok[:i]), ranks.get(tok[i:])
            if left is not None and right is not None and left < rank and right < rank:
                merges.append((rank, left, right, enc(tok[:i]), enc(tok[i:])))
    merges.sort()
    bpe = models.BPE(vocab=vocab, merges=[(m[3], m[4]) for m in merges], ignore_merges=True)
    hf = Tokenizer(bpe)
    hf.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    hf.decoder = decoders.ByteLevel()
    return hf


def tekken_files() -> dict[str, Path]:
    """Tekken vocabularies shipped in mistral_common, by stem (newest last)."""
    import mistral_common

    data = Path(mistral_common.__file__).parent / "data"
    return {p.stem: p for p in sorted(data.glob("tekken_*.json"))}


TEKKEN_FIX = "reinstall mistral-common (pip install --force-reinstall mistral-common)"


def tekken_ranks(path: Path) -> tuple[dict[bytes, int], str, int]:
    """A tekken.json's mergeable ranks (its inner vocabulary), split pattern and number of special tokens; a
    malformed file is an error naming the key."""
    data = want(path, "the document", read_json(path, TEKKEN_FIX), dict, "a JSON object", TEKKEN_FIX)
    cfg = want(path, "config", data.get("config"), dict, "an object", TEKKEN_FIX)
    n_special = want(
        path, "config.default_num_special_tokens", cfg.get("default_num_special_tokens"), int, "an integer", TEKKEN_FIX
    )
    size = want(path, "config.default_vocab_size", cfg.get("default_vocab_size"), int, "an integer", TEKKEN_FIX)
    pattern = want(path, "config.pattern", cfg.get("pattern"), str, "a regular expression", TEKKEN_FIX)
    vocab = want(path, "vocab", data.get("vocab"), list, "an array", TEKKEN_FIX)
    inner = size - n_special
    if n_special < 0 or not 0 < inner <= len(vocab):
        raise ReplayError(
            f"{path}: config.default_vocab_size {size:,} less default_num_special_tokens "
            f"{n_special:,} does not fit the {len(vocab):,} vocab entries; {TEKKEN_FIX}"
        )
    try:
        Regex(pattern)
    except Exception as exc:  # noqa: BLE001 - tokenizers raises plain Exception for a bad pattern
        raise ReplayError(f"{path}: config.pattern is not a valid regular expression ({exc}); {TEKKEN_FIX}") from None
    ranks: dict[bytes, int] = {}
    for i, entry in enumerate(vocab[:inner]):
        try:
            rank = entry["rank"]
            if not isinstance(rank, int) or isinstance(rank, bool):
                raise TypeError
            ranks[base64.b64decode(entry["token_bytes"], validate=True)] = rank
        except (KeyError, TypeError, ValueError):
            raise ReplayError(
                f'{path}: vocab[{i}] is not {{"rank": <int>, "token_bytes": <base64>}}; {TEKKEN_FIX}'
            ) from None
    return ranks, pattern, n_special


def _cached_bpe(key: str, build: Callable[[], Tokenizer]) -> Tokenizer:
    """A converted tokenizer from the cache under ``key``, built and saved there the first time (and again when
    the cached file is damaged)."""
    cached = cache_dir() / f"{key}.tokenizer.json"
    if cached.exists():
        try:
            return Tokenizer.from_file(str(cached))
        except Exception:  # noqa: BLE001, S110 - a damaged cache entry is rebuilt below
            pass
    tok = build()
    tmp = cached.with_suffix(f".tmp{os.getpid()}")
    tok.save(str(tmp))
    tmp.replace(cached)
    return tok


def load_tekken(path: Path) -> Tokenizer:
    """The Tekken vocabulary at ``path`` as a `tokenizers` BPE (converted once, then read from the cache)."""

    def build() -> Tokenizer:
        ranks, pattern, n_special = tekken_ranks(path)
        return ranks_to_bpe(ranks, pattern, id_offset=n_special)

    return _cached_bpe(f"{path.stem}-{file_digest(path)}", build)


def tokenizers_twin(tok: TiktokenTokenizer) -> Tokenizer:
    """``tok``'s vocabulary as a `tokenizers` BPE giving the same ids, special-token strings as plain text (the
    encoder counting used before tiktoken; benchmarks and tests compare with it). Converted once, then cached.
    `tokenizers` reads cl100k's possessive ``\\p{N}{1,3}+`` as a repeat, so the ``+`` is dropped."""
    enc = tok.encoding
    pattern = enc._pat_str.replace(r"\p{N}{1,3}+", r"\p{N}{1,3}")
    hf = _cached_bpe(
        tok.tokenizer_id.replace(":", "-"), lambda: ranks_to_bpe(enc._mergeable_ranks, pattern, id_offset=tok.id_offset)
    )
    hf.encode_special_tokens = True
    return hf


def load_tekken_counter(path: Path, name: str, tokenizer_id: str) -> TiktokenTokenizer:
    """The Tekken vocabulary at ``path`` counted by tiktoken, as mistral_common's Tekkenizer encodes it: its
    ranks and split pattern, no special tokens (their strings in text are plain text), ids offset by their number."""
    import tiktoken

    ranks, pattern, n_special = tekken_ranks(path)
    enc = tiktoken.Encoding(path.stem, pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
    return TiktokenTokenizer(name, tokenizer_id, None, enc=enc, id_offset=n_special)
