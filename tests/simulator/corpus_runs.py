"""Picking one corpus run by the start of its id."""

from __future__ import annotations


def one_run(runs: dict, part: str):
    """The one run of ``runs`` whose id starts with ``part``."""
    found = [r for rid, r in runs.items() if rid.startswith(part)]
    assert len(found) == 1, part
    return found[0]
