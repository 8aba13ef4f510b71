"""Typed, frozen policy configs: unknown keys are errors, values coerced from `--set k=v` strings, bounds checked."""

from __future__ import annotations

import dataclasses
import json
import math
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar

from replay.errors import ReplayError


def knob(default: Any, lo: float | None = None, hi: float | None = None, doc: str = "") -> Any:
    """A config field with bounds and a docstring."""
    kw: dict[str, Any] = {"metadata": {"lo": lo, "hi": hi, "doc": doc}}
    if isinstance(default, (list, dict, set)):
        raise TypeError("use a tuple for sequence defaults")
    return field(default=default, **kw)


def _coerce(name: str, value: Any, typ: Any) -> Any:
    origin = typing.get_origin(typ)
    if typ is bool:
        if isinstance(value, str):
            if value.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ReplayError(f"{name}={value!r}: expected true or false")
            return value.lower() in ("true", "1", "yes")
        if isinstance(value, bool) or value in (0, 1):
            return bool(value)
        raise ReplayError(f"{name}={value!r}: expected true or false")
    if typ in (int, float):
        if isinstance(value, bool):
            raise ReplayError(f"{name}={value!r}: expected a number, not true/false")
        try:
            num = float(value)
        except (TypeError, ValueError, OverflowError):
            raise ReplayError(f"{name}={value!r}: expected a number") from None
        if not math.isfinite(num):
            raise ReplayError(f"{name}={value!r}: expected a finite number")
        if typ is int and num != int(num):
            raise ReplayError(f"{name}={value!r}: expected an integer")
        return typ(num)
    if origin is tuple:
        items = value.split(",") if isinstance(value, str) else list(value)
        return tuple(s.strip() for s in items if str(s).strip())
    if origin is typing.Literal:
        if value not in typing.get_args(typ):
            raise ReplayError(f"{name}={value!r}: choose one of {', '.join(map(str, typing.get_args(typ)))}")
        return value
    return str(value) if typ is str else value


def _range(lo: float | None, hi: float | None) -> str:
    if lo is None:
        return "any number" if hi is None else f"at most {hi:,}"
    return f"at least {lo:,}" if hi is None else f"{lo:,} to {hi:,}"


@dataclass(frozen=True)
class PolicyConfig:
    """Base of every policy config. ``kind`` names the policy; subclasses add knobs."""

    kind: ClassVar[str] = "base"

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            lo, hi = f.metadata.get("lo"), f.metadata.get("hi")
            v = getattr(self, f.name)
            if isinstance(v, float) and not math.isfinite(v):
                raise ReplayError(f"{self.kind}: {f.name}={v} is not a finite number; allowed: {_range(lo, hi)}")
            if lo is not None and v < lo or hi is not None and v > hi:
                raise ReplayError(f"{self.kind}: {f.name}={v} out of bounds; allowed: {_range(lo, hi)}")
        self.validate()

    def validate(self) -> None:
        """Cross-field checks; raise ReplayError."""

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> PolicyConfig:
        """Build from a dict (values may be `--set` strings); unknown keys are errors."""
        hints = typing.get_type_hints(cls)
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = sorted(set(params) - set(fields))
        if unknown:
            raise ReplayError(
                f"{cls.kind}: unknown parameter(s) {', '.join(unknown)}; known: {', '.join(sorted(fields)) or '(none)'}"
            )
        return cls(**{k: _coerce(k, v, hints[k]) for k, v in params.items()})

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, **dataclasses.asdict(self)}

    def to_json(self) -> str:
        return json.dumps(self.as_dict(), sort_keys=True)

    @classmethod
    def describe(cls) -> list[tuple[str, Any, str]]:
        """(name, default, doc) for --show-config and help."""
        return [(f.name, f.default, f.metadata.get("doc", "")) for f in dataclasses.fields(cls)]


def parse_sets(pairs: list[str]) -> dict[str, str]:
    """['k=v', ...] -> dict, with a clear error for a malformed pair."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ReplayError(f"--set {pair!r}: expected key=value")
        out[key.strip()] = value.strip()
    return out
