"""Count many texts on every core with an encoder that releases the GIL while it encodes (tiktoken's core does)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence, Sized
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from itertools import accumulate

SERIAL_CHARS = 200_000  # below this a thread pool costs more than it saves
SLICES_PER_THREAD = 4  # contiguous slices per thread, so one long text does not leave a core idle for long


def cores() -> int:
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def slices(texts: Sequence[str], n: int) -> list[tuple[int, int]]:
    """``n`` contiguous (start, stop) ranges of ``texts`` holding about the same number of characters each."""
    ends = list(accumulate(len(t) for t in texts))
    total = ends[-1] if ends else 0
    bounds, i = [0], 0
    for k in range(1, n):
        while i < len(texts) and ends[i] < total * k / n:
            i += 1
        bounds.append(max(bounds[-1], min(i + 1, len(texts))))
    bounds.append(len(texts))
    return [(a, b) for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


def count_threaded(encode: Callable[[str], Sized], texts: Sequence[str], threads: int = 0) -> list[int]:
    """``len(encode(t))`` for every text, in order, on ``threads`` threads (0: every core)."""
    threads = threads or cores()
    if threads == 1 or sum(len(t) for t in texts) < SERIAL_CHARS:
        return [len(encode(t)) for t in texts]

    def run(span: tuple[int, int]) -> list[int]:
        return [len(encode(t)) for t in texts[span[0] : span[1]]]

    parts = _pool(threads).map(run, slices(texts, threads * SLICES_PER_THREAD))
    return [n for part in parts for n in part]


@cache
def _pool(threads: int) -> ThreadPoolExecutor:
    """One lasting pool per size: tiktoken keeps its regex state per thread, so the same threads stay warm (and
    fresh threads each batch would each grow their own copy)."""
    return ThreadPoolExecutor(threads, thread_name_prefix="replay-count")
