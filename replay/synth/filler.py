"""Filler text of a given length and token density, deterministic for a seed; no real text is copied.

A pool is a long string of invented words (syllables), a few common English and code words, punctuation, digits
and line breaks; ``mix`` (0..1) is the share of common words, which sets the density (more common words, more
characters per token). :func:`calibrate` finds the mix whose density under a tokenizer matches a target, so the
synthetic items of each kind count like the real ones. A text is a slice of a pool at a random offset: cheap,
and two slices of one pool rarely repeat (content hashes stay distinct, as in real logs).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable

import numpy as np

COMMON = (
    "the",
    "file",
    "value",
    "return",
    "error",
    "data",
    "test",
    "import",
    "from",
    "self",
    "line",
    "path",
    "name",
    "config",
    "request",
    "result",
    "update",
    "check",
    "list",
    "string",
    "number",
    "time",
    "build",
    "user",
    "model",
    "function",
    "class",
    "table",
    "index",
    "output",
    "input",
    "read",
    "write",
    "and",
    "for",
    "with",
    "this",
    "that",
    "not",
    "new",
    "run",
    "set",
    "get",
    "add",
    "true",
    "false",
    "none",
    "type",
)
SYLLABLES = (
    "ka",
    "ren",
    "tor",
    "mi",
    "lo",
    "vex",
    "dra",
    "pu",
    "sen",
    "qui",
    "bal",
    "zo",
    "fen",
    "tri",
    "gam",
    "hu",
    "ost",
    "lyn",
    "cre",
    "dox",
    "pha",
    "nim",
    "wu",
    "jel",
    "sca",
    "ber",
    "ix",
    "ol",
    "ump",
    "ty",
)
PUNCT = (".", ",", "(", ")", ":", "=", "_", "/", "-", "{", "}", ";", '"', "'", "[", "]")
POOL_CHARS = 1 << 20  # 1 MiB per pool; longer texts wrap around


def _table() -> tuple[list[str], int, int, int, int]:
    """Every piece a pool is made of, in one list, with the offsets of each group (words, syllables, punctuation,
    numbers, separators); index ``len(table) - 3`` is the empty piece."""
    table = [*COMMON, *SYLLABLES, *PUNCT, *map(str, range(1000)), "", " ", "\n"]
    syl = len(COMMON)
    punct = syl + len(SYLLABLES)
    digits = punct + len(PUNCT)
    return table, syl, punct, digits, digits + 1000


TABLE, SYL, PUN, DIG, EMPTY = _table()
LENGTHS = np.array([len(t) for t in TABLE])


def make_pool(mix: float, seed: int = 0, size: int = POOL_CHARS) -> str:
    """A pool of ``size`` characters whose share of common words is ``mix``.

    Word by word: a common word with probability ``mix``, else 1-3 syllables, then punctuation (1 in 4) and a
    number (1 in 12); a line break after 1 word in 12, else a space. All words are drawn at once (numpy) as indexes
    into one table of pieces (a word has at least 3 characters with its separator: size // 3 + 1 words are enough),
    and the pieces that reach ``size`` are joined in one call.
    """
    key = int.from_bytes(hashlib.sha256(f"pool:{seed}:{mix:.4f}".encode()).digest()[:8], "little")
    rng = np.random.default_rng(key)
    n = size // 3 + 1
    plain = rng.random(n) >= mix
    pieces = np.full((n, 6), EMPTY, dtype=np.int64)
    pieces[:, 0] = np.where(plain, SYL + rng.integers(0, len(SYLLABLES), n), rng.integers(0, len(COMMON), n))
    syllables = rng.integers(1, 4, n)
    for col in (1, 2):
        pieces[:, col] = np.where(plain & (syllables > col), SYL + rng.integers(0, len(SYLLABLES), n), EMPTY)
    pieces[:, 3] = np.where(plain & (rng.random(n) < 0.25), PUN + rng.integers(0, len(PUNCT), n), EMPTY)
    pieces[:, 4] = np.where(plain & (rng.random(n) < 0.08), DIG + rng.integers(0, 1000, n), EMPTY)
    pieces[:, 5] = np.where(rng.random(n) < 0.08, EMPTY + 2, EMPTY + 1)
    flat = pieces.ravel()
    flat = flat[flat != EMPTY]
    end = int(np.searchsorted(np.cumsum(LENGTHS[flat]), size)) + 1  # the pieces that reach ``size`` characters
    return "".join(map(TABLE.__getitem__, flat[:end].tolist()))[:size]


class Filler:
    """Slices of pools: ``text(n, mix, rng)`` is ``n`` characters of the pool for ``mix``."""

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed
        self.pools: dict[float, str] = {}

    def pool(self, mix: float) -> str:
        key = round(mix, 4)
        if key not in self.pools:
            self.pools[key] = make_pool(key, self.seed)
        return self.pools[key]

    def text(self, n: int, mix: float, rng: random.Random) -> str:
        if n <= 0:
            return ""
        pool = self.pool(mix)
        start = rng.randrange(len(pool))
        out = pool[start : start + n]
        while len(out) < n:
            out += pool[: n - len(out)]
        return out


def density(count: Callable[[list[str]], list[int]], text: str, chunk: int = 4000) -> float:
    """Characters per token of ``text``, counted in chunks the size of a typical item."""
    parts = [text[i : i + chunk] for i in range(0, len(text), chunk)]
    return len(text) / max(1, sum(count(parts)))


def calibrate(
    count: Callable[[list[str]], list[int]], target: float, seed: int = 0, sample: int = 100_000, steps: int = 6
) -> float:
    """The mix (0..1) whose pool density under ``count`` is nearest ``target`` characters per token (bisection:
    density grows with the mix)."""
    lo, hi = 0.0, 1.0
    for _ in range(steps):
        mid = (lo + hi) / 2
        if density(count, make_pool(mid, seed, sample)) < target:
            lo = mid
        else:
            hi = mid
    return round((lo + hi) / 2, 4)
