"""The context window inspect_ai resolves a fractional compaction threshold against, from its own model database.

inspect_ai's ``_resolve_threshold`` (model/_compaction/_compaction.py, 0.3.209 to 0.3.285) takes
``int(threshold x get_model_input_tokens(model))`` for a threshold of at most 1.0; ``get_model_input_tokens`` looks
the model's ``input_tokens_name()`` (its canonical name: ``<provider>/<model>`` for the providers below, the bare
Hugging Face style name for ``together``) up in the database its wheel ships (``model/_model_data/*.yml``), and the
entry's ``input_tokens`` (else ``context_length``) is the window. ``inspect_models.json`` holds that database per
version: read at the git tags 0.3.209 to 0.3.260 and in the 0.3.285 wheel (``about`` in the file).

Only what inspect_ai does for a name its database holds is reproduced: the exact key, else the key that matches
case-insensitively with ``_`` read as ``-`` (``_lookup_in_db``'s first two stages). A name it does not hold is
not given a window: inspect_ai then tries a fuzzy match over the whole database (its winner among equal scores
depends on the order the yml files are listed in), aliases unregistered or pre-release names to a provider's
frontier model, or falls back to 128,000 (vLLM and similar servers register their own window at the first call);
none of these is certain from the log. A version between 0.3.260 and 0.3.285 (not read) takes the window only
where both give the same; a version after 0.3.285 none. ``set_model_info()`` overrides are not logged.
"""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files
from typing import NamedTuple

Version = tuple[int, int, int]
# providers whose canonical name is "<prefix>/<service model name>" (their ModelAPI.canonical_name in 0.3.285)
CANONICAL_PREFIX = {
    "openai": "openai",
    "anthropic": "anthropic",
    "google": "google",
    "grok": "grok",
    "mistral": "mistral",
    "deepseek": "deepseek",
    "moonshot": "moonshotai",
}
BARE = ("together",)  # canonical name: the service model name itself (Hugging Face style)


class Window(NamedTuple):
    """A window in tokens, or None and why there is none."""

    tokens: int | None
    why: str = ""


def _version(text: str) -> Version:
    major, minor, patch = (int(x) for x in text.split("."))
    return major, minor, patch


@cache
def _database() -> tuple[tuple[Version, ...], dict[str, list[tuple[Version, int | None]]]]:
    doc = json.loads(files("replay.policies").joinpath("inspect_models.json").read_text(encoding="utf-8"))
    read = tuple(_version(v) for v in doc["read"])
    models = {k: [(_version(v), w) for v, w in h] for k, h in doc["models"].items()}
    return read, models


@cache
def _table(version: Version) -> dict[str, int]:
    """The database of a version read: key -> window."""
    _, models = _database()
    out: dict[str, int] = {}
    for key, history in models.items():
        held = [w for v, w in history if v <= version]
        if held and held[-1] is not None:
            out[key] = held[-1]
    return out


def canonical_name(model: str) -> str | None:
    """The name inspect_ai looks a logged model (``<provider>/<model>``) up by; None for a provider not covered."""
    provider, _, name = model.partition("/")
    if not name or "/" in name and provider != "together":
        return None  # a service in the path (openai/azure/...) or no provider
    if provider in CANONICAL_PREFIX:
        return f"{CANONICAL_PREFIX[provider]}/{name}"
    return name if provider in BARE else None


def _lookup(version: Version, name: str) -> Window:
    table = _table(version)
    if name in table:
        return Window(table[name])
    norm = name.lower().replace("_", "-")
    found = {table[k] for k in table if k.lower().replace("_", "-") == norm}
    if len(found) == 1:
        return Window(found.pop())
    if found:
        return Window(None, f"{name} matches database keys of different windows in inspect_ai {_text(version)}")
    return Window(None, f"{name} is not in inspect_ai {_text(version)}'s model database by name")


def _text(version: Version) -> str:
    return ".".join(str(x) for x in version)


def inspect_window(version: Version, model: str) -> Window:
    """The window inspect_ai ``version`` resolves a fractional threshold of ``model`` (the log's model string)
    against."""
    name = canonical_name(model)
    if name is None:
        return Window(None, f"the model database name of {model} is not reproduced (provider not covered)")
    read, _ = _database()
    if version in read:
        return _lookup(version, name)
    older = [v for v in read if v < version]
    newer = [v for v in read if v > version]
    if not older or not newer:
        return Window(
            None,
            f"inspect_ai {_text(version)}'s model database was not read (read: {_text(read[0])} to {_text(read[-1])})",
        )
    low, high = _lookup(older[-1], name), _lookup(newer[0], name)
    if low.tokens is not None and low.tokens == high.tokens:
        return low
    return Window(
        None,
        f"inspect_ai {_text(version)}'s model database was not read and {name}'s window differs "
        f"between {_text(older[-1])} and {_text(newer[0])}",
    )
