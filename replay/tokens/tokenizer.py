"""The tokenizer handle every count goes through: a `tokenizers.Tokenizer` with a stable id."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tokenizers import Tokenizer


@dataclass
class CountingTokenizer:
    """A loaded tokenizer: ``tokenizer_id`` is canonical name + vocabulary digest (the same whichever way the
    tokenizer was given); special-token strings count as plain text. Subclasses may count without ``hf``."""

    name: str
    tokenizer_id: str
    hf: Tokenizer | None
    chat_template: str | None = None
    template_vars: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.hf.encode_special_tokens = True  # "<|im_end|>" in a log is text, not a control token
        self.hf.no_truncation()
        self.hf.no_padding()

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` without BOS/EOS or template."""
        return self.hf.encode(text, add_special_tokens=False).ids

    def count(self, text: str) -> int:
        return len(self.hf.encode(text, add_special_tokens=False).ids)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Counts for many texts, encoded in parallel on every core."""
        if not texts:
            return []
        fast = getattr(self.hf, "encode_batch_fast", None) or self.hf.encode_batch
        return [len(e.ids) for e in fast(list(texts), add_special_tokens=False)]

    def count_rendered(self, text: str) -> int:
        """Count a rendered chat template, where special-token markup is one control token each."""
        self.hf.encode_special_tokens = False
        try:
            return len(self.hf.encode(text, add_special_tokens=False).ids)
        finally:
            self.hf.encode_special_tokens = True

    # Estimator protocol, so a real tokenizer can stand in where a policy wants an estimator.
    def estimate(self, text: str) -> int:
        return self.count(text)

    def estimate_many(self, texts: Sequence[str]) -> list[int]:
        return self.count_many(texts)
