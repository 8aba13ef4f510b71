"""Policy settings that cannot act at a window: a trigger at or above window - reserve never fires before the
prompt overflows, and a protected range as large as the usable window leaves nothing to evict.

``simulate``, ``sweep``, ``check``, ``show`` and ``tune`` warn with :func:`window_warnings`, naming the knob, its
value and a value that would act."""

from __future__ import annotations

from typing import Any

from replay.policies.base import PolicyBase

# a suggested trigger: this share of window - reserve (the seed policies' defaults sit near it at 200k - 24k)
SUGGESTED_SHARE = 0.75


def unfit_limits(pol: PolicyBase, window: int, reserve: int) -> list[tuple[str, Any, float]]:
    """(knob, its value, tokens at which it acts) for each window-bound setting of ``pol`` (its class's ``limits``)
    at or above window - reserve: it cannot act before the prompt overflows."""
    usable = window - reserve
    return [(name, getattr(pol.config, name), tokens) for name, tokens in pol.limits(window) if tokens >= usable]


def _would_act(name: str, value: Any, tokens: float, usable: int) -> str:
    """A value of knob ``name`` that acts below ``usable`` tokens, as ``--set name=value``."""
    target = int(usable * SUGGESTED_SHARE) // 1_000 * 1_000 or max(1, usable // 2)
    if value == tokens:  # the knob is in tokens
        return f"--set {name}={target}"
    scaled = value * target / tokens if tokens > 0 else value / 2  # a fraction: scaled to the same trigger
    return f"--set {name}={scaled:.3g}"


def window_warnings(pol: PolicyBase, window: int, reserve: int, what: str = "") -> list[str]:
    """One sentence per window-bound setting of ``pol`` (its class's ``limits``) that cannot act at this window
    and reserve. ``what``: how the sentence names the setting's origin (e.g. ``default``)."""
    usable = window - reserve
    out = []
    for name, value, tokens in unfit_limits(pol, window, reserve):
        shown = f"{tokens:,.0f}" if value == tokens else f"{value:g} (= {tokens:,.0f} tokens)"
        effect = (
            "the protected range covers the whole usable window, so nothing can be evicted"
            if name.startswith("protect")
            else "it never fires before the prompt overflows"
        )
        out.append(
            f"{pol.name}'s {what + ' ' if what else ''}{name} {shown} is at or above window - reserve ({window:,} - "
            f"{reserve:,} = {usable:,}): {effect}; {_would_act(name, value, tokens, usable)} would act"
        )
    return out
