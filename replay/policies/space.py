"""A policy's tuning space: the knobs `replay tune` sweeps, each a range relative to the window or absolute."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Knob:
    """One tuned parameter: a range [lo, hi] (times the window when ``relative``) and the value used alone."""

    name: str
    lo: float
    hi: float
    mid: float
    integer: bool = False
    relative: bool = False
    weight: float = 1.0  # share of the grid's levels
    step: int = 100  # integer values are rounded to this
    prefer: str = ""  # "high" or "low": the safer side, breaks exact ties between points
    usable: bool = False  # a trigger that must fire below window - reserve: the range is capped there

    def cap(self, window: int, reserve: int) -> float | None:
        """The highest value that still fits (in the knob's unit), or None when the knob has no such limit."""
        if not self.usable or window <= 0:
            return None
        return (window - reserve) if self.relative else (window - reserve) / window

    def bounds(self, window: int, reserve: int = 0) -> tuple[float, float]:
        """(lo, hi) in the knob's own unit (tokens for relative knobs), hi capped at the usable window."""
        scale = window if self.relative else 1
        lo, hi = self.lo * scale, self.hi * scale
        cap = self.cap(window, reserve)
        if cap is not None and hi > cap:
            hi = max(lo, cap * 0.98)  # a trigger right at the limit leaves no room for the next request
        return lo, hi

    def values(self, levels: int, window: int, reserve: int = 0) -> list[Any]:
        """``levels`` evenly spaced values over the bounds (the middle value alone when ``levels`` is 1)."""
        lo, hi = self.bounds(window, reserve)
        mid = min(self.mid * (window if self.relative else 1), hi)
        raw = [mid] if levels == 1 else [lo + (hi - lo) * i / (levels - 1) for i in range(levels)]
        out: list[float]
        if self.integer:
            out = [int(round(v / self.step) * self.step) for v in raw]
            cap = self.cap(window, reserve)
            if cap is not None:
                out = [min(v, int(cap // self.step) * self.step) for v in out]
        else:
            out = [round(v, 4) for v in raw]
        return list(dict.fromkeys(out))
