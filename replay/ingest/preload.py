"""Imported once by the ingest pool's forkserver (replay.ingest.parse), so that no worker loads these itself before
its first result while the parent waits: every reader, with the installed reader plugins (their entry points take
~30 ms to list), and pandas, which pyarrow imports at a worker's first ``pa.array`` when it is installed (~0.3 s)."""

from __future__ import annotations

import importlib.util

from replay.readers import readers

readers()
if importlib.util.find_spec("pandas") is not None:
    import pandas  # noqa: F401
