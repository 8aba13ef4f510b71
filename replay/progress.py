"""Progress bars for long work (rich), written to stderr."""

from __future__ import annotations

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
