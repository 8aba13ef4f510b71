"""Chat-template overhead from a sandboxed template, else the documented constant."""

from __future__ import annotations

import pytest

from replay.errors import ReplayError
from replay.tokens import DEFAULT_OVERHEAD, load_tokenizer, template_overhead
from replay.tokens.template import render

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def test_default_constant_without_template():
    assert template_overhead(load_tokenizer("tekken")) == DEFAULT_OVERHEAD
    assert DEFAULT_OVERHEAD.for_role("user") == 4


def test_overhead_measured_from_template():
    tok = load_tokenizer("tekken")
    over = template_overhead(tok, CHATML)
    assert over.source == "template"
    per_msg = tok.count_rendered("<|im_start|>user\nxq<|im_end|>\n") - tok.count("xq")
    assert over.per_message["user"] == per_msg
    assert over.fixed == tok.count_rendered("<|im_start|>assistant\n")


def test_sandbox_blocks_escapes():
    with pytest.raises(Exception):  # noqa: B017 - jinja2 SecurityError or ReplayError
        render("{{ ''.__class__.__mro__[1].__subclasses__() }}", [])
    with pytest.raises(ReplayError, match="no system"):
        render("{{ raise_exception('no system role') }}", [])
