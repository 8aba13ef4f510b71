"""Progress for long work, written to stderr: bars for counted work, a named step for the rest."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn


def bar(count: bool = False) -> Progress:
    columns = [
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn() if count else TextColumn("{task.percentage:>3.0f}%"),
        TimeRemainingColumn(),
    ]
    return Progress(*columns, console=Console(stderr=True), transient=False)


@contextmanager
def step(label: str, console: Console | None = None) -> Iterator[None]:
    """Say ``label ...`` on stderr before the work (a spinner with the elapsed time on a terminal) and
    ``label: N.Ns`` after it, so no step runs without a word."""
    err = console or Console(stderr=True)
    t0 = time.perf_counter()
    if err.is_terminal:
        with err.status(f"{label} ...", spinner="dots"):
            yield
    else:
        err.print(f"{label} ...", highlight=False, markup=False)
        yield
    err.print(f"{label}: {time.perf_counter() - t0:.1f}s", highlight=False, markup=False)
