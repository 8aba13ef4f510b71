"""Cline's truncation range, as ContextManager.getNextTruncationRange computes it."""

from __future__ import annotations

from replay.readers.cline_truncation import next_truncation_range

ROLES = ["user", "assistant"] * 8  # 16 messages


def test_half_of_the_rest_after_the_first_pair() -> None:
    assert next_truncation_range(ROLES, None, quarter=False) == [2, 7]  # 14 after the pair: remove 6 (3 pairs)


def test_three_quarters_and_from_the_range_already_deleted() -> None:
    assert next_truncation_range(ROLES, None, quarter=True) == [2, 11]  # 14 * 3 / 4 / 2 = 5 pairs
    assert next_truncation_range(ROLES, [2, 7], quarter=False) == [2, 11]  # 8 after 7: remove 4


def test_the_range_ends_on_an_assistant_message() -> None:
    roles = ["user", "assistant", "user", "user", "assistant", "user", "assistant", "user"]
    assert next_truncation_range(roles, None, quarter=False) == [2, 2]  # ends at 3, a user message: back one
