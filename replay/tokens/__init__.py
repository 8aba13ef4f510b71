"""Tokens: loading real tokenizers, chat-template overhead, estimators, cached counting and calibration."""

from replay.tokens.counting import count_items
from replay.tokens.estimators import Chars4, CJKChars4, Estimator, ProxyTokenizer, default_estimators
from replay.tokens.loading import builtin_names, load_tokenizer
from replay.tokens.resolve import resolve_tokenizer
from replay.tokens.template import DEFAULT_OVERHEAD, Overhead, template_overhead
from replay.tokens.tokenizer import CountingTokenizer

__all__ = [
    "CJKChars4",
    "Chars4",
    "CountingTokenizer",
    "DEFAULT_OVERHEAD",
    "Estimator",
    "Overhead",
    "ProxyTokenizer",
    "builtin_names",
    "count_items",
    "default_estimators",
    "load_tokenizer",
    "resolve_tokenizer",
    "template_overhead",
]
