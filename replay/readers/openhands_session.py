"""OpenHands V0 conversations as the server stores them: ``sessions/<conversation id>/events/<n>.json``.

From 0.9 (``openhands/events/stream.py`` ``EventStream._get_filename_for_id``; from 0.20
``openhands/storage/locations.py`` ``get_conversation_event_filename``) each event is written to a file of its
own named by its id, as ``event_to_dict`` gives it (the same dict an eval ``history`` holds). Later versions also
write ``event_cache/<start>-<end>.json`` pages, copies of the same events for faster loading: never read, as the
events are. The conversation folder (or its ``events`` folder) is one run, named after the conversation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from replay.model import BadRecord

EVENT_FILE_RE = re.compile(r"^(\d+)\.json$")


def events_dir(path: Path) -> Path | None:
    """The ``events`` folder of conversation folder ``path`` (or ``path`` itself when it is one), if it holds
    V0 event files."""
    for folder in (path / "events", path) if path.name != "events" else (path,):
        if folder.is_dir() and event_files(folder):
            return folder
    return None


def event_files(folder: Path) -> list[Path]:
    """The event files of an ``events`` folder, in id order."""
    found = [(int(m.group(1)), f) for f in folder.iterdir() if (m := EVENT_FILE_RE.match(f.name)) and f.is_file()]
    return [f for _, f in sorted(found)]


def conversation_folder(path: Path) -> Path:
    """The folder the run is named after: the conversation, not its ``events`` folder."""
    return path.parent if path.name == "events" else path


def load_events(files: list[Path]) -> Iterator[tuple[int, Any] | BadRecord]:
    """(event id, event) per file, in id order; a file that is not a JSON object is a BadRecord naming it (its id
    as the line). A gap in the ids is said once: the events between were never written or were removed."""
    expected = None
    for path in files:
        n = int(path.stem)  # event_files gave only "<n>.json" names
        if expected is not None and n != expected:
            yield BadRecord(n, f"events/{expected}.json to events/{n - 1}.json missing: those events are not read", "")
        expected = n + 1
        try:
            event = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            yield BadRecord(n, f"events/{path.name} is not readable JSON ({exc}); that event is not read", "")
            continue
        if not isinstance(event, dict):
            yield BadRecord(n, f"events/{path.name} is not a JSON object (an OpenHands event)", str(event)[:2000])
            continue
        yield n, event
