"""Policy settings that cannot act at a window: a trigger at or above window - reserve never fires before the
prompt overflows, and a protected range as large as the usable window leaves nothing to evict.

``simulate``, ``sweep``, ``check``, ``show`` and ``tune`` warn with :func:`window_warnings`, naming the knob, its
value and a value that would act."""

from __future__ import annotations

from typing import Any

# a suggested trigger: this share of window - reserve (the seed policies' defaults sit near it at 200k - 24k)
SUGGESTED_SHARE = 0.75


def limit_tokens(policy: str, cfg: Any, window: int) -> list[tuple[str, float]]:
    """(knob, tokens at which it acts) for the window-bound settings of ``policy`` under config ``cfg``."""
    if policy in ("seed_a", "seed_a_before"):
        out = [("summary_at", cfg.summary_at)]
        return out + ([("protect", cfg.protect)] if cfg.protect > 1 else [])
    if policy == "clear_tool_uses" and cfg.trigger_type == "input_tokens":
        return [("trigger", cfg.trigger)]
    if policy == "auto_compact":
        base = (cfg.context_window or window) - cfg.output_reserve
        return [("threshold", cfg.threshold * base - cfg.buffer_tokens)]
    if policy == "openhands_tokens" and cfg.max_tokens:
        return [("max_tokens", cfg.max_tokens)]
    if policy == "seed_c" and cfg.spill_tokens:
        return [("spill_tokens", cfg.spill_tokens)]
    return []


def _would_act(name: str, value: Any, tokens: float, usable: int) -> str:
    """A value of knob ``name`` that acts below ``usable`` tokens, as ``--set name=value``."""
    target = int(usable * SUGGESTED_SHARE) // 1_000 * 1_000 or max(1, usable // 2)
    if value == tokens:  # the knob is in tokens
        return f"--set {name}={target}"
    scaled = value * target / tokens if tokens > 0 else value / 2  # a fraction: scaled to the same trigger
    return f"--set {name}={scaled:.3g}"


def window_warnings(policy: str, cfg: Any, window: int, reserve: int, what: str = "") -> list[str]:
    """One sentence per setting of ``policy`` (config ``cfg``) that cannot act at this window and reserve.
    ``what``: how the sentence names the setting's origin (e.g. ``default``)."""
    usable = window - reserve
    out = []
    for name, tokens in limit_tokens(policy, cfg, window):
        if tokens < usable:
            continue
        value = getattr(cfg, name)
        shown = f"{tokens:,.0f}" if value == tokens else f"{value:g} (= {tokens:,.0f} tokens)"
        effect = (
            "the protected range covers the whole usable window, so nothing can be evicted"
            if name == "protect"
            else "it never fires before the prompt overflows"
        )
        out.append(
            f"{policy}'s {what + ' ' if what else ''}{name} {shown} is at or above window - reserve ({window:,} - "
            f"{reserve:,} = {usable:,}): {effect}; {_would_act(name, value, tokens, usable)} would act"
        )
    return out
