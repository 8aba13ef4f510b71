"""Typed access to fields of untrusted JSON: a field that should be an object or an array may be anything."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def sub_dict(obj: Mapping[str, Any], key: str) -> dict[str, Any]:
    """``obj[key]`` when it is a JSON object, else an empty one."""
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def sub_list(obj: Mapping[str, Any], key: str) -> list[Any]:
    """``obj[key]`` when it is a JSON array, else an empty one."""
    value = obj.get(key)
    return value if isinstance(value, list) else []
