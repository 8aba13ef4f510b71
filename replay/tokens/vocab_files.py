"""Reading tokenizer files safely: every failure (unreadable, not UTF-8, not JSON, wrong shape) is one ReplayError
line naming the file, what is wrong and what to do."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from replay.errors import ReplayError


def as_path(spec: str | Path) -> Path:
    """``spec`` as a path, ``~`` expanded where a home directory is known."""
    try:
        return Path(spec).expanduser()
    except RuntimeError:  # "~nosuchuser/..."
        return Path(spec)


@contextmanager
def os_errors(path: Path) -> Iterator[None]:
    """Turn an OS error while reading ``path`` (or a file it leads to) into one ReplayError line."""
    try:
        yield
    except OSError as exc:
        where = exc.filename or path
        raise ReplayError(
            f"{where}: cannot be read ({exc.strerror or exc}); check the path and its permissions"
        ) from None


def path_kind(path: Path) -> str | None:
    """ "dir" or "file" for an existing path, None for a missing one or a name the system cannot look up (too
    long, a NUL byte), so a strange ``-t`` value is "no such file", never a traceback."""
    try:
        if path.is_dir():
            return "dir"
        return "file" if path.is_file() else None
    except (OSError, ValueError):
        return None


def read_bytes(path: Path, fix: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ReplayError(f"{path}: cannot be read ({exc.strerror or exc}); {fix}") from None


def read_json(path: Path, fix: str) -> Any:
    """The JSON document in ``path`` (UTF-8); ``fix`` says what to do when it is not one."""
    data = read_bytes(path, fix)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ReplayError(f"{path}: not UTF-8 text (byte {exc.start}); {fix}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReplayError(
            f"{path}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); {fix}"
        ) from None
    except RecursionError:
        raise ReplayError(f"{path}: JSON nested too deep to read; {fix}") from None


def want(path: Path, where: str, value: Any, kinds: type | tuple[type, ...], wanted: str, fix: str) -> Any:
    """``value`` when it is one of ``kinds``, else an error naming the key, what it holds and what is wanted."""
    if isinstance(value, kinds) and (not isinstance(value, bool) or bool in _as_tuple(kinds)):
        return value
    raise ReplayError(f"{path}: {where} is {_describe(value)}, want {wanted}; {fix}")


def _as_tuple(kinds: type | tuple[type, ...]) -> tuple[type, ...]:
    return kinds if isinstance(kinds, tuple) else (kinds,)


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) <= 40 else text[:40] + '...'}"
