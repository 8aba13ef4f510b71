"""Log content is data: how text from a log becomes safe for each kind of output.

A log holds other people's sessions and tool outputs; its text must never act on the terminal (escape sequences,
cursor moves, clipboard writes through OSC 52) or reorder what is shown (bidirectional overrides)."""

from __future__ import annotations

import re

# C0 and C1 controls (ESC among them), DEL, line and paragraph separators, bidirectional embeddings and isolates
_TERMINAL_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def for_terminal(text: str) -> str:
    """``text`` with every control character and direction override shown as a visible escape (``\\x1b``)."""
    return _TERMINAL_UNSAFE.sub(_escape, text)
