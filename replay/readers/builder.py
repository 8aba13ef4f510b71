"""Assigns seq, step and turn to items as a reader walks a log in order."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any

from replay.model import BadRecord, Item, Request, Run, dumps
from replay.readers.media import pixel_size
from replay.readers.tool_targets import classify_call


class RunBuilder:
    """Accumulates one run's records; requests advance the step counter.

    Call :meth:`request` when the log shows a model call, *before* adding the
    assistant output it produced: that output is appended after the request,
    so it is first seen by the next one.
    """

    def __init__(self, run: Run) -> None:
        self.run = run
        self.records: list[Run | Item | Request | BadRecord] = [run]
        self.seq = 0
        self.step = 0
        self.turn = 0
        self._call_index: dict[str, tuple[str | None, str | None]] = {}
        self.placeholders: list[tuple[int, int, str, int, str]] = []  # (step, seq, wording, chars, origin)
        self.context_events: list[dict[str, Any]] = []  # written to run.metadata[CONTEXT_EVENTS_KEY]
        self._last_request: tuple[datetime, str, int | None] | None = None  # (instant, as logged, line)

    @property
    def n_requests(self) -> int:
        return self.step

    def new_turn(self) -> None:
        self.turn += 1

    def request(self, **usage: Any) -> Request:
        """Add a model request; usage numbers that are not plausible token counts are quarantined (the request
        is kept, without usage) with the source line and the reason."""
        usage = self.checked_usage(usage)
        req = Request(run_id=self.run.run_id, step=self.step, **usage)
        self.records.append(req)
        self._check_order(req)
        self.step += 1
        return req

    def warn(self, line: int | None, message: str) -> None:
        """Note something read that changes a figure and that the user must know (a reused id, timestamps out of
        order): kept in ``run.metadata["warnings"]`` and printed by ingest with the file and line."""
        self.run.metadata.setdefault(WARNINGS_KEY, []).append({"line": line or 0, "message": message})

    def _check_order(self, req: Request) -> None:
        """Warn when a request's timestamp is earlier than the previous request's: the gaps between requests (cache
        expiry) are then not what happened."""
        when = instant(req.ts)
        if when is None:
            return
        last, self._last_request = self._last_request, (when, str(req.ts), req.line)
        if last is not None and when < last[0]:
            self.warn(
                req.line,
                f"request {req.step} has timestamp {req.ts}, earlier than request {req.step - 1}'s {last[1]} "
                f"(line {last[2]}): requests out of time order; time-based figures between them (cache expiry) "
                "may not be what happened",
            )

    def checked_usage(self, usage: dict[str, Any], line: int | None = None) -> dict[str, Any]:
        """``usage`` with token counts as ints; when one is not a plausible count, a BadRecord is added and every
        count is None (one damaged number makes the request's usage untrustworthy)."""
        clean, problem = validate_usage(usage)
        if problem is None:
            return clean
        where = usage.get("line") if line is None else line
        shown = {k: usage.get(k) for k in USAGE_FIELDS if k in usage}
        self.records.append(BadRecord(where or 0, f"usage {problem}; request kept without usage", repr(shown)[:2000]))
        return {k: (None if k in USAGE_FIELDS else v) for k, v in usage.items()}

    def add(self, kind: str, role: str, text: str, **fields: Any) -> Item:
        args = fields.pop("args", None)
        if args is not None and not isinstance(args, str):
            args = dumps(args)
        item = Item(
            run_id=self.run.run_id,
            seq=self.seq,
            step=self.step,
            turn=self.turn,
            role=role,
            kind=kind,
            text=text or "",
            args=args,
            **fields,
        )
        self.records.append(item)
        self.seq += 1
        return item

    def image(self, role: str, text: str, data: object, **fields: Any) -> Item:
        """An image item (``text``: its placeholder) and, when ``data`` (its base64 or a data URL) gives it, its
        pixel size, which is what the server counts for it (``runs.metadata.image_sizes``; replay.tokens.images)."""
        item = self.add("image", role, text, **fields)
        if (size := pixel_size(data)) is not None:
            self.run.metadata.setdefault("image_sizes", []).append([item.seq, *size])
        return item

    def call(self, tool_name: str, args: Any, call_id: str | None = None, **fields: Any) -> Item:
        """Add a tool call, classifying the resource it touches."""
        resource, access = classify_call(tool_name, args)
        if call_id:
            self._call_index[call_id] = (resource, access)
        return self.add(
            "tool_call",
            "assistant",
            fields.pop("text", ""),
            tool_name=tool_name,
            call_id=call_id,
            args=args,
            resource=resource,
            access=access,
            **fields,
        )

    def result(self, text: str, call_id: str | None = None, tool_name: str | None = None, **fields: Any) -> Item:
        """Add a tool result; it inherits the resource and access of its call."""
        resource, access = self._call_index.get(call_id or "", (None, None))
        return self.add(
            "tool_result",
            fields.pop("role", "tool"),
            text,
            call_id=call_id,
            tool_name=tool_name,
            resource=resource,
            access=access,
            **fields,
        )

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

    def body_start(self) -> int:
        """Seq of the first item after the leading system/tool_defs items (what a summary never replaces)."""
        for rec in self.records:
            if isinstance(rec, Item) and rec.kind not in PREFIX_KINDS:
                return rec.seq
        return self.seq

    def context_event(
        self,
        kind: str,
        *,
        drop: list[list[int]] | None = None,
        summary_seq: int | None = None,
        trigger: str | None = None,
        pre_tokens: int | None = None,
        line: int | None = None,
        step: int | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """Record what the harness's own context policy did (docs/canonical-format.md, "Context events").

        ``step`` defaults to the next request (the first whose prompt reflects the event). The returned dict is
        the stored one: a reader may set ``summary_seq`` once the summary line follows."""
        if kind not in EVENT_KINDS:
            raise ValueError(f"context event kind {kind!r} is not one of {EVENT_KINDS}")
        if trigger not in TRIGGERS:
            raise ValueError(f"context event trigger {trigger!r} is not one of {TRIGGERS}")
        event = {
            "kind": kind,
            "step": self.step if step is None else step,
            "drop": drop or [],
            "summary_seq": summary_seq,
            "trigger": trigger,
            "pre_tokens": pre_tokens,
            "line": line,
            **extra,
        }
        self.context_events.append(event)
        return event

    def __iter__(self) -> Iterator[Run | Item | Request | BadRecord]:
        if self.placeholders:
            self.run.metadata[PLACEHOLDER_KEY] = encode_placeholders(self.placeholders)
        if self.context_events:
            self.run.metadata[CONTEXT_EVENTS_KEY] = self.context_events
        return iter(self.records)


WARNINGS_KEY = "warnings"


def instant(ts: Any) -> datetime | None:
    """An ISO-8601 timestamp as an aware datetime (naive ones taken as UTC), or None when it is not one."""
    if not isinstance(ts, str):
        return None
    try:
        when = datetime.fromisoformat(ts.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


# Usage numbers: token counts a request reports. A plausible count is a non-negative integer (an integral float
# such as 12.0 is taken as 12) below MAX_TOKENS; NaN, infinities, negatives, fractions, strings and bools are not.
USAGE_FIELDS = ("input_tokens", "cache_read", "cache_write", "output_tokens", "prompt_tokens", "cache_write_1h")
MAX_TOKENS = 10**9


def validate_usage(usage: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """(usage with counts as ints, None) or (usage, why one count is not a plausible token count)."""
    clean = dict(usage)
    for key in USAGE_FIELDS:
        value = usage.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            return usage, f"{key}={value!r:.60}: not a number"
        if isinstance(value, float):
            if not math.isfinite(value) or not value.is_integer():
                return usage, f"{key}={value!r}: not a whole finite number"
            value = int(value)
        if not 0 <= value <= MAX_TOKENS:
            return usage, f"{key}={value}: outside 0..{MAX_TOKENS:,}"
        clean[key] = value
    return clean, None


# Context events: what a harness's own context policy did (compaction, condensation, cleared tool uses), kept in
# ``run.metadata[CONTEXT_EVENTS_KEY]`` as a list in log order; the simulator's ``recorded`` policy replays them.
CONTEXT_EVENTS_KEY = "context_events"
EVENT_KINDS = ("compaction", "condensation", "clear_tool_uses", "microcompact")
TRIGGERS = ("auto", "manual", None)
PREFIX_KINDS = ("system", "tool_defs")


def seq_ranges(seqs: Iterable[int]) -> list[list[int]]:
    """Sorted half-open [lo, hi) ranges covering ``seqs`` (adjacent seqs merged)."""
    out: list[list[int]] = []
    for s in sorted(set(seqs)):
        if out and out[-1][1] == s:
            out[-1][1] = s + 1
        else:
            out.append([s, s + 1])
    return out


# Placeholders: what a request showed in place of an output. Kept in ``run.metadata[PLACEHOLDER_KEY]``
# (columnar, so one file still ingests in one transaction); the store's ``placeholders`` view unnests it.
PLACEHOLDER_KEY = "placeholders"
ORIGINS = ("prompt", "clip")
MARKERS = re.compile(
    r"Old environment output: \(\d+ lines omitted\)"  # SWE-agent last_n_observations
    r"|<response clipped>(?:<NOTE>.{0,400}?</NOTE>)?"  # OpenHands / SWE-agent editor: output cut at source
    r"|…?\d[\d,]* tokens truncated…?"  # Codex: output cut at source
    r"|\[Old tool result content cleared\]",  # Anthropic context editing
    re.S,
)
MARKER_ANCHORS = ("Old environment output: (", "<response clipped>", " tokens truncated", "[Old tool result content")
WORDING_CHARS = 400


def find_marker(text: str) -> str | None:
    """The first known placeholder/clip marker in ``text``, or None. A literal every marker contains is looked for
    first: the pattern has no literal prefix, so a search of a long output without one is slow."""
    if not any(anchor in text for anchor in MARKER_ANCHORS):
        return None
    match = MARKERS.search(text)
    return match.group(0) if match else None


def wording_of(text: str) -> str:
    """Normalised wording: the known marker when there is one (else the text), digits -> N, spaces collapsed."""
    text = find_marker(text) or text
    return re.sub(r"\s+", " ", re.sub(r"\d+(?:[,.]\d+)*", "N", text)).strip()[:WORDING_CHARS]


def encode_placeholders(events: list[tuple[int, int, str, int, str]]) -> dict[str, Any]:
    """Columnar form: wordings once, events as [step, seq, wording index, chars shown, origin index]."""
    wordings: dict[str, int] = {}
    rows = [
        [step, seq, wordings.setdefault(w, len(wordings)), chars, ORIGINS.index(origin)]
        for step, seq, w, chars, origin in sorted(set(events))
    ]
    return {"wordings": list(wordings), "events": rows}
