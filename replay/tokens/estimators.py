"""Token estimators policies decide with: chars/4, CJK-aware chars/4 with a flat image cost, a proxy tokenizer."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import polars as pl

if TYPE_CHECKING:
    from replay.tokens.tokenizer import CountingTokenizer

# Han, kana, Hangul and full-width forms: each char is roughly a token, not a quarter of one.
CJK = r"[\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\x{3000}-\x{303F}\x{FF00}-\x{FFEF}]"
IMAGE_PREFIXES = ("data:image/", "[image")


class Estimator(Protocol):
    """What a policy needs: a count for one text, and counts for many in one call."""

    @property
    def name(self) -> str: ...

    def estimate(self, text: str) -> int: ...

    def estimate_many(self, texts: Sequence[str]) -> list[int]: ...


@dataclass(frozen=True)
class Chars4:
    """ceil(chars / 4): the classic rule of thumb."""

    name: str = "chars4"

    def estimate(self, text: str) -> int:
        return math.ceil(len(text) / 4)

    def estimate_many(self, texts: Sequence[str]) -> list[int]:
        chars = pl.Series(list(texts), dtype=pl.String).fill_null("").str.len_chars()
        return ((chars + 3) // 4).cast(pl.Int64).to_list()


@dataclass(frozen=True)
class CJKChars4:
    """ceil(other chars / 4 + CJK chars * cjk_per_char); an image (data URL or placeholder) costs image_tokens."""

    cjk_per_char: float = 1.0
    image_tokens: int = 1600  # ~ a 1092x1092 image under Anthropic's (w*h)/750 rule
    name: str = "cjk_chars4"

    def estimate(self, text: str) -> int:
        return self.estimate_many([text])[0]

    def estimate_many(self, texts: Sequence[str], kinds: Sequence[str | None] | None = None) -> list[int]:
        s = pl.Series(list(texts), dtype=pl.String).fill_null("")
        chars = s.str.len_chars().cast(pl.Float64)
        cjk = s.str.count_matches(CJK).cast(pl.Float64)
        est = ((chars - cjk) / 4 + cjk * self.cjk_per_char).ceil().cast(pl.Int64)
        image = s.str.starts_with(IMAGE_PREFIXES[0]) | s.str.starts_with(IMAGE_PREFIXES[1])
        if kinds is not None:
            image = image | (pl.Series(list(kinds), dtype=pl.String) == "image").fill_null(False)
        return pl.select(pl.when(image).then(self.image_tokens).otherwise(est)).to_series().to_list()

    def estimate_kind(self, text: str, kind: str | None) -> int:
        return self.estimate_many([text], [kind])[0]


@dataclass
class ProxyTokenizer:
    """A different tokenizer standing in for the model's (e.g. legacy Claude for Claude 3+), times ``scale``."""

    tokenizer: CountingTokenizer
    scale: float = 1.0
    name: str = "proxy"

    def __post_init__(self) -> None:
        if self.name == "proxy":
            self.name = f"proxy:{self.tokenizer.name}"

    def estimate(self, text: str) -> int:
        return round(self.tokenizer.count(text) * self.scale)

    def estimate_many(self, texts: Sequence[str]) -> list[int]:
        return [round(n * self.scale) for n in self.tokenizer.count_many(texts)]


def default_estimators(proxy: CountingTokenizer | None = None) -> list[Estimator]:
    """chars/4, CJK-aware chars/4 and, when a proxy tokenizer is given, the proxy."""
    out: list[Estimator] = [Chars4(), CJKChars4()]
    if proxy is not None:
        out.append(ProxyTokenizer(proxy))
    return out
