"""Reading a small text file the user names (a sweep, policy or price file): bounded, regular files only."""

from __future__ import annotations

import stat
from pathlib import Path

from replay.errors import ReplayError

MAX_CONFIG_BYTES = 4 << 20  # a sweep, policy or price file is a few kilobytes; 4 MiB is already a mistake


def read_config_text(path: Path | str, what: str) -> str:
    """The UTF-8 text of ``path``; a clear error when it is missing, not a regular file (a FIFO, /dev/zero, a
    folder), larger than MAX_CONFIG_BYTES, or not UTF-8. ``what`` names the file in messages ("--prices FILE")."""
    path = Path(path)
    try:
        mode = path.stat().st_mode
        if not stat.S_ISREG(mode):
            kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file (a pipe, device or socket)"
            raise ReplayError(f"{what} {path}: {kind}; give a TOML or JSON file")
        with path.open("rb") as f:
            data = f.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        raise ReplayError(f"{what} {path}: no such file") from None
    except OSError as exc:
        raise ReplayError(f"{what} {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ReplayError(f"{what} {path}: larger than {MAX_CONFIG_BYTES >> 20} MiB; is this the right file?")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ReplayError(f"{what} {path}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
