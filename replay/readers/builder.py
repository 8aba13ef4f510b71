"""Assigns seq, step and turn to items as a reader walks a log in order."""

from __future__ import annotations

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

    def __iter__(self) -> Iterator[Run | Item | Request]:
        return iter(self.records)
