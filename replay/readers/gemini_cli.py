"""Gemini CLI chat recordings (~/.gemini/tmp/<project>/chats/session-*.json or .jsonl).

Two layouts, as the CLI's ChatRecordingService writes them:
- JSON (<= 0.3x): one object ``{sessionId, projectHash, startTime, lastUpdated, messages[], kind?}``;
- JSONL (>= 0.40): line 1 is the metadata record, then MessageRecords, ``{"$set": {...}}`` metadata patches and
  ``{"$rewindTo": id}`` (drop that message and everything after it). A message is appended again with the same
  ``id`` when it changes (e.g. its tool calls finish): the last copy wins, at the place of the first, except
  that a tool result is the one its call first finished with (0.39-0.43 persisted tool output masking by
  appending every gemini message with tool calls again; a changed result there is a rewrite, below).
- 0.44 on (updateMessagesFromHistory) a ``$set`` holding ``messages`` is the model's whole history: it opens every
  session with the environment context (history sent from then on, no event); after chat compression it drops
  messages and adds the snapshot: a recorded context event (kind "compaction", docs/canonical-format.md), the
  snapshot a ``summary`` item; one that only cuts the history's tail is a cancelled or failed request rolled back
  (0.54 on), read like ``$rewindTo``. Results a ``$set`` holds rewritten (tool output masking, on by default from
  0.33; compression's cut of old function responses) are ``cleared`` from the next request on: in the compaction
  event, else in ``runs.metadata.context_rewrites``. The function responses the CLI sends are also recorded as a
  ``user`` message (0.44 on): those are the results of the calls, not a user turn. setHistory given a history
  without ids (masking, the truncation fallback) appends it again message by message under new ids before the
  ``$set``: those copies stand for the messages they copy; compression gives the kept messages new ids, re-sent
  after the snapshot (the event's ``resent``). A result whose only copy is
  already masked (0.30-0.38 rewrote the JSON file) is counted in ``runs.metadata.masked_in_log`` with a warning:
  the requests before the masking were sent the whole output, which the log no longer holds.

Chat compression before 0.44 leaves only an ``info`` note: "Context compressed from X% to Y%." (0.33 on; the
percentages are of the model's token limit) or, earlier, "... compressed from: N to M tokens)." The CLI replaced
the history in memory (packages/core chatCompressionService): the oldest 70% of the history's characters (split
just before a user message that is not a function response) became one summary, followed by the model's
acknowledgement and the newest 30% verbatim, except that function responses past the newest 50,000 estimated
tokens of them are cut to their first 8,000 and last 32,000 characters (0.26 on). The note is read as a compaction
event at the next request: ``drop`` is what that split removes and the responses cut, whose cut copies follow as
``resent`` items; the summary is not in the log (``summary_seq`` null; calibration's offset at the event stands in
for it), ``pre_tokens`` is the last recorded prompt (the count the CLI compared with its threshold). A note right
after a ``$set`` rewrite of the same compression adds nothing.

Messages: ``user`` -> user_text (``content``, what the model got, not ``displayContent``); ``gemini`` -> one
request, then reasoning (``thoughts`` subject/description), assistant_text and, per ``toolCalls[]`` entry, a tool
call and its result (``result[].functionResponse.response``); ``info``/``error``/``warning`` are UI notes, kept
in ``runs.metadata.notes`` but not sent to the model. Before 0.32 a response of tool calls alone, without thoughts, has
no message: its calls join the previous gemini message (gemini_tool_passes; flagged, not split).

Usage per gemini message ``tokens``: ``input`` includes ``cached`` (prompt_tokens = input, cache_read = cached,
input_tokens = input - cached; no cache-write count); output_tokens = output + thoughts (billed output, as
OpenAI's completion_tokens includes reasoning).

Thoughts: the CLI never puts a response's thought parts in its history (geminiChat's stream handling filters them
out, since 2025-08-26); the response's other parts keep their ``thoughtSignature``, which the server may count in
their place within the turn. Whether it does, the usage shows, not the log's records (a session of
gemini-3.1-pro-preview-customtools, 2026-03, grew by a response's 10,849 thoughts at the next request; sessions of
2026-04 on gemini-3-flash-preview, 3.1-pro-preview and 2.5-pro grew by none of them). So a ``reasoning`` item holds
the thought summaries and ``runs.metadata.reasoning_tokens`` its size (``thoughts``), counted within its turn, and
``reasoning_by_signature`` lets calibration leave it out of every prompt when the usage says so
(replay.tokens.usage_metadata.exact_sizes).

The recording (chatRecordingService, its types) is the same in the npm build of 0.61.0 (2026-09-24) as at
google-gemini/gemini-cli 5411f113: no new record kind, field or rule.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from replay.model import BadRecord, Item, Record, Request, Run
from replay.readers.aliases import add_call
from replay.readers.base import ReadContext, iter_json_lines, load_json_document, open_log, text_of
from replay.readers.builder import RunBuilder
from replay.readers.gemini_tool_passes import passes_warning, recording_passes
from replay.readers.json_fields import sub_dict

# A tuple: a JSON value of any type (a damaged type, a list) tests for membership without hashing.
MESSAGE_TYPES = ("user", "gemini", "info", "error", "warning")
NOTE_TYPES = {"info", "error", "warning"}
# The UI notes chat compression writes (useGeminiStream's compression handler): percentages of the token limit
# (0.33 on), token counts before.
COMPRESSED_PCT_RE = re.compile(r"^Context compressed from (\d+)% to (\d+)%")
COMPRESSED_TOKENS_RE = re.compile(r"compressed from: (\d+|unknown) to (\d+|unknown) tokens")
KEEP_FRACTION = 0.3  # COMPRESSION_PRESERVE_THRESHOLD: the newest share of the history's characters kept verbatim
RESPONSE_BUDGET = 50_000  # COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET: newest function responses kept whole
TRUNCATE_CHARS = 40_000  # DEFAULT_TRUNCATE_TOOL_OUTPUT_THRESHOLD: a truncated response keeps this many characters
MASKED_TAG = "<tool_output_masked>"  # toolOutputMaskingService's snippet (MASKING_INDICATOR_TAG)
GEMINI_LINE_RE = re.compile(r'^\{"id":"[^"]+","timestamp":"[^"]+","type":"(?:user|gemini|info)"', re.M)


def _is_message(obj: Any) -> bool:
    return isinstance(obj, dict) and obj.get("type") in MESSAGE_TYPES and "id" in obj and "timestamp" in obj


def seq_ranges(seqs) -> list[list[int]]:
    """Ascending item seqs as [start, end) ranges of consecutive seqs (a context event's ``drop``)."""
    out: list[list[int]] = []
    for seq in seqs:
        if out and out[-1][1] == seq:
            out[-1][1] = seq + 1
        else:
            out.append([seq, seq + 1])
    return out


class GeminiCliReader:
    format = "gemini-cli"
    # 2: thoughts marked reasoning_by_signature (calibration may find the server counts none of them); 3: a message of
    # tool calls only written after a note (a cancel) holds the previous response's calls, not a request of its own
    version = 3

    def sniff(self, head: str, path: Path) -> bool:
        if head.lstrip()[:1] == "{" and '"sessionId"' in head and '"projectHash"' in head:
            return True
        return '"$set"' in head and bool(GEMINI_LINE_RE.search(head))  # JSONL with a damaged first line

    def read(self, ctx: ReadContext) -> Iterator[Record]:
        meta: dict[str, Any] = {}
        ops: list[tuple[str, int, Any]] = []  # ("msg", line, record) | ("rewind", line, id) | ("set", line, list)
        bad: list[BadRecord] = []
        document = self._is_document(ctx)
        if document:
            doc = load_json_document(ctx)
            if isinstance(doc, BadRecord):
                yield doc
                return
            if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
                yield BadRecord(1, "Gemini CLI session JSON without a 'messages' list", str(doc)[:2000])
                return
            meta = {k: v for k, v in doc.items() if k != "messages"}
            for n, msg in enumerate(doc["messages"]):
                if _is_message(msg):
                    ops.append(("msg", n, msg))
                else:
                    bad.append(BadRecord(n, f"messages[{n}] is not a Gemini CLI message record", str(msg)[:2000]))
        else:
            for entry in iter_json_lines(ctx):
                if isinstance(entry, BadRecord):
                    bad.append(entry)
                    continue
                line, obj = entry
                if _is_message(obj):
                    ops.append(("msg", line, obj))
                elif isinstance(obj, dict) and isinstance(obj.get("$rewindTo"), str):
                    ops.append(("rewind", line, obj["$rewindTo"]))
                elif isinstance(obj, dict) and isinstance(obj.get("$set"), dict):
                    patch = dict(obj["$set"])
                    if isinstance(patch.get("messages"), list):
                        ops.append(("set", line, [m for m in patch.pop("messages") if _is_message(m)]))
                    meta.update(patch)
                elif isinstance(obj, dict) and "sessionId" in obj:
                    meta.update(obj)
                else:
                    bad.append(
                        BadRecord(
                            line,
                            "not a Gemini CLI record (message, $set, $rewindTo or session metadata)",
                            str(obj)[:2000],
                        )
                    )
        yield from bad
        yield from _Replay(ctx, self.format, meta, ops, document).run()

    @staticmethod
    def _is_document(ctx: ReadContext) -> bool:
        """A single JSON object (pretty-printed or one line holding ``messages``) rather than JSONL."""
        with open_log(ctx.path) as fh:
            first = fh.readline().strip()
        if first == b"{":  # pretty-printed
            return True
        try:
            obj = json.loads(first)
        except (ValueError, RecursionError):
            return False  # a damaged first line of a JSONL
        return isinstance(obj, dict) and isinstance(obj.get("messages"), list)


class _Replay:
    """Replays the recording's operations as the CLI's loader does, keeping what each request saw.

    A message's items come from its last copy, at the place it first appeared. Messages a ``$rewindTo`` removes
    (a branch the user rolled back) are left out, counted in ``runs.metadata.rewound``. A ``$set`` of
    ``messages`` is the CLI rewriting the model's history (chat compression): messages it no longer holds are a
    recorded context event's ``drop``, and the messages it adds (the compression summary and the model's
    acknowledgement) are appended then, the first user one as the ``summary`` item."""

    def __init__(
        self, ctx: ReadContext, fmt: str, meta: dict, ops: list[tuple[str, int, Any]], document: bool = False
    ) -> None:
        self.ops = ops
        self.document = document  # the JSON layout (writers before 0.39, which may merge requests)
        self.batched: list[tuple[int, int]] = []  # (line, passes) of messages whose tool calls came in batches
        self.last: dict[str, tuple[int, dict]] = {}
        self.types: dict[str, Any] = {}  # message id -> its type, from its records and the $set lists holding it
        self.first_seen: dict[str, dict] = {}  # message id -> its first record or $set entry
        for op, line, value in ops:
            if op == "msg":
                self.last[value["id"]] = (line, value)
            for m in [value] if op == "msg" else value if op == "set" else []:
                self.types[m["id"]] = m.get("type")
                self.first_seen.setdefault(m["id"], m)
        self.rewound = self._rewound()
        info = {
            k: meta[k]
            for k in ("sessionId", "projectHash", "kind", "lastUpdated", "summary", "directories")
            if meta.get(k) is not None
        }
        model = next(
            (
                m.get("model")
                for _, m in self.last.values()
                if m.get("type") == "gemini" and m.get("model") and m["id"] not in self.rewound
            ),
            None,
        )
        run = Run(
            run_id=ctx.run_id(),
            format=fmt,
            source_path=str(ctx.path),
            model=model,
            harness="gemini-cli",
            started_at=meta.get("startTime"),
            metadata=info,
        )
        self.b = RunBuilder(run)
        self.seqs: dict[str, list[int]] = {}  # message id -> its item seqs
        self.events: list[dict] = []
        self.rewrites: list[dict] = []  # tool results the CLI rewrote in place (tool output masking)
        self.first_done = first_finished_calls(ops)
        self.results: dict[str, tuple[int, str]] = {}  # call id -> (its result item's seq, the text sent now)
        self.masked_first: list[tuple[int, int]] = []  # (seq, line) of results first read already masked
        self.ended = False  # the last user or gemini message read is a model response with no tool call
        self.noted = False  # the last message read is a note (info, error, warning)

    def _rewound(self) -> set[str]:
        """Ids removed by a ``$rewindTo`` (from the target on; an unknown target clears everything)."""
        live: dict[str, None] = {}
        gone: set[str] = set()
        for op, _, value in self.ops:
            if op == "msg":
                live[value["id"]] = None
            elif op == "set":
                cut = self._rolled_back(live, value)
                gone.update(cut)
                live = {mid: None for mid in live if mid not in cut} if cut else dict.fromkeys(m["id"] for m in value)
            elif op == "rewind":
                ids = list(live)
                cut = ids[ids.index(value) :] if value in live else ids
                gone.update(cut)
                for mid in cut:
                    del live[mid]
        return gone - set(live)

    def _rolled_back(self, live: dict[str, None], messages: list[dict]) -> list[str]:
        """Ids a ``$set`` removes by cutting the tail of the history and nothing else (0.54 on rolls a request
        back so when it is cancelled or fails; the history holds only user and gemini messages), else []."""
        history = [mid for mid in live if self.types.get(mid) in ("user", "gemini")]
        ids = [m["id"] for m in messages]
        if len(ids) >= len(history) or history[: len(ids)] != ids:
            return []
        return history[len(ids) :]

    def run(self) -> Iterator[Record]:
        live: dict[str, None] = {}
        copies = history_copies(self.ops)
        for i, (op, line, value) in enumerate(self.ops):
            if i in copies:  # the history setHistory re-records, read with the $set that lists it
                continue
            if op == "msg" and value["id"] not in self.rewound:
                if value["id"] not in self.seqs:
                    self.message(*self.last[value["id"]])
                elif cleared := self.revised([value]):
                    self.rewrite_results(cleared, line)
                live[value["id"]] = None
            elif op == "rewind":
                ids = list(live)
                for mid in ids[ids.index(value) :] if value in live else ids:
                    del live[mid]
            elif op == "set":
                live = self.rewrite(live, value, line)
        meta = self.b.run.metadata
        if self.rewound:
            meta["rewound"] = {
                "messages": len(self.rewound),
                "requests": sum(self.last[m][1].get("type") == "gemini" for m in self.rewound if m in self.last),
            }
        if self.events:
            meta["context_events"] = self.events
        if self.rewrites:
            meta["context_rewrites"] = self.rewrites
        if self.batched:
            meta["tool_call_batches"] = [[line, passes] for line, passes in self.batched]
            self.b.warn(self.batched[0][0], passes_warning(self.batched))
        masked = [(seq, line) for seq, line in self.masked_first if seq not in self.rewritten()]
        if masked:
            meta["masked_in_log"] = len(masked)
            self.b.warn(
                masked[0][1],
                f"{len(masked)} tool result(s) are logged only as tool output masking left them "
                "(<tool_output_masked>): the requests before the masking were sent the whole output, which the "
                "log does not hold, so their prompts read low",
            )
        yield from self.b

    def rewrite(self, live: dict[str, None], messages: list[dict], line: int) -> dict[str, None]:
        """A ``$set`` of the whole history (0.44 on). Messages it no longer holds and the summary it adds are a
        compaction event; results it holds rewritten (tool output masking, compression's cut of old function
        responses) are ``cleared`` from the next request on; messages it only adds (the environment context
        the CLI opens every history with) are history the model is sent from then on, no event."""
        self.alias_copies(live, messages)
        kept = {m["id"] for m in messages}
        keep_seqs = {s for mid in kept for s in self.seqs.get(mid, [])}
        dropped = sorted({s for mid in live if mid not in kept for s in self.seqs.get(mid, [])} - keep_seqs)
        added = [m for m in messages if m["id"] not in self.seqs]
        cleared = self.revised([m for m in messages if m["id"] in self.seqs])
        if not dropped:
            for m in added:
                self.history_message(m, line)
            if cleared:
                self.rewrite_results(cleared, line)
            return dict.fromkeys(m["id"] for m in messages)
        snapshot = next(
            (m for m in added if m.get("type") == "user" and "<state_snapshot>" in _content_text(m.get("content"))),
            next((m for m in added if m.get("type") == "user"), None),
        )
        summary_seq, first = None, self.b.seq
        for m in added:
            start = self.b.seq
            if m is snapshot:
                text = _content_text(m.get("content"))
                summary_seq = self.b.add("summary", "user", text, line=line, ts=m.get("timestamp")).seq
            else:
                copy_message(self.b, m, line)
            self.seqs[m["id"]] = list(range(start, self.b.seq))
        resent = seq_ranges(q for q in range(first, self.b.seq) if q != summary_seq)
        event: dict[str, Any] = {
            "kind": "compaction",
            "step": self.b.step,
            "drop": seq_ranges(dropped),
            "summary_seq": summary_seq,
            "trigger": None,
            "pre_tokens": None,
            "line": line,
        }
        if cleared:
            event["cleared"] = cleared
        if resent:  # the acknowledgement and the kept messages under new ids: the compression's, not the agent's
            event["resent"] = resent
        self.events.append(event)
        return dict.fromkeys(m["id"] for m in messages)

    def alias_copies(self, live: dict[str, None], messages: list[dict]) -> None:
        """A ``$set`` that holds the live history message for message under new ids (setHistory re-records a
        history given without ids: tool output masking, compression's truncation fallback) holds the same items:
        each new id stands for its counterpart's; changed results are then ``revised``."""
        old = [mid for mid in live if self.types.get(mid) in ("user", "gemini")]
        if len(old) != len(messages) or all(m["id"] in self.seqs for m in messages):
            return
        if any(self.types.get(o) != m.get("type") for o, m in zip(old, messages, strict=True)):
            return
        if any(
            m["id"] not in self.seqs and not same_turn(self.last_copy(o), m) for o, m in zip(old, messages, strict=True)
        ):
            return
        for o, m in zip(old, messages, strict=True):
            self.seqs.setdefault(m["id"], self.seqs.get(o, []))

    def last_copy(self, mid: str) -> dict:
        return self.last[mid][1] if mid in self.last else self.first_seen.get(mid, {})

    def next_prompt(self, line: int) -> int | None:
        """The recorded prompt of the first request logged after ``line`` (its message's last copy), else None."""
        for op, at, value in self.ops:
            if op != "msg" or at <= line or value.get("type") != "gemini" or value["id"] in self.rewound:
                continue
            tokens = sub_dict(self.last[value["id"]][1], "tokens")
            prompt = tokens.get("input")
            if isinstance(prompt, int) and not isinstance(prompt, bool):
                return prompt
        return None

    def rewritten(self) -> set[int]:
        return {seq for rw in [*self.rewrites, *self.events] for seq, _ in rw.get("cleared") or []}

    def revised(self, messages: list[dict]) -> list[list[int]]:
        """``[[seq, chars], ...]``: the finished tool results these copies of messages already read hold with
        another text (their function responses: a gemini message's ``toolCalls`` results, from 0.44 also the
        user message that sends them), now the text sent."""
        out: dict[int, int] = {}
        for msg in messages:
            for call_id, text in _finished_results(msg):
                if call_id in self.results and self.results[call_id][1] != text:
                    seq = self.results[call_id][0]
                    self.results[call_id] = (seq, text)
                    out[seq] = len(text)
        return [[seq, chars] for seq, chars in out.items()]

    def rewrite_results(self, cleared: list[list[int]], line: int) -> None:
        """Results rewritten in place outside a compaction (tool output masking, 0.29 on, by default from 0.33):
        a rewrite from the next request on (``context_rewrites``); the CLI logs no event of its own for it."""
        last = self.rewrites[-1] if self.rewrites else None
        if last is not None and last["step"] == self.b.step:  # the same pass re-appends message after message
            now = {seq: chars for seq, chars in last["cleared"]} | {seq: chars for seq, chars in cleared}
            last["cleared"] = [[seq, now[seq]] for seq in sorted(now)]
            return
        self.rewrites.append(
            {"step": self.b.step, "harness_kind": "tool output masking", "cleared": sorted(cleared), "line": line}
        )

    def compression_note(self, text: str, line: int) -> None:
        """An ``info`` note of chat compression: the history split as the compression service splits it. An empty
        one is ``/compress`` (0.18 on its result item is recorded as an ``info`` without text): a manual
        compression when the next recorded prompt is below the last one (it may also have had nothing to do)."""
        pct, tokens = COMPRESSED_PCT_RE.match(text.strip()), COMPRESSED_TOKENS_RE.search(text)
        manual = not text.strip()
        if not (pct or tokens or manual):
            return
        b = self.b
        if self.events and self.events[-1]["step"] == b.step and "note_line" not in self.events[-1]:
            self.events[-1]["note_line"] = line  # the $set rewrite of this compression is already the event
            self.events[-1]["trigger"] = "manual" if manual else "auto"
            return
        last = next((r for r in reversed(b.records) if isinstance(r, Request)), None)
        if manual:
            before, after = (last.prompt_tokens if last else None), self.next_prompt(line)
            if before is None or after is None or after >= before:
                return
        start = b.body_start()
        dropped = set().union(*(range(lo, hi) for ev in self.events for lo, hi in ev["drop"]))
        items = [r for r in b.records if isinstance(r, Item) and r.seq >= start and r.seq not in dropped]
        split = compress_split(items, 1 - KEEP_FRACTION)
        kept = {it.seq for it in items[split:]}
        cut = [it for it in over_budget(items) if it.seq in kept]
        gone = sorted([it.seq for it in items[:split]] + [it.seq for it in cut])
        drop = seq_ranges(gone)
        first = b.seq
        for it in cut:  # the cut copy the CLI sends from now on (its wording is ours; the characters are its)
            head, tail = it.text[: TRUNCATE_CHARS // 5], it.text[-(TRUNCATE_CHARS - TRUNCATE_CHARS // 5) :]
            b.result(
                f"{head}\n... [{len(it.text) - TRUNCATE_CHARS} characters omitted] ...\n{tail}",
                None,
                it.tool_name,
                line=line,
                ts=it.ts,
            )
        event: dict[str, Any] = {
            "kind": "compaction",
            "step": b.step,
            "drop": drop,
            "summary_seq": None,
            "trigger": "manual" if manual else "auto",
            "pre_tokens": last.prompt_tokens if last else None,
            "line": line,
            "summary_logged": False,
        }
        if cut:
            event["resent"] = [[first, b.seq]]
        if pct:
            event["pct_before"], event["pct_after"] = int(pct.group(1)), int(pct.group(2))
        elif tokens:
            said = tokens.group(1), tokens.group(2)
            event["tokens_before"] = int(said[0]) if said[0].isdigit() else None
            event["tokens_after"] = int(said[1]) if said[1].isdigit() else None
        self.events.append(event)

    def message(self, line: int, msg: dict) -> None:
        start, b = self.b.seq, self.b
        kind, ts = msg["type"], msg.get("timestamp")
        after_note, self.noted = self.noted, kind in NOTE_TYPES
        if kind in NOTE_TYPES:
            note = {"type": kind, "line": line, "text": text_of(msg.get("content"))}
            b.run.metadata.setdefault("notes", []).append(note)
            if kind == "info":
                self.compression_note(note["text"], line)
        elif kind == "user" and is_function_response(msg):
            self.seqs[msg["id"]] = self.function_responses(msg, line)
            return
        elif kind == "user":
            self.ended = False
            b.new_turn()
            b.add("user_text", "user", _content_text(msg.get("content")), line=line, ts=ts)
        else:
            calls = [c for c in msg.get("toolCalls") or [] if isinstance(c, dict)]
            answered = bool(sub_dict(msg, "tokens"))
            if self.ended and answered:
                unrecorded_input(b, line)
            self.ended = answered and not calls
            if self.document and (passes := recording_passes(calls)) > 1:
                self.batched.append((line, passes))
            first = [self.first_done.get(c["id"], c) if isinstance(c.get("id"), str) else c for c in calls]
            own = not (after_note and calls_only(msg) and b.n_requests)
            _gemini(b, {**msg, "toolCalls": first} if calls else msg, line, ts, own)
            for it in reversed(b.records):
                if isinstance(it, Item) and it.seq < start:
                    break
                if isinstance(it, Item) and it.kind == "tool_result" and it.call_id:
                    self.results.setdefault(it.call_id, (it.seq, it.text))
                    if MASKED_TAG in it.text:
                        self.masked_first.append((it.seq, line))
        self.seqs[msg["id"]] = list(range(start, b.seq))

    def history_message(self, msg: dict, line: int) -> None:
        """A message a ``$set`` puts in the history without a turn or a model call of its own (the environment
        context every history opens with, a bootstrapped history)."""
        start, kind = self.b.seq, msg.get("type")
        if kind == "user" and is_function_response(msg):
            self.seqs[msg["id"]] = self.function_responses(msg, line)
            return
        if kind in ("user", "gemini"):
            role = "user" if kind == "user" else "assistant"
            self.b.add(f"{role}_text", role, _content_text(msg.get("content")), line=line, ts=msg.get("timestamp"))
        self.seqs[msg["id"]] = list(range(start, self.b.seq))

    def function_responses(self, msg: dict, line: int) -> list[int]:
        """A user message of function responses (0.44 on the CLI records the tool results it sends as one): the
        results its gemini message's ``toolCalls`` already gave are those items; any other is a result here."""
        seqs = []
        for part in msg.get("content") or []:
            fr = part.get("functionResponse") if isinstance(part, dict) else None
            if not isinstance(fr, dict):
                continue
            call_id = fr.get("id") if isinstance(fr.get("id"), str) else None
            if call_id is not None and call_id in self.results:
                seqs.append(self.results[call_id][0])
                continue
            text = _result_text([part])
            item = self.b.result(text, call_id, fr.get("name"), line=line, ts=msg.get("timestamp"))
            if call_id is not None:
                self.results[call_id] = (item.seq, text)
            if MASKED_TAG in text:
                self.masked_first.append((item.seq, line))
            seqs.append(item.seq)
        return seqs


UNRECORDED_INPUT = "input after a model response that recorded no tool call and no user message: not in the log"


def unrecorded_input(b: RunBuilder, line: int) -> None:
    """Note (``runs.metadata.unlogged``, ``varies``) that the request about to be added follows a model response
    with no tool call and no user message between: a model request is sent only with new input (a user message,
    the function responses of the response's calls, a continuation prompt), so what this one added is not in the
    log. Recordings whose writer does not keep tool calls (no message of the file holds ``toolCalls``) read like
    this at every request after a tool call, and their prompt grows by the calls and results the log lacks."""
    note = {"step": b.step, "line": line, "reason": UNRECORDED_INPUT, "varies": True}
    b.run.metadata.setdefault("unlogged", []).append(note)


def history_copies(ops: list[tuple[str, int, Any]]) -> set[int]:
    """Indexes of the message records setHistory writes before a ``$set`` that lists them (0.44 on, a history given
    without ids is recorded message by message under new ids): a run of new messages just before the ``$set``
    that holds every message of its list."""
    out: set[int] = set()
    seen: set[str] = set()
    pending: list[int] = []
    for i, (op, _, value) in enumerate(ops):
        if op == "msg":
            if value["id"] not in seen:
                pending.append(i)
            seen.add(value["id"])
        elif op == "set":
            listed, run = {m["id"] for m in value}, []
            for j in reversed(pending):
                if ops[j][2]["id"] not in listed:
                    break
                run.append(j)
            if listed and listed <= {ops[j][2]["id"] for j in run}:  # the whole list was just recorded, anew
                out.update(run)
            pending = []
            seen.update(listed)
        else:
            pending = []
    return out


def same_turn(old: dict, new: dict) -> bool:
    """A re-recorded copy of a message: a function-response turn answering the same calls, a user message of the
    same text, any gemini message (the copy holds its parts, the record its text and calls)."""
    if is_function_response(new) or is_function_response(old):
        ids = [{c for c, _ in _finished_results(m)} for m in (old, new)]
        return is_function_response(new) and is_function_response(old) and ids[0] == ids[1]
    if new.get("type") == "gemini":
        return True
    return _content_text(old.get("content")).strip() == _content_text(new.get("content")).strip()


def copy_message(b: RunBuilder, msg: dict, line: int) -> None:
    """Items of a message a compression's ``$set`` re-sends under a new id: its text, calls and function
    responses (not a turn, not a request)."""
    ts, content = msg.get("timestamp"), msg.get("content")
    parts: list[Any] = content if isinstance(content, list) else [{"text": text_of(content)}]
    calls: list[dict] = []
    role = "user" if msg.get("type") == "user" else "assistant"
    for part in parts:
        if not isinstance(part, dict):
            continue
        if isinstance(part.get("functionResponse"), dict):
            fr = part["functionResponse"]
            b.result(_result_text([part]), fr.get("id"), fr.get("name"), line=line, ts=ts)
        elif isinstance(part.get("functionCall"), dict):
            calls.append(part["functionCall"])
        elif part.get("text") and not part.get("thought"):
            b.add(f"{role}_text", role, str(part["text"]), line=line, ts=ts)
    for fc in calls:
        add_call(b, fc.get("name") or "", fc.get("args") or {}, fc.get("id"), line=line, ts=ts)


def is_function_response(msg: dict) -> bool:
    """A user message that sends function responses (the CLI's isFunctionResponse: any part is one)."""
    content = msg.get("content")
    return isinstance(content, list) and any(isinstance(p, dict) and "functionResponse" in p for p in content)


def _finished_results(msg: dict) -> list[tuple[str, str]]:
    """(call id, result text) of each function response a message holds: a gemini message's finished
    ``toolCalls``, a user message's ``functionResponse`` parts."""
    if msg.get("type") == "user" and is_function_response(msg):
        parts = [p for p in msg["content"] if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict)]
        return [
            (p["functionResponse"]["id"], _result_text([p]))
            for p in parts
            if isinstance(p["functionResponse"].get("id"), str)
        ]
    if msg.get("type") != "gemini":
        return []
    return [
        (c["id"], call_result_text(c))
        for c in msg.get("toolCalls") or []
        if isinstance(c, dict) and isinstance(c.get("id"), str) and _finished(c)
    ]


def _finished(call: dict) -> bool:
    return call.get("result") is not None or call.get("status") in ("error", "cancelled")


def first_finished_calls(ops: list[tuple[str, int, Any]]) -> dict[str, dict]:
    """Call id -> the tool call as its first finished copy records it. The CLI appends a message again when it
    changes; a later copy may hold a result rewritten after it was sent (tool output masking re-appends every
    gemini message with tool calls, 0.39 to 0.43), which the request that first saw it did not get."""
    out: dict[str, dict] = {}
    for op, _, value in ops:
        if op != "msg" or value.get("type") != "gemini":
            continue
        for call in value.get("toolCalls") or []:
            if isinstance(call, dict) and isinstance(call.get("id"), str) and _finished(call):
                out.setdefault(call["id"], call)
    return out


def compress_split(items: list[Item], fraction: float) -> int:
    """Index of the first item kept by chat compression: the first user message (not a function response) with
    at least ``fraction`` of the history's characters before it, else the last such message; everything when no
    split follows the mark and the history ends with a model reply that calls no tool (the compression
    service's rule, by our items' characters rather than the JSON of its Content list)."""
    sizes = [len(it.payload) for it in items]
    total = sum(sizes)
    target, before, last_split = total * fraction, 0, 0
    for i, it in enumerate(items):
        if it.kind == "user_text":
            if before >= target:
                return i
            last_split = i
        before += sizes[i]
    if items and items[-1].kind == "assistant_text":
        return len(items)
    return last_split


def estimated_tokens(text: str) -> float:
    """The CLI's token estimate of a text (estimateTextTokens): a quarter token per ASCII character, 1.3 per
    other character; a quarter per character past 100,000 characters."""
    if len(text) > 100_000:
        return len(text) / 4
    ascii_chars = sum(ch <= "\x7f" for ch in text)
    return 0.25 * ascii_chars + 1.3 * (len(text) - ascii_chars)


def over_budget(items: list[Item]) -> list[Item]:
    """Tool results the compression cuts: newest first, once the function responses so far pass the budget, every
    one longer than the cut (truncateHistoryToBudget; shorter ones pass whole but still count)."""
    out, used = [], 0.0
    for it in reversed(items):
        if it.kind != "tool_result":
            continue
        tokens = estimated_tokens(it.text) + (len(it.tool_name or "") + 14) / 4  # name and {"output": ...}
        if used + tokens > RESPONSE_BUDGET and len(it.text) > TRUNCATE_CHARS:
            out.append(it)
            used += estimated_tokens(it.text[:TRUNCATE_CHARS]) + 30
        else:
            used += tokens
    return out


def calls_only(msg: dict) -> bool:
    """A gemini message that holds nothing but tool calls: no usage, text or thoughts. ChatRecordingService's
    ``recordToolCalls`` writes one when the last message is not a gemini one; after a note (an ``info`` "Request
    cancelled." between the response and its calls' completion) the calls are the previous response's, not a model
    request of their own (a session whose two cancelled calls were read as two requests priced 24% over its
    bill). After a user message it is a response whose usage is not written yet: a request."""
    return (
        not sub_dict(msg, "tokens")
        and not _content_text(msg.get("content"))
        and not msg.get("thoughts")
        and any(isinstance(c, dict) for c in msg.get("toolCalls") or [])
    )


def _gemini(b: RunBuilder, msg: dict, line: int, ts: str | None, own: bool = True) -> None:
    """A gemini message's request (``own``: it is one; else its calls are the previous response's) and items."""
    tokens = sub_dict(msg, "tokens")
    usage: dict[str, Any] = {}
    if tokens:
        prompt, cached = tokens.get("input"), tokens.get("cached") or 0
        parts = (prompt, cached, tokens.get("output"), tokens.get("thoughts"))
        if any(v is not None and (isinstance(v, bool) or not isinstance(v, int | float)) for v in parts):
            # not all numbers: RunBuilder.request quarantines them as they are
            usage = {"prompt_tokens": prompt, "cache_read": cached, "output_tokens": tokens.get("output")}
        else:
            output = (tokens.get("output") or 0) + (tokens.get("thoughts") or 0)
            usage = {
                "prompt_tokens": prompt,
                "cache_read": cached,
                "input_tokens": max(prompt - cached, 0) if isinstance(prompt, int) else None,
                "output_tokens": output,
            }
    if own:
        b.request(line=line, ts=ts, model=msg.get("model"), **usage)
    thoughts = [t for t in msg.get("thoughts") or [] if isinstance(t, dict)]
    size = tokens.get("thoughts")
    if thoughts or (isinstance(size, int) and size > 0):
        text = "\n\n".join(f"**{t.get('subject') or ''}** {t.get('description') or ''}".strip() for t in thoughts)
        item = b.add("reasoning", "assistant", text, line=line, ts=ts)
        if isinstance(size, int) and size >= 0:  # the log keeps only thought summaries; what the server may count
            # in their place (the signatures the history keeps) is at most the call's thoughts count
            b.run.metadata.setdefault("reasoning_tokens", []).append([item.seq, size])
            b.run.metadata["reasoning_by_signature"] = True
    if text := _content_text(msg.get("content")):
        b.add("assistant_text", "assistant", text, line=line, ts=ts)
    calls = [c for c in msg.get("toolCalls") or [] if isinstance(c, dict)]
    for call in calls:
        add_call(b, call.get("name") or "", call.get("args") or {}, call.get("id"), line=line, ts=call.get("timestamp"))
    for call in calls:
        if not _finished(call):
            continue  # not finished when the file was written
        b.result(
            call_result_text(call),
            call.get("id"),
            call.get("name"),
            line=line,
            ts=call.get("timestamp"),
            is_error=call.get("status") in ("error", "cancelled"),
        )


def _content_text(content: Any) -> str:
    """Text of a string or Part[] content (function responses/calls rendered as JSON)."""
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and "text" in part:
                parts.append(str(part["text"]))
            elif isinstance(part, dict) and ("functionResponse" in part or "functionCall" in part):
                parts.append(json.dumps(part, ensure_ascii=False))
            elif isinstance(part, str):
                parts.append(part)
        return "\n".join(p for p in parts if p)
    return text_of(content)


def call_result_text(call: dict) -> str:
    """A tool call's result as sent: its own function response. 0.44 on, when a ``$set`` finds the history's
    function-response turn differs from a call's result, it stores the whole turn as the result, so a call of a
    parallel batch then holds its siblings' responses too (updateMessagesFromHistory)."""
    result, own = call.get("result"), call.get("id")
    if isinstance(result, list) and isinstance(own, str):
        result = [
            p
            for p in result
            if not (
                isinstance(p, dict)
                and isinstance(p.get("functionResponse"), dict)
                and isinstance(p["functionResponse"].get("id"), str)
                and p["functionResponse"]["id"] != own
            )
        ]
    return _result_text(result)


def _result_text(result: Any) -> str:
    """A tool call's result Part[]: the functionResponse's response (output or error), else the text parts."""
    if not isinstance(result, list):
        return text_of(result)
    out = []
    for part in result:
        if not isinstance(part, dict):
            continue
        fr = part.get("functionResponse")
        if isinstance(fr, dict):
            resp = fr.get("response")
            if isinstance(resp, dict) and set(resp) <= {"output", "error"}:
                out.append(str(resp.get("output") if resp.get("output") is not None else resp.get("error") or ""))
            else:
                out.append(json.dumps(resp, ensure_ascii=False) if not isinstance(resp, str) else resp)
        elif "text" in part:
            out.append(str(part["text"]))
    return "\n".join(out)


READER = GeminiCliReader()
