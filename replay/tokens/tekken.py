"""Convert a Tekken (tiktoken-style rank) vocabulary to a Hugging Face `tokenizers` BPE, cached on disk."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers


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
    tok = Tokenizer(bpe)
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    return tok


def tekken_files() -> dict[str, Path]:
    """Tekken vocabularies shipped in mistral_common, by stem (newest last)."""
    import mistral_common

    data = Path(mistral_common.__file__).parent / "data"
    return {p.stem: p for p in sorted(data.glob("tekken_*.json"))}


def load_tekken(path: Path) -> Tokenizer:
    """The Tekken vocabulary at ``path`` as a `tokenizers` BPE (converted once, then read from the cache)."""
    cached = cache_dir() / f"{path.stem}-{file_digest(path)}.tokenizer.json"
    if cached.exists():
        return Tokenizer.from_file(str(cached))
    data = json.loads(path.read_text())
    cfg = data["config"]
    n_special = cfg["default_num_special_tokens"]
    inner = cfg["default_vocab_size"] - n_special
    ranks = {base64.b64decode(v["token_bytes"]): v["rank"] for v in data["vocab"][:inner]}
    tok = ranks_to_bpe(ranks, cfg["pattern"], id_offset=n_special)
    tmp = cached.with_suffix(f".tmp{os.getpid()}")
    tok.save(str(tmp))
    tmp.replace(cached)
    return tok
