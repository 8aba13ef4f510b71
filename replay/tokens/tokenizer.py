"""The tokenizer handle every count goes through: a `tokenizers.Tokenizer` with a stable id."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tokenizers import Tokenizer

from replay.errors import ReplayError


@dataclass
class CountingTokenizer:
    """A loaded tokenizer: ``tokenizer_id`` is canonical name + vocabulary digest (the same whichever way the
    tokenizer was given); special-token strings count as plain text. Subclasses may count without ``hf``."""

    name: str
    tokenizer_id: str
    hf: Tokenizer | None
    chat_template: str | None = None
    template_vars: dict = field(default_factory=dict)

    @property
    def tok(self) -> Tokenizer:
        """The Hugging Face tokenizer (a subclass that counts without one overrides every method using it)."""
        if self.hf is None:
            raise ReplayError(f"tokenizer {self.name}: no Hugging Face tokenizer given")
        return self.hf

    def __post_init__(self) -> None:
        self.tok.encode_special_tokens = True  # "<|im_end|>" in a log is text, not a control token
        self.tok.no_truncation()
        self.tok.no_padding()

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without BOS/EOS or template."""
        return self.tok.encode(text, add_special_tokens=False).ids

    def count(self, text: str) -> int:
        return len(self.tok.encode(text, add_special_tokens=False).ids)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Counts for many texts, encoded in parallel on every core."""
        if not texts:
            return []
        fast = getattr(self.tok, "encode_batch_fast", None) or self.tok.encode_batch
        return [len(e.ids) for e in fast(list(texts), add_special_tokens=False)]

    def count_rendered(self, text: str) -> int:
        """Count a rendered chat template, where special-token markup is one control token each."""
        self.tok.encode_special_tokens = False
        try:
            return len(self.tok.encode(text, add_special_tokens=False).ids)
        finally:
            self.tok.encode_special_tokens = True

    # Estimator protocol, so a real tokenizer can stand in where a policy wants an estimator.
    def estimate(self, text: str) -> int:
        return self.count(text)

    def estimate_many(self, texts: Sequence[str]) -> list[int]:
        return self.count_many(texts)
