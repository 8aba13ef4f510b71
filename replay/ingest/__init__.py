"""Ingest: find agent logs (``discover``), read them into rows in worker processes (``parse``) and write each
file in one transaction (``write``), DuckDB's memory bounded meanwhile (``memory``).

The names below are the package's public API, as they were when it was one module.
"""

from replay.ingest.parse import Parsed, batches, file_hash, members, parse_unit, parse_units, unit_size
from replay.ingest.write import (
    POOL_MIN_BYTES,
    SKIP_NAMES,
    FileOutcome,
    Stored,
    expand_glob,
    expand_paths,
    ingest,
    ingest_file,
    ingest_units,
    store_files,
    store_parsed,
    watch,
)

__all__ = [
    "POOL_MIN_BYTES",
    "SKIP_NAMES",
    "FileOutcome",
    "Parsed",
    "Stored",
    "batches",
    "expand_glob",
    "expand_paths",
    "file_hash",
    "ingest",
    "ingest_file",
    "ingest_units",
    "members",
    "parse_unit",
    "parse_units",
    "store_files",
    "store_parsed",
    "unit_size",
    "watch",
]
