"""Tiktoken rank files (one `base64-token rank` per line) counted with tiktoken, read from a local file only."""

from __future__ import annotations

import base64
import hashlib
import unicodedata
from collections.abc import Sequence, Sized
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from replay.errors import ReplayError
from replay.tokens.threads import count_threaded
from replay.tokens.tokenizer import CountingTokenizer

if TYPE_CHECKING:
    import tiktoken

# Split patterns of the OpenAI encodings (the `pat_str` tiktoken's registry gives them).
O200K_PATTERN = "|".join(
    [
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
        r"\p{N}{1,3}",
        r" ?[^\s\p{L}\p{N}]+[\r\n/]*",
        r"\s*[\r\n]+",
        r"\s+(?!\S)",
        r"\s+",
    ]
)
LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
QWEN_PATTERN = LLAMA3_PATTERN.replace(r"\p{N}{1,3}", r"\p{N}")  # Qwen splits digits one by one
CL100K_PATTERN = (
    r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$"
    r"|\s*[\r\n]|\s+(?!\S)|\s"
)


@dataclass(frozen=True)
class RankSpec:
    """What a rank file alone does not say: its split pattern and special tokens, and how to recognise it."""

    name: str  # canonical replay name, e.g. "o200k"
    encoding: str  # the encoding's own name, e.g. "o200k_base"
    sha256: str  # of the rank file
    pattern: str
    special: dict[str, int] = field(default_factory=dict)
    nfc: bool = False  # normalise text to NFC before encoding


O200K = RankSpec(
    "o200k",
    "o200k_base",
    "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    O200K_PATTERN,
    {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
)
CL100K = RankSpec(
    "cl100k",
    "cl100k_base",
    "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    CL100K_PATTERN,
    {
        "<|endoftext|>": 100257,
        "<|fim_prefix|>": 100258,
        "<|fim_middle|>": 100259,
        "<|fim_suffix|>": 100260,
        "<|endofprompt|>": 100276,
    },
)
LLAMA3 = RankSpec(
    "llama3",
    "llama3",
    "82e9d31979e92ab929cd544440f129d9ecd797b69e327f80f17e1c50d5551b55",
    LLAMA3_PATTERN,
    {
        "<|begin_of_text|>": 128000,
        "<|end_of_text|>": 128001,
        "<|start_header_id|>": 128006,
        "<|end_header_id|>": 128007,
        "<|eot_id|>": 128009,
    },
)
LLAMA4 = RankSpec(
    "llama4",
    "llama4",
    "d0bdbaf59b0762c8c807617e2d8ea51420eb1b1de266df2495be755c8e0ed6ed",
    O200K_PATTERN,
    {
        "<|begin_of_text|>": 200000,
        "<|end_of_text|>": 200001,
        "<|header_start|>": 200005,
        "<|header_end|>": 200006,
        "<|eot|>": 200008,
    },
)
QWEN = RankSpec(
    "qwen",
    "qwen",
    "b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186",
    QWEN_PATTERN,
    {"<|endoftext|>": 151643, "<|im_start|>": 151644, "<|im_end|>": 151645},
    nfc=True,
)
KNOWN_RANK_FILES = {s.sha256: s for s in (O200K, CL100K, LLAMA3, LLAMA4, QWEN)}


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def looks_like_rank_file(path: Path) -> bool:
    """True when the first line is `<base64> <int>` (a tiktoken rank file, not JSON or GGUF)."""
    with path.open("rb") as fh:
        first = fh.readline(4096).split()
    if len(first) != 2 or not first[1].isdigit():
        return False
    try:
        base64.b64decode(first[0], validate=True)
    except ValueError:
        return False
    return True


def read_ranks(path: Path) -> dict[bytes, int]:
    """The mergeable ranks of a rank file; a malformed line is an error naming the file and line."""
    ranks: dict[bytes, int] = {}
    with path.open("rb") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                token, rank = line.split()
                ranks[base64.b64decode(token, validate=True)] = int(rank)
            except ValueError:
                raise ReplayError(f"{path}:{n}: not a tiktoken rank line (want `<base64 token> <rank>`)") from None
    return ranks


@dataclass
class TiktokenTokenizer(CountingTokenizer):
    """A CountingTokenizer backed by a tiktoken Encoding (ordinary text: special-token strings are plain text).
    ``id_offset`` is added to every rank (Tekken numbers its special tokens first)."""

    enc: tiktoken.Encoding | None = None
    nfc: bool = False
    id_offset: int = 0

    def __post_init__(self) -> None:  # no Hugging Face tokenizer to configure
        if self.enc is None:
            raise ReplayError(f"tokenizer {self.name}: no tiktoken encoding given")

    @property
    def encoding(self) -> tiktoken.Encoding:
        """``enc``, known to be set (``__post_init__`` refuses None)."""
        if self.enc is None:
            raise ReplayError(f"tokenizer {self.name}: no tiktoken encoding given")
        return self.enc

    def _prep(self, text: str) -> str:
        return unicodedata.normalize("NFC", text) if self.nfc else text

    def encode(self, text: str) -> list[int]:
        ids = self.encoding.encode_ordinary(self._prep(text))
        return [i + self.id_offset for i in ids] if self.id_offset else ids

    def _ids(self, text: str) -> Sized:
        """The ids of ``text`` as ``encode_ordinary`` gives them (special-token text is plain text), in a uint32
        array: 4 bytes a token where a list takes about 36, so one 200 MB item does not need gigabytes to count."""
        return self.encoding.encode_to_numpy(text, allowed_special=set(), disallowed_special=())

    def count(self, text: str) -> int:
        return len(self._ids(self._prep(text)))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Counts for many texts on every core (tiktoken releases the GIL while it encodes)."""
        if self.nfc:
            texts = [self._prep(t) for t in texts]
        return count_threaded(self._ids, texts)

    def count_rendered(self, text: str) -> int:
        return len(self.encoding.encode(self._prep(text), allowed_special="all"))


def load_rank_file(path: Path, spec: RankSpec, tokenizer_id: str) -> TiktokenTokenizer:
    """The rank file at ``path`` as ``spec`` describes it; its SHA-256 must be the one ``spec`` names."""
    import tiktoken

    actual = sha256_file(path)
    if actual != spec.sha256:
        raise ReplayError(
            f"{path}: sha256 {actual[:16]}... is not the {spec.encoding} vocabulary "
            f"({spec.sha256[:16]}...); reinstall the package that ships it"
        )
    enc = tiktoken.Encoding(
        spec.encoding, pat_str=spec.pattern, mergeable_ranks=read_ranks(path), special_tokens=dict(spec.special)
    )
    return TiktokenTokenizer(spec.name, tokenizer_id, None, enc=enc, nfc=spec.nfc)
