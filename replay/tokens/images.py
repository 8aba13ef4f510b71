"""What an image costs in the prompt, in the serving model's tokens, from its pixel size where the provider documents
the rule.

Anthropic (Claude models; "Vision" in Anthropic's documentation): an image costs width x height / 750 tokens, after
the server scales it down, keeping its aspect ratio, until its long edge is at most 1,568 pixels and it costs about
1,600 tokens at most (1,092 x 1,092: 1,590). The log's placeholder counts a few tokens in its place. Other providers
are not modelled here: their images stay at the placeholder's count, which is what ``replay tokens`` counted.
"""

from __future__ import annotations

import math

ANTHROPIC_PIXELS_PER_TOKEN = 750
ANTHROPIC_LONG_EDGE = 1568
ANTHROPIC_MAX_TOKENS = 1600


def anthropic_image_tokens(width: int, height: int) -> int:
    """Tokens of a ``width`` x ``height`` image on Anthropic's API (see the module docstring)."""
    scale = min(
        1.0,
        ANTHROPIC_LONG_EDGE / max(width, height),
        math.sqrt(ANTHROPIC_MAX_TOKENS * ANTHROPIC_PIXELS_PER_TOKEN / (width * height)),
    )
    w, h = max(int(width * scale), 1), max(int(height * scale), 1)
    return min(math.ceil(w * h / ANTHROPIC_PIXELS_PER_TOKEN), ANTHROPIC_MAX_TOKENS)


def image_tokens(model: str | None, width: int, height: int) -> int | None:
    """Tokens of a ``width`` x ``height`` image for ``model``; None where the provider's rule is not modelled."""
    if width <= 0 or height <= 0:
        return None
    if "claude" in (model or "").lower():
        return anthropic_image_tokens(width, height)
    return None
