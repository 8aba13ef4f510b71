"""Run data as compact numpy arrays: the simulator's only input, and what policies and metrics read."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from replay.model import KINDS

if TYPE_CHECKING:
    from replay.simulator.cache_fit import CacheFit

KIND_CODE = {k: i for i, k in enumerate(KINDS)}
ACCESS = ("none", "read", "write", "exec", "search", "other")
ACCESS_CODE = {a: i for i, a in enumerate(ACCESS)}
TOOL_CALL, TOOL_RESULT = KIND_CODE["tool_call"], KIND_CODE["tool_result"]
# what a response writes: its reasoning (first), text and tool calls (what a harness resends right after the prompt)
OUTPUT_KINDS = np.array([KIND_CODE["reasoning"], KIND_CODE["assistant_text"], TOOL_CALL], dtype=np.int8)
# the tool name of the content a harness added after a recorded compaction that the log does not hold (the prompt
# model's offset there, replay.simulator.load): a policy that compacts as the harness does adds as much
AFTER_COMPACTION = "unlogged_after_compaction"
TOOL_DEFS = KIND_CODE["tool_defs"]  # tool schemas: never trimmed wherever they stand (policies.kernel.pinned)
PREFIX_KINDS = (KIND_CODE["system"], TOOL_DEFS)  # the harness prefix, never trimmed
ESTIMATE_LABEL = "estimate:chars/4"


def chars4(chars: np.ndarray | int) -> np.ndarray:
    """The chars/4 estimator (ceil), at least 1 token per non-empty item."""
    return (np.asarray(chars, dtype=np.int64) + 3) // 4


def request_turns(item_steps: np.ndarray, item_turns: np.ndarray, req_steps: np.ndarray) -> np.ndarray:
    """Per request (``req_steps``), the user turn it is in: the latest turn among the items it holds, those up to
    its step (-1: none)."""
    if not len(item_steps):
        return np.full(len(req_steps), -1, dtype=np.int64)
    order = np.argsort(item_steps, kind="stable")
    running = np.maximum.accumulate(item_turns[order])
    upto = np.searchsorted(item_steps[order], req_steps, side="right")
    return np.where(upto > 0, running[np.maximum(upto - 1, 0)], -1)


def epoch(ts: str | None) -> float:
    """ISO timestamp -> seconds, NaN when absent or unreadable."""
    if not ts:
        return float("nan")
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return float("nan")


# recorded events that clear content without a summariser call (Claude Code's microcompact, Cline's truncation): no
# LLM call to charge
CLEARING_EVENTS = ("microcompact", "truncation")


@dataclass(frozen=True, eq=False)
class RecordedEvents:
    """What the harness's own context policy did, in item positions (see ``replay.simulator.load``).

    Event e takes effect at request ``step[e]`` and removes the items ``drop[e]`` from the prompt from then on;
    ``recorded_only`` marks items that exist only because of such events (the recorded summary, content re-sent
    after it); ``mask_*`` are per-request placeholders (request, item position, characters shown)."""

    step: np.ndarray
    kind: tuple[str, ...]
    drop: tuple[np.ndarray, ...]
    recorded_only: np.ndarray
    mask_step: np.ndarray
    mask_pos: np.ndarray
    mask_chars: np.ndarray

    @classmethod
    def empty(cls, n_items: int) -> RecordedEvents:
        none = np.zeros(0, dtype=np.int64)
        return cls(none, (), (), np.zeros(n_items, dtype=bool), none, none, none)


@dataclass(frozen=True, eq=False)
class RunArrays:
    """One run: items in seq order and requests, as arrays. ``tokens`` are real when ``token_source`` says so."""

    run_id: str
    step: np.ndarray  # int32 request step before which the item was appended
    kind: np.ndarray  # int8 code into replay.model.KINDS
    tokens: np.ndarray  # int64 token count (real, or chars/4 when no real count)
    chars: np.ndarray  # int64 payload characters
    resource: np.ndarray  # int32 resource id, -1 none
    access: np.ndarray  # int8 code into ACCESS
    pair: np.ndarray  # int32 index of the matching call/result, -1 none
    is_error: np.ndarray  # bool
    ts: np.ndarray  # float64 epoch seconds (NaN unknown)
    tool: np.ndarray  # int32 tool id into tool_names, -1 none
    turn: np.ndarray  # int32 user turn
    lines: np.ndarray  # int32 lines of text (for "N lines omitted" wordings)
    req_step: np.ndarray  # int32 step of each request
    req_end: np.ndarray  # int32 number of items in the history of each request
    req_ts: np.ndarray  # float64
    rec_prompt: np.ndarray  # int64 recorded prompt tokens, -1 unknown
    rec_cache_read: np.ndarray  # int64 recorded cache reads, -1 unknown
    rec_input: np.ndarray  # int64 recorded uncached input tokens (Anthropic input_tokens), -1 unknown
    token_source: str = ESTIMATE_LABEL
    model: str | None = None
    tool_names: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    call_ids: tuple[str | None, ...] = field(default=(), repr=False)
    prefix_tokens: int = 0  # the harness prefix the prompt model put first (a system item), 0 none
    prompt_source: str = "none"  # where the prompt model came from (replay.simulator.prompt)
    unreconstructable: str = ""  # why the log cannot give the server's prompt (calibration's verdict), else ""
    server_gone: np.ndarray | None = field(default=None, repr=False)  # per item: the request from which the server
    # no longer counts it (reasoning kept only within its own turn), -1 never; None: none such
    recorded: RecordedEvents | None = field(default=None, repr=False)  # the harness's own events, None: none
    rec_output: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)  # -1 unknown
    rec_write: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)  # -1 unknown
    rec_write_1h: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)  # -1: not split
    req_model: tuple[str | None, ...] = field(default=(), repr=False)  # the model each request's log names (None:
    # the run's ``model``)
    cache_ttl: float | None = None  # seconds: the TTL most cache-write tokens in the log used; None unrecorded
    cache_fit: CacheFit | None = None  # the run's cache model calibrated from its reads (replay.simulator.cache_fit)
    read_span: np.ndarray | None = field(default=None, repr=False)  # (n_items, 3): lo, hi, key of reads
    read_keys: tuple[str, ...] = field(default=(), repr=False)  # read_span key -> the normalised command
    # per request: what the server counted beyond the replayed prompt (recorded - replayed under the recorded
    # policy), for a preset that triggers on the usage the server reported; empty: none (0 everywhere)
    usage_offset: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)
    # how the run starts (replay.simulator.run_start): tokens the server held cached before its first request, from
    # the start of the prompt; of the prefix item's tokens, those sent after the last cache breakpoint (never cached)
    warm: int = 0
    tail: int = 0
    warm_kept: int = 0  # tokens of the warm prefix other sessions keep cached through the run's idle gaps (run_start)
    # the harness also marks the end of the last assistant message with a cache breakpoint (Claude Code: the last two
    # messages; replay.simulator.run_start.marks_assistant), under explicit breakpoints
    assistant_bp: bool = False
    # per item: tokens the harness's own trigger count adds for it beyond the server's usage (codex-rs: its estimate
    # of earlier turns' encrypted reasoning, ``runs.metadata.harness_estimates``); None: 0 everywhere
    harness_est: np.ndarray | None = field(default=None, repr=False)
    # tool calls are text in the messages, not API call/result pairs (Cline's XML tool format): dropping one never
    # drops its partner (``runs.metadata.tool_calls`` "text")
    text_tools: bool = False
    # per item: a file-tool result a harness's duplicate-read pass may rewrite (Cline: the result that opens a user
    # message), the file as the harness keys it (the path as written in the result's header, as an id; -1 none)
    # and the item's characters once rewritten (``runs.metadata.duplicate_candidates``); None: no such item
    dup_key: np.ndarray | None = field(default=None, repr=False)
    dup_chars: np.ndarray | None = field(default=None, repr=False)
    # per item: characters of the media data it stands for (an image's base64, which Cline weighs as text), from
    # ``runs.metadata.media_chars``; None: 0 everywhere
    media_chars: np.ndarray | None = field(default=None, repr=False)
    system_tokens: int = 0  # tokens up to the system-prompt breakpoint when shorter than the prefix item, 0: all of it
    # per request: the log shows the harness's tool list changed before it (replay.simulator.tool_loads); empty: none
    tools_change: np.ndarray = field(default_factory=lambda: np.zeros(0, bool), repr=False)
    # per request: the most the server's cache can give it, cut back to the prefix item (replay.simulator.run_start
    # .cache_caps), -1: no such limit; empty: none anywhere
    cache_cap: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)
    # per request: what the log shows the server's cache gave it where the server itself lost or kept a prefix
    # (replay.simulator.server_cache): its entries live through the idle gap before it and hold at most this many
    # tokens (-2: what the request before read); -1: the cache model decides; empty: none anywhere
    server_read: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)
    # per request: tokens of the log's own prompt the server read though the run had not cached them (a request the
    # log does not hold wrote them just before: replay.simulator.server_cache); -1 none; empty: none anywhere
    foreign_read: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)
    # per request: tokens the log shows it sent after its last cache breakpoint beyond the run's ``tail``
    # (replay.simulator.run_start.tail_extras): billed as input, written by the next request; empty: none anywhere
    tail_extra: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)
    # per request: its thinking setting differs from the previous request's (replay.simulator.thinking); empty: none
    thinking_switch: np.ndarray = field(default_factory=lambda: np.zeros(0, bool), repr=False)
    # per request: the harness changed its system prompt or a tool's description before it in a way its log shows
    # (a new working directory, a new skill listing: replay.simulator.harness_changes); empty: none
    harness_change: np.ndarray = field(default_factory=lambda: np.zeros(0, bool), repr=False)
    # the summariser calls the log records beside its requests (replay.metrics.summariser_calls): (step, model or
    # None for the run's, (uncached, read, 5 min writes, 1 h writes, output)); and how many its events made in all
    summariser_calls: tuple[tuple[int, str | None, tuple[int, int, int, int, int]], ...] = field(default=(), repr=False)
    summariser_made: int = 0
    # the server-side iterations its responses record beyond each request's own (replay.metrics.server_iterations):
    # (step, model or None for the request's, the five counts); charged as recorded whatever the policy
    server_calls: tuple[tuple[int, str | None, tuple[int, int, int, int, int]], ...] = field(default=(), repr=False)
    # the usage the log records for the whole run instead of per request (replay.metrics.session_totals): per model
    # (model or None for the run's, requests counted, the five counts); the recorded bill where no request has usage
    session_totals: tuple[tuple[str | None, int, tuple[int, int, int, int, int]], ...] = field(default=(), repr=False)
    # the harness's condenser, whose summariser prompt the recorded policy charges (replay.policies.condenser_prompt
    # codes, by the log's format): 0 none known (the summariser reads the whole previous prompt)
    condenser: int = 0
    # the harness's summariser call reads the conversation's cached prefix (its own preset's ``summary_reads_cache``:
    # Claude Code's forked compaction from 2.1.38), whichever policy's summaries it makes
    summary_reads_cache: bool = False
    # per item: the tokens the prompt model adds for it as a message of its own beyond its text (its framing,
    # replay.simulator.prompt.PromptModel.framing); None: 0 everywhere. A summariser shown the item's text in one
    # message of its own does not send them (replay.policies.condenser_prompt)
    framing: np.ndarray | None = field(default=None, repr=False)
    # per item: the harness's own size of it where it chooses what to keep, when that is not what its trigger counts
    # (``harness_est``): the Cline SDK cuts on a message as stored, triggers on it as sent, its long tool results cut
    # (``runs.metadata.harness_keep_estimates``); None: 0 everywhere
    harness_keep: np.ndarray | None = field(default=None, repr=False)
    # per request: the context window of the model the log says served it, where that is not the run's own window
    # (replay.simulator.request_windows: a session that switched model, a Codex turn with another window); 0: the
    # run's (the budget's); empty: 0 everywhere
    req_window: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)
    # per request, with req_window (the same choice): the limit the harness's preset for the model serving it
    # compares its count with there, where that is not the run's preset's limit (its output reserve, or its threshold
    # rule, is another model's); 0: the policy's own limit; empty: 0 everywhere
    req_limit: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64), repr=False)
    # per request: the auto_compact trigger (``replay.policies.auto_compact.TRIGGERS``) of that preset where it is not
    # the run's (Claude Code 2.1.153 on: a model with an auto-compact window, another without); -1: the policy's
    req_trigger: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64), repr=False)
    # per request: the first of a process that loaded the conversation to resume it (Claude Code's
    # ``runs.metadata.resumes``), whose read-file state holds only the files the loaded messages' calls touched
    req_resumed: np.ndarray = field(default_factory=lambda: np.zeros(0, np.bool_), repr=False)
    # per request: the TTL of the cache of the provider serving it where that is not the run's cache model (a model
    # switch to another provider: replay.simulator.cache_fit.request_ttls); 0: the run's; empty: 0 everywhere
    req_ttl: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64), repr=False)
    # per request: the log names a model for it that has no preset of the harness, so the harness's limit there is
    # not known (the policy's holds); empty: none such. Not the loop's: fidelity reads it
    req_unknown_limit: np.ndarray = field(default_factory=lambda: np.zeros(0, np.bool_), repr=False)
    # the preset of the harness that recorded the run, as ``req_window`` and its kin were chosen against it
    # (replay.simulator.harness_preset: its name, window and the knobs the run's model sets); None: not loaded on its
    # own windows, or the log does not say enough for one
    own_preset: tuple[str, int, dict] | None = field(default=None, repr=False)
    # per item: an edit call's change to its file's characters (its new string's less its old one's;
    # replay.simulator.load.edit_growth); None: 0 everywhere
    edit_chars: np.ndarray | None = field(default=None, repr=False)
    # per item: a read call that shows part of its file (a line range; replay.simulator.load.part_reads); None: none
    part_read: np.ndarray | None = field(default=None, repr=False)
    # per item: a file tool's result, what the log tells of the whole file after its call (Claude Code's
    # toolUseResult; runs.metadata.file_chars / file_lines): its characters (0: unknown, as for a read of a line
    # range, whose lines are known) and lines (0: unknown); None: 0 everywhere
    file_chars: np.ndarray | None = field(default=None, repr=False)
    file_lines: np.ndarray | None = field(default=None, repr=False)

    def _per_item(self, values: np.ndarray | None, dtype: type, fill: float = 0) -> np.ndarray:
        """``values`` with one entry per item, ``fill`` everywhere when the run gives none."""
        if values is not None and len(values) == self.n_items:
            return values.astype(dtype)
        return np.full(self.n_items, fill, dtype=dtype)

    def _per_request(self, values: np.ndarray, dtype: type, fill: float = 0) -> np.ndarray:
        """``values`` with one entry per request, ``fill`` everywhere when the run gives none."""
        if len(values) == self.n_requests:
            return values.astype(dtype)
        return np.full(self.n_requests, fill, dtype=dtype)

    @property
    def req_windows(self) -> np.ndarray:
        """``req_window`` per request (0, the budget's window, where none is given)."""
        return self._per_request(self.req_window, np.int64)

    @property
    def req_limits(self) -> np.ndarray:
        """``req_limit`` per request (0, the policy's own limit, where none is given)."""
        return self._per_request(self.req_limit, np.float64)

    @property
    def req_ttls(self) -> np.ndarray:
        """``req_ttl`` per request (0, the run's cache TTL, where none is given)."""
        return self._per_request(self.req_ttl, np.float64)

    @property
    def req_triggers(self) -> np.ndarray:
        """``req_trigger`` per request (-1, the policy's trigger, where none is given)."""
        return self._per_request(self.req_trigger, np.int64, -1)

    @property
    def req_resumes(self) -> np.ndarray:
        """``req_resumed`` per request (False where none is given)."""
        return self._per_request(self.req_resumed, np.bool_)

    @property
    def usage_offsets(self) -> np.ndarray:
        """``usage_offset`` per request (0 where none is given)."""
        return self._per_request(self.usage_offset, np.int64)

    @property
    def harness_estimates(self) -> np.ndarray:
        """``harness_est`` with one entry per item (0 where none is given)."""
        return self._per_item(self.harness_est, np.int64)

    @property
    def harness_keeps(self) -> np.ndarray:
        """``harness_keep`` with one entry per item (0 where none is given)."""
        return self._per_item(self.harness_keep, np.int64)

    @property
    def framings(self) -> np.ndarray:
        """``framing`` with one entry per item (0 where none is given)."""
        return self._per_item(self.framing, np.int64)

    @property
    def dup_keys(self) -> np.ndarray:
        """``dup_key`` with one entry per item (-1 where none is given)."""
        return self._per_item(self.dup_key, np.int64, -1)

    @property
    def dup_chars_after(self) -> np.ndarray:
        """``dup_chars`` with one entry per item (0 where none is given)."""
        return self._per_item(self.dup_chars, np.int64)

    @property
    def edit_chars_of(self) -> np.ndarray:
        """``edit_chars`` with one entry per item (0 where none is given)."""
        return self._per_item(self.edit_chars, np.int64)

    @property
    def part_read_of(self) -> np.ndarray:
        """``part_read`` with one entry per item (False where none is given)."""
        return self._per_item(self.part_read, np.bool_)

    @property
    def file_chars_of(self) -> np.ndarray:
        """``file_chars`` with one entry per item (0 where none is given)."""
        return self._per_item(self.file_chars, np.int64)

    @property
    def file_lines_of(self) -> np.ndarray:
        """``file_lines`` with one entry per item (0 where none is given)."""
        return self._per_item(self.file_lines, np.int64)

    @property
    def media_chars_of(self) -> np.ndarray:
        """``media_chars`` with one entry per item (0 where none is given)."""
        return self._per_item(self.media_chars, np.int64)

    @property
    def thinking_switches(self) -> np.ndarray:
        """``thinking_switch`` with one entry per request (False where none is given)."""
        return self._per_request(self.thinking_switch, np.bool_)

    @property
    def harness_changes(self) -> np.ndarray:
        """``harness_change`` with one entry per request (False where none is given)."""
        return self._per_request(self.harness_change, np.bool_)

    @property
    def tools_changes(self) -> np.ndarray:
        """``tools_change`` with one entry per request (False where none is given)."""
        return self._per_request(self.tools_change, np.bool_)

    @property
    def cache_caps(self) -> np.ndarray:
        """``cache_cap`` with one entry per request (-1 where none is given)."""
        return self._per_request(self.cache_cap, np.int64, -1)

    @property
    def server_reads(self) -> np.ndarray:
        """``server_read`` with one entry per request (-1 where none is given)."""
        return self._per_request(self.server_read, np.int64, -1)

    @property
    def foreign_reads(self) -> np.ndarray:
        """``foreign_read`` with one entry per request (-1 where none is given)."""
        return self._per_request(self.foreign_read, np.int64, -1)

    @property
    def tail_extras(self) -> np.ndarray:
        """``tail_extra`` with one entry per request (0 where none is given)."""
        return self._per_request(self.tail_extra, np.int64)

    @property
    def gone_at(self) -> np.ndarray:
        """Per item, the request from which the server drops it whatever the policy sends (-1: never)."""
        return self.server_gone if self.server_gone is not None else np.full(self.n_items, -1, dtype=np.int64)

    @property
    def events(self) -> RecordedEvents:
        return self.recorded if self.recorded is not None else RecordedEvents.empty(self.n_items)

    @property
    def n_items(self) -> int:
        return len(self.step)

    @property
    def n_requests(self) -> int:
        return len(self.req_step)

    @cached_property
    def first_body(self) -> int:
        """First position after the leading system/tool_defs items (n_items when there is none)."""
        body = np.flatnonzero(~np.isin(self.kind, PREFIX_KINDS))
        return int(body[0]) if len(body) else self.n_items

    @property
    def estimated(self) -> bool:
        return self.token_source != "real" and not self.token_source.startswith("real:")


def _ids(values: list[str | None]) -> tuple[np.ndarray, tuple[str, ...]]:
    names: dict[str, int] = {}
    out = np.array([-1 if v is None else names.setdefault(v, len(names)) for v in values], dtype=np.int32)
    return out, tuple(names)


def _pairs(kinds: list[str], call_ids: list[str | None], copies: np.ndarray | None = None) -> np.ndarray:
    """Each tool result's position paired with its call's (-1: none): the newest open call with its id among the
    items of the same ``copies`` generation (0: the log's own items, e + 1: what context event e sent again, see
    ``replay.simulator.load.copy_generations``), so an original never pairs with a re-sent copy: the copy exists
    only in the recorded replay."""
    pair = np.full(len(kinds), -1, dtype=np.int32)
    gen = copies if copies is not None else np.zeros(len(kinds), dtype=np.int64)
    open_calls: dict[tuple[int, str], int] = {}
    for i, (k, c) in enumerate(zip(kinds, call_ids, strict=False)):
        if c is None:
            continue
        key = (int(gen[i]), c)
        if k == "tool_call":
            open_calls[key] = i
        elif k == "tool_result" and key in open_calls:
            j = open_calls.pop(key)
            pair[i], pair[j] = j, i
    return pair


def build(
    run_id: str,
    items: list[dict],
    requests: list[dict],
    token_source: str = ESTIMATE_LABEL,
    model: str | None = None,
    cache_ttl: float | None = None,
    copies: np.ndarray | None = None,
) -> RunArrays:
    """Arrays from item dicts (step, kind, chars, tokens?, tool_name, call_id, resource, access, is_error, ts,
    turn, lines) and request dicts (step, ts, prompt_tokens, cache_read, input_tokens, cache_write,
    cache_write_1h, output_tokens, model: else the run's ``model``); ``copies``: per item, which context event
    re-sent it (0: none; calls and results pair within one generation, ``_pairs``)."""
    kinds = [it["kind"] for it in items]
    chars = np.array([it.get("chars") or 0 for it in items], dtype=np.int64)
    toks = [it.get("tokens") for it in items]
    tokens = np.array(
        [t if t is not None else int(chars4(c)) for t, c in zip(toks, chars, strict=True)], dtype=np.int64
    )
    step = np.array([it["step"] for it in items], dtype=np.int32)
    tool, tool_names = _ids([it.get("tool_name") for it in items])
    resource, resources = _ids([it.get("resource") for it in items])
    req_step = np.array([r["step"] for r in requests], dtype=np.int32)
    order = np.sort(step, kind="stable")
    if len(step) and (np.diff(step) < 0).any():
        raise ValueError(f"run {run_id}: item steps must not decrease in seq order")
    return RunArrays(
        run_id=run_id,
        step=step,
        kind=np.array([KIND_CODE[k] for k in kinds], dtype=np.int8),
        tokens=tokens,
        chars=chars,
        resource=resource,
        access=np.array([ACCESS_CODE.get(it.get("access") or "none", 5) for it in items], dtype=np.int8),
        pair=_pairs(kinds, [it.get("call_id") for it in items], copies),
        is_error=np.array([bool(it.get("is_error")) for it in items], dtype=bool),
        ts=np.array([epoch(it.get("ts")) for it in items], dtype=np.float64),
        tool=tool,
        turn=np.array([it.get("turn") or 0 for it in items], dtype=np.int32),
        lines=np.array([it.get("lines") or 1 for it in items], dtype=np.int32),
        req_step=req_step,
        req_end=np.searchsorted(order, req_step, side="right").astype(np.int32),
        req_ts=np.array([epoch(r.get("ts")) for r in requests], dtype=np.float64),
        rec_prompt=np.array([_prompt(r) for r in requests], dtype=np.int64),
        rec_input=np.array(
            [-1 if r.get("input_tokens") is None else r["input_tokens"] for r in requests], dtype=np.int64
        ),
        rec_cache_read=np.array(
            [-1 if r.get("cache_read") is None else r["cache_read"] for r in requests], dtype=np.int64
        ),
        token_source=token_source,
        model=model,
        tool_names=tool_names,
        resources=resources,
        call_ids=tuple(it.get("call_id") for it in items),
        rec_output=np.array(
            [-1 if r.get("output_tokens") is None else r["output_tokens"] for r in requests], dtype=np.int64
        ),
        cache_ttl=cache_ttl,
        rec_write=np.array(
            [-1 if r.get("cache_write") is None else r["cache_write"] for r in requests], dtype=np.int64
        ),
        rec_write_1h=np.array(
            [-1 if r.get("cache_write_1h") is None else r["cache_write_1h"] for r in requests], dtype=np.int64
        ),
        req_model=tuple(r.get("model") for r in requests),
        **_spans(items),
    )


def _spans(items: list[dict]) -> dict:
    """``read_span``/``read_keys`` from the items' ``span`` (lo, hi, key) where any item has one."""
    if not any(it.get("span") for it in items):
        return {}
    keys: dict[str, int] = {}
    table = np.array(
        [
            (lo, hi, -1 if key is None else keys.setdefault(key, len(keys)))
            for lo, hi, key in (it.get("span") or (1, 2**62, None) for it in items)
        ],
        dtype=np.int64,
    )
    return {"read_span": table.reshape(-1, 3), "read_keys": tuple(keys)}


def _prompt(r: dict) -> int:
    if r.get("prompt_tokens") is not None:
        return int(r["prompt_tokens"])
    parts = [r.get("input_tokens"), r.get("cache_read"), r.get("cache_write")]
    return -1 if parts[0] is None else int(sum(p or 0 for p in parts))
