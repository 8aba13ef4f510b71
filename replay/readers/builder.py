"""Assigns seq, step and turn to items as a reader walks a log in order."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from replay.model import Item, Request, Run, dumps
from replay.readers.resources import classify_call


class RunBuilder:
    """Accumulates one run's records; requests advance the step counter.

    Call :meth:`request` when the log shows a model call, *before* adding the
    assistant output it produced: that output is appended after the request,
    so it is first seen by the next one.
    """

    def __init__(self, run: Run) -> None:
        self.run = run
        self.records: list[Run | Item | Request] = [run]
        self.seq = 0
        self.step = 0
        self.turn = 0
        self._call_index: dict[str, tuple[str | None, str | None]] = {}
        self.placeholders: list[tuple[int, int, str, int, str]] = []  # (step, seq, wording, chars, origin)

    @property
    def n_requests(self) -> int:
        return self.step

    def new_turn(self) -> None:
        self.turn += 1

    def request(self, **usage: Any) -> Request:
        req = Request(run_id=self.run.run_id, step=self.step, **usage)
        self.records.append(req)
        self.step += 1
        return req

    def add(self, kind: str, role: str, text: str, **fields: Any) -> Item:
        args = fields.pop("args", None)
        if args is not None and not isinstance(args, str):
            args = dumps(args)
        item = Item(
            run_id=self.run.run_id, seq=self.seq, step=self.step, turn=self.turn,
            role=role, kind=kind, text=text or "", args=args, **fields,
        )
        self.records.append(item)
        self.seq += 1
        return item

    def call(self, tool_name: str, args: Any, call_id: str | None = None, **fields: Any) -> Item:
        """Add a tool call, classifying the resource it touches."""
        resource, access = classify_call(tool_name, args)
        if call_id:
            self._call_index[call_id] = (resource, access)
        return self.add("tool_call", "assistant", fields.pop("text", ""), tool_name=tool_name,
                        call_id=call_id, args=args, resource=resource, access=access, **fields)

    def result(self, text: str, call_id: str | None = None, tool_name: str | None = None,
               **fields: Any) -> Item:
        """Add a tool result; it inherits the resource and access of its call."""
        resource, access = self._call_index.get(call_id or "", (None, None))
        return self.add("tool_result", fields.pop("role", "tool"), text, call_id=call_id,
                        tool_name=tool_name, resource=resource, access=access, **fields)

    def placeholder(self, step: int, seq: int, text: str, origin: str = "prompt") -> None:
        """Note that request ``step`` showed item ``seq`` as ``text`` instead of its full content.

        ``origin``: "prompt" when the harness replaced the item in that request only (the history keeps it
        whole), "clip" when the output itself was cut where it was produced."""
        self.placeholders.append((step, seq, wording_of(text), len(text), origin))

    def scan_clips(self) -> None:
        """Note every tool result whose own text carries a known clip marker (cut at the source)."""
        for rec in self.records:
            if isinstance(rec, Item) and rec.kind == "tool_result" and (marker := find_marker(rec.text)):
                self.placeholders.append((rec.step, rec.seq, wording_of(marker), len(rec.text), "clip"))

    def __iter__(self) -> Iterator[Run | Item | Request]:
        if self.placeholders:
            self.run.metadata[PLACEHOLDER_KEY] = encode_placeholders(self.placeholders)
        return iter(self.records)


# Placeholders: what a request showed in place of an output. Kept in ``run.metadata[PLACEHOLDER_KEY]``
# (columnar, so one file still ingests in one transaction); the store's ``placeholders`` view unnests it.
PLACEHOLDER_KEY = "placeholders"
ORIGINS = ("prompt", "clip")
MARKERS = re.compile(
    r"Old environment output: \(\d+ lines omitted\)"  # SWE-agent last_n_observations
    r"|<response clipped>(?:<NOTE>.{0,400}?</NOTE>)?"  # OpenHands / SWE-agent editor: output cut at source
    r"|…?\d[\d,]* tokens truncated…?"  # Codex: output cut at source
    r"|\[Old tool result content cleared\]",  # Anthropic context editing
    re.S)
WORDING_CHARS = 400


def find_marker(text: str) -> str | None:
    """The first known placeholder/clip marker in ``text``, or None."""
    match = MARKERS.search(text)
    return match.group(0) if match else None


def wording_of(text: str) -> str:
    """Normalised wording: the known marker when there is one (else the text), digits -> N, spaces collapsed."""
    text = find_marker(text) or text
    return re.sub(r"\s+", " ", re.sub(r"\d+(?:[,.]\d+)*", "N", text)).strip()[:WORDING_CHARS]


def encode_placeholders(events: list[tuple[int, int, str, int, str]]) -> dict[str, Any]:
    """Columnar form: wordings once, events as [step, seq, wording index, chars shown, origin index]."""
    wordings: dict[str, int] = {}
    rows = [[step, seq, wordings.setdefault(w, len(wordings)), chars, ORIGINS.index(origin)]
            for step, seq, w, chars, origin in sorted(set(events))]
    return {"wordings": list(wordings), "events": rows}
