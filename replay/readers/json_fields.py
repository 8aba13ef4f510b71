"""Typed access to fields of untrusted JSON: a field that should be an object, an array or a time may be anything."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any


def sub_dict(obj: Mapping[str, Any], key: str) -> dict[str, Any]:
    """``obj[key]`` when it is a JSON object, else an empty one."""
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def sub_list(obj: Mapping[str, Any], key: str) -> list[Any]:
    """``obj[key]`` when it is a JSON array, else an empty one."""
    value = obj.get(key)
    return value if isinstance(value, list) else []


def epoch_ms_iso(ms: Any) -> Any:
    """A millisecond epoch (JavaScript's Date.now(), as Cline writes it) as an ISO-8601 UTC string; None for what is
    not a number. A number no date can hold is handed on as it is: ingest quarantines the field, naming the line."""
    if not isinstance(ms, int | float) or isinstance(ms, bool):
        return None
    try:
        return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return ms


def json_args(args: Any) -> Any:
    """Tool-call arguments logged as a JSON string, parsed (as logged when they are not JSON)."""
    if isinstance(args, str):
        try:
            return json.loads(args)
        except ValueError:
            return args
    return args
