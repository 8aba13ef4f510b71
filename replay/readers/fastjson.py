"""JSON parsed by orjson where it gives exactly what :func:`json.loads` gives."""

from __future__ import annotations

import json
from typing import Any

import orjson

# orjson reads an integer past 64 bits as a float, and nests without json's recursion limit: a line with 19 digits
# in a row (a big number, or only a long id inside a string) or with many brackets is left to json
_DIGITS = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))  # digits stay, the rest become spaces
_LONG_RUN = b"0" * 19
MAX_BRACKETS = 900
# Past this size the text is not scanned (a copy as large as the line, and brackets inside long strings would send
# every big tool output to json): the parsed value is checked instead, which costs per value, not per byte
SCAN_BYTES = 1 << 20
BIG_FLOAT = float(1 << 63)  # an integral float this large may be an integer orjson could not hold


def loads_line(raw: bytes, text: str | None = None) -> Any:
    """``json.loads(text)`` for the line ``raw`` (its UTF-8 bytes; ``text``, its decoded form, only when already at
    hand), parsed by orjson (several times faster).

    A line orjson refuses (NaN and Infinity, lone surrogate escapes, malformed text) or may read differently (see
    above) is parsed by json, so the values, the JSONDecodeError messages, the RecursionError and the
    UnicodeDecodeError of a line that is not UTF-8 are the standard library's."""
    if len(raw) > SCAN_BYTES:
        return loads_large(raw)
    if _LONG_RUN in raw.translate(_DIGITS) or raw.count(b"[") + raw.count(b"{") > MAX_BRACKETS:
        return json.loads(raw.decode("utf-8") if text is None else text)
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw.decode("utf-8") if text is None else text)


def loads_large(raw: bytes | memoryview) -> Any:
    """:func:`loads_line` for a large line or document, with no copy of its text when orjson reads it: the value is
    checked after parsing (nesting depth, integral floats past 64 bits) and parsed again by json only then."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(bytes(raw).decode("utf-8"))
    return json.loads(bytes(raw).decode("utf-8")) if _json_may_differ(value) else value


def _json_may_differ(value: Any) -> bool:
    """True when json could read the text of ``value`` differently: nested past MAX_BRACKETS, or holding an integral
    float of 2**63 or more (orjson's reading of a larger integer). Walks containers only, never string contents."""
    if not isinstance(value, (dict, list)):
        return isinstance(value, float) and abs(value) >= BIG_FLOAT and value.is_integer()
    todo: list[tuple[Any, int]] = [(value, 1)]
    while todo:
        node, depth = todo.pop()
        children = node.values() if isinstance(node, dict) else node
        for child in children:
            if isinstance(child, (dict, list)):
                if depth >= MAX_BRACKETS:
                    return True
                todo.append((child, depth + 1))
            elif isinstance(child, float) and abs(child) >= BIG_FLOAT and child.is_integer():
                return True
    return False
