"""Item previews in `show` and the run pages: one line, control characters visible, cut at the limit; reading
only the head of a long text gives what reading all of it gave."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from replay.reports.show import clean


def _whole(text: str, limit: int) -> str:
    """The preview made from the whole text (what clean gave before it read only the head)."""
    out = text.replace("\r\n", "\n").replace("\n", "⏎ ").replace("\t", " ")
    out = "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in out)
    return out if len(out) <= limit else out[: limit - 1] + "…"


@given(st.text(alphabet="ab \r\n\t\x00\x1bé✓", max_size=400), st.sampled_from([1, 2, 3, 10, 160]))
def test_head_gives_the_whole_text_preview(text: str, limit: int) -> None:
    assert clean.__wrapped__(text, limit) == _whole(text, limit)


def test_carriage_returns_at_the_cut() -> None:
    for limit in (1, 2, 3, 160):
        for text in ("\r" * k + "\n" + "a" * j for k in range(6) for j in range(0, 200, 7)):
            assert clean.__wrapped__(text, limit) == _whole(text, limit), (text, limit)
    assert clean("a\r\nb\tc\x1b") == "a⏎ b c\\x1b"
