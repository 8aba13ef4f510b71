"""Copilot CLI events.jsonl with the damage its writer is known to leave (github/copilot-cli issues 2217/2927 NUL
padding after a crash, 4098 an event torn and written again on the same line, 2649 a tool result written with raw
line breaks): read as the undamaged log is, with a warning, not quarantined (replay.readers.jsonl_mend)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from replay.model import BadRecord, Item, Request, Run
from replay.readers.base import ReadContext
from replay.readers.copilot_cli import READER

LOG = "copilot-cli/copilot-vct-events-1.0.34-20260423.jsonl"


def read(path: Path) -> list:
    return list(READER.read(ReadContext(path=path, file_hash="0" * 32)))


def shape(records: list) -> list:
    """What a read gives the replay: items and requests (their line numbers aside) and the run's facts."""
    out: list = []
    for r in records:
        if isinstance(r, Item):
            out.append((r.kind, r.role, r.text, r.call_id, r.step))
        elif isinstance(r, Request):
            out.append(("request", r.step, r.model, r.output_tokens))
        elif isinstance(r, Run):
            meta = {k: v for k, v in r.metadata.items() if k != "warnings"}
            out.append(("run", r.model, json.dumps(meta, sort_keys=True, default=str)))
    return out


def nul_padding(lines: list[str]) -> list[str]:
    return [*lines, "\x00" * 700]  # the file extended, the last write never flushed (2217)


def nul_before_event(lines: list[str]) -> list[str]:
    i = next(k for k, line in enumerate(lines) if '"type":"tool.execution_start"' in line)
    return [*lines[:i], "\x00" * 64 + lines[i], *lines[i + 1 :]]  # power loss mid-file, writing went on (1864)


def torn(lines: list[str]) -> list[str]:
    i = next(k for k, line in enumerate(lines) if '"type":"assistant.message"' in line and "toolRequests" in line)
    return [*lines[:i], lines[i][:180] + lines[i], *lines[i + 1 :]]  # cut at 180 bytes, then written whole (4098)


def split(lines: list[str]) -> list[str]:
    i = next(k for k, line in enumerate(lines) if '"type":"tool.execution_complete"' in line and "\\n" in line)
    return [*lines[:i], *lines[i].replace("\\n", "\n", 3).split("\n"), *lines[i + 1 :]]  # raw breaks (2649)


@pytest.mark.parametrize(
    ("damage", "warned"),
    [
        (nul_padding, "NUL bytes"),
        (nul_before_event, "NUL bytes"),
        (torn, "written again whole"),
        (split, "raw line breaks"),
    ],
)
def test_damaged_log_reads_as_the_sound_one(
    corpus: Path, tmp_path: Path, damage: Callable[[list[str]], list[str]], warned: str
) -> None:
    lines = (corpus / LOG).read_text(encoding="utf-8").rstrip("\n").split("\n")
    damaged = tmp_path / "events.jsonl"
    damaged.write_text("\n".join(damage(lines)) + "\n", encoding="utf-8")
    sound, records = read(corpus / LOG), read(damaged)
    assert not [r for r in records if isinstance(r, BadRecord)]
    assert shape(records) == shape(sound)
    (run,) = [r for r in records if isinstance(r, Run) and r.parent_run_id is None]
    assert [w for w in run.metadata["warnings"] if warned in w["message"]]


def test_lines_no_mend_explains_stay_quarantined(corpus: Path, tmp_path: Path) -> None:
    """A torn event with no complete copy after it, or lines that never make one event, are not guessed at."""
    lines = (corpus / LOG).read_text(encoding="utf-8").rstrip("\n").split("\n")
    i = next(k for k, line in enumerate(lines) if '"type":"tool.execution_complete"' in line and "\\n" in line)
    broken = [*lines[:i], lines[i][:200], "not json", *lines[i + 1 :]]
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(broken) + "\n", encoding="utf-8")
    records = read(path)
    assert [r.line for r in records if isinstance(r, BadRecord)] == [i + 1, i + 2]
    assert [r for r in records if isinstance(r, Request)]  # the lines after them are read
