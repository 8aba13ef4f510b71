"""JSON lines parsed by orjson where it gives exactly what :func:`json.loads` gives."""

from __future__ import annotations

import json
from typing import Any

import orjson

# orjson reads an integer past 64 bits as a float, and nests without json's recursion limit: a line with 19 digits
# in a row (a big number, or only a long id inside a string) or with many brackets is left to json
_DIGITS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))  # digits stay, the rest become spaces
_LONG_RUN = b"0" * 19
MAX_BRACKETS = 900


def loads_line(raw: bytes, text: str) -> Any:
    """``json.loads(text)`` for the line ``raw`` (its UTF-8 bytes), parsed by orjson (several times faster).

    A line orjson refuses (NaN and Infinity, lone surrogate escapes, malformed text) or may read differently (see
    above) is parsed by json, so the values, the JSONDecodeError messages and the RecursionError are the standard
    library's."""
    if _LONG_RUN in raw.translate(_DIGITS) or raw.count(b"[") + raw.count(b"{") > MAX_BRACKETS:
        return json.loads(text)
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(text)
