"""Load runs from the store into RunArrays: real token counts when the tokenizer has counted them, the prompt
model (harness prefix, scale, content the log does not hold) and the harness's own recorded context events."""

from __future__ import annotations

import json
from dataclasses import replace

import duckdb
import numpy as np

from replay.errors import ReplayError
from replay.metrics.server_iterations import server_calls
from replay.metrics.session_totals import session_totals
from replay.metrics.summariser_calls import recorded_calls
from replay.policies.condenser_prompt import CONDENSERS, NO_CONDENSER
from replay.policies.presets import PRESETS
from replay.readers.claude_code_memory import MEMORY_REREAD
from replay.readers.json_fields import json_args
from replay.readers.tool_targets import END, read_span
from replay.run_arrays import AFTER_COMPACTION, ESTIMATE_LABEL, RecordedEvents, RunArrays, build, chars4, request_turns
from replay.simulator.claude_code_breakpoints import marks_last_two
from replay.simulator.harness_changes import SkillWrite, harness_changes, lists_skills, skill_writes
from replay.simulator.harness_preset import harness_preset
from replay.simulator.idle import inferred_ttl
from replay.simulator.prompt import NONE, PREFIX_CHANGES, PromptModel, prompt_models
from replay.simulator.request_windows import request_windows
from replay.simulator.thinking import thinking_switches
from replay.simulator.tool_loads import LOAD, tool_list_changes
from replay.tokens.usage_metadata import ExactSizes, events_and_rewrites, exact_sizes, rollback_drops

_ITEMS = """
SELECT i.run_id, i.seq, i.step, i.kind, i.role, i.chars, t.n_tokens AS tokens, i.tool_name, i.call_id, i.resource,
       i.access, i.is_error, i.ts, i.turn, i.content_hash,
       CASE WHEN i.kind = 'tool_call' AND i.access = 'read' THEN i.args END AS args,
       CASE WHEN i.kind = 'tool_call' AND i.access = 'write' AND json_valid(i.args)
            THEN json_extract_string(i.args, '$.old_string') END AS edit_old,
       CASE WHEN i.kind = 'tool_call' AND i.access = 'write' AND json_valid(i.args)
            THEN json_extract_string(i.args, '$.new_string') END AS edit_new,
       CASE WHEN i.kind = 'tool_call' AND i.access = 'write' AND coalesce(i.text, '') = ''
            THEN (length(i.args) - length(replace(i.args, '\\n', ''))) // 2 + 1
            ELSE length(i.text) - length(replace(i.text, chr(10), '')) + 1 END AS lines
FROM items i LEFT JOIN token_counts t ON t.content_hash = i.content_hash AND t.tokenizer_id = ?
WHERE i.run_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY i.run_id, i.seq"""
_REQS = """SELECT run_id, step, ts, prompt_tokens, input_tokens, cache_read, cache_write, output_tokens, model,
       cache_write_1h, line
FROM requests WHERE run_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY run_id, step"""
_RUNS = "SELECT run_id, model, metadata, format FROM runs WHERE run_id IN (SELECT unnest(?::VARCHAR[]))"


def _by_run(con: duckdb.DuckDBPyConnection, sql: str, params: list) -> dict[str, list[dict]]:
    """The rows of a query whose first column is the run id, as dicts grouped by run."""
    cur = con.execute(sql, params)
    cols = [d[0] for d in cur.description][1:]
    out: dict[str, list[dict]] = {}
    for row in cur.fetchall():
        out.setdefault(row[0], []).append(dict(zip(cols, row[1:], strict=True)))
    return out


def token_source(items: list[dict], tokenizer_id: str | None) -> str:
    """'real:ID' when every item has a real count, the estimate label when none, else 'mixed:ID+chars/4'."""
    have = sum(it["tokens"] is not None for it in items)
    if tokenizer_id is None or have == 0:
        return ESTIMATE_LABEL
    return f"real:{tokenizer_id}" if have == len(items) else f"mixed:{tokenizer_id}+chars/4"


def _synthetic(step: int, kind: str, tokens: int, marker: str) -> dict:
    """An item the log does not hold but the server counted (``marker`` says why)."""
    return {
        "seq": None,
        "step": step,
        "kind": kind,
        "role": "system" if kind in ("system", "tool_defs") else "user",
        "chars": 4 * tokens,
        "tokens": tokens,
        "tool_name": None,
        "call_id": None,
        "resource": None,
        "access": None,
        "is_error": False,
        "ts": None,
        "turn": 0,
        "content_hash": None,
        "lines": 1,
        "synthetic": marker,
    }


def apply_prompt(items: list[dict], prompt: PromptModel) -> list[dict]:
    """Items counted as the server counts them, with the prefix first and unlogged content at its step (the one
    layout of a run's positions: ``replay.reports.show`` maps the store's items onto it)."""
    raw = np.array(
        [it["tokens"] if it["tokens"] is not None else int(chars4(it["chars"] or 0)) for it in items], dtype=np.int64
    )
    counted = prompt.item_tokens(raw, [it["role"] for it in items], [it["kind"] for it in items])
    for it, n in zip(items, counted, strict=True):
        it["tokens"] = int(n)
        it["framing"] = min(prompt.framing(it["role"]), int(n))  # beyond its text (RunArrays.framing)
    out = _prefix_segments(prompt)
    pending = sorted(u for u in prompt.unlogged if u[2] not in PREFIX_CHANGES)
    until = dict(prompt.until)
    segments = [seg for seg in out if seg["step"] > 0]
    out = [seg for seg in out if seg["step"] == 0]
    for it in items:
        while pending and pending[0][0] < it["step"]:  # after the items of its step: what the harness attaches
            out.append(_unlogged(*pending.pop(0), until, out))  # follows the results and messages it logs
        while segments and segments[0]["step"] <= it["step"]:
            out.append(segments.pop(0))
        out.append(it)
    while pending:
        out.append(_unlogged(*pending.pop(0), until, out))
    out.extend(segments)
    return out


def _unlogged(step: int, tokens: int, why: str, until: dict[int, int], before: list[dict]) -> dict:
    """Content the log does not hold, sent from ``step`` on: until the step ``until`` names for it, when it does
    (``gone_at``: Claude Code's SDK loop drops attachments at the next user message), else to the end; in the user
    turn of the items it follows (``before``: those placed so far), which a turn's own count reads. The schemas
    a tool search loaded (``tool_loads.LOAD``) are tool definitions, which no policy trims: Claude Code keeps a
    loaded tool past a compaction (``compactMetadata.preCompactDiscoveredTools``)."""
    item = _synthetic(step, "tool_defs" if why == LOAD else "attachment", tokens, why)
    item["turn"] = (before[-1].get("turn") or 0) if before else 0  # the user turn of the items it follows
    if why == "compaction":
        item["tool_name"] = AFTER_COMPACTION
    if step in until:
        item["gone_at"] = until[step]
    return item


def _prefix_segments(prompt: PromptModel) -> list[dict]:
    """The prefix as items: the part every segment shares first, then, where the prefix changes (a model switch, a
    new tool list: ``PREFIX_CHANGES`` entries of ``prompt.unlogged``), each segment's own part from its first
    request until the next change (``gone_at``). A segment that starts mid-run is ``tool_defs``: harness prefix,
    which no policy trims (``policies.kernel.pinned``; a compaction left the segment of 05541cb5's /model switch
    out of Claude Code's prompt after it, -26% at request 95)."""
    changes = sorted((s, t) for s, t, why in prompt.unlogged if why in PREFIX_CHANGES)
    starts = [0, *(s for s, _ in changes)]
    sizes = list(np.cumsum([prompt.prefix, *(t for _, t in changes)]))
    shared = max(min(sizes), 0)
    out = [_synthetic(0, "system", shared, "prefix")] if shared > 0 else []
    for i, (start, size) in enumerate(zip(starts, sizes, strict=True)):
        if size - shared > 0 and len(changes):
            seg = _synthetic(start, "tool_defs" if start else "system", int(size - shared), "prefix segment")
            seg["gone_at"] = starts[i + 1] if i + 1 < len(starts) else -1
            out.append(seg)
    return out


def _gone_at(
    items: list[dict], reqs: list[dict], exact: ExactSizes, undone: list[tuple[int, np.ndarray]]
) -> np.ndarray | None:
    """Per item, the request from which the server no longer counts it (-1: never): a prefix segment's or unlogged
    content's ``gone_at``; the first request of a later user turn for reasoning the log sizes (``exact``: Codex's
    encrypted reasoning, Gemini's thoughts): the server counts it within its own turn only (the Responses API
    drops earlier turns' reasoning), but Claude's hidden thinking (``exact.kept``); the first request after a
    rollback that undid its turn (``undone``: ``usage_metadata.rollback_drops``; the earlier of the two when both
    apply); -1 for every other item."""
    segments = [p for p, it in enumerate(items) if it.get("gone_at", -1) >= 0]
    if not exact and not segments and not undone:
        return None
    step = np.array([it["step"] for it in items], dtype=np.int64)
    turn = np.array([it["turn"] or 0 for it in items], dtype=np.int64)
    req_steps = np.array([r["step"] for r in reqs], dtype=np.int64)
    req_turn = request_turns(step, turn, req_steps)
    out = np.full(len(items), -1, dtype=np.int64)
    for p, it in enumerate(items):
        if it["seq"] in exact and it["kind"] == "reasoning" and it["seq"] not in exact.kept:  # a sized summary stays
            later = np.flatnonzero((req_turn > turn[p]) & (req_steps >= step[p]))
            out[p] = int(later[0]) if len(later) else -1
    for p in segments:  # a prefix segment the harness stopped sending, content it dropped (_unlogged)
        out[p] = items[p]["gone_at"]
    pos = {it["seq"]: p for p, it in enumerate(items) if it["seq"] is not None}
    for from_step, seqs in undone:  # the user's rollback: from the first request after it, when there is one
        k = int(np.searchsorted(req_steps, from_step, side="left"))
        if k >= len(reqs):
            continue
        for q in seqs.tolist():
            at = pos.get(q)
            if at is not None:
                out[at] = k if out[at] < 0 else min(out[at], k)
    return out


def _metadata(raw: str | dict | None) -> dict:
    """``runs.metadata`` as a dict ({} when absent or not an object)."""
    value = json.loads(raw) if isinstance(raw, str) else raw
    return value if isinstance(value, dict) else {}


def _events(metadata: dict) -> list[dict]:
    """The run's context events that name their request (``runs.metadata.context_events``)."""
    return [
        ev for ev in metadata.get("context_events") or [] if isinstance(ev, dict) and isinstance(ev.get("step"), int)
    ]


def copy_generations(items: list[dict], metadata: dict) -> np.ndarray:
    """Per item, e + 1 when context event e sent it again (its ``resent`` ranges; after its summary, at the
    summary's step, an attachment or a copy of content first seen before the summary), else 0: the harness's own
    copies, which only the ``recorded`` policy sends (``build`` pairs calls and results within a generation). A
    memory file Claude Code read again after the summary (``memory_reread``) is no copy: every policy sends it."""
    pos = {it["seq"]: p for p, it in enumerate(items) if it["seq"] is not None}
    gen = np.zeros(len(items), dtype=np.int64)
    first_seen: dict[str, int] = {}
    for p, it in enumerate(items):
        if it["content_hash"] is not None:
            first_seen.setdefault(it["content_hash"], p)
    for e, ev in enumerate(_events(metadata)):
        for lo, hi in ev.get("resent") or []:  # content the harness sent again after its summary
            gen[[pos[q] for q in range(int(lo), int(hi)) if q in pos]] = e + 1
        summary = pos.get(ev.get("summary_seq"))
        if summary is None:
            continue
        for p in range(summary + 1, len(items)):
            it = items[p]
            if it["step"] != items[summary]["step"]:
                break
            copy = it["content_hash"] is not None and first_seen.get(it["content_hash"], p) < summary
            # a memory file the harness read again is its context from there on, whatever compacts
            reread = it["kind"] == "attachment" and it["tool_name"] == MEMORY_REREAD
            if (it["kind"] == "attachment" or copy) and not reread:
                gen[p] = e + 1
    return gen


def recorded_events(items: list[dict], metadata: dict, n_requests: int) -> RecordedEvents:
    """The harness's own context events (``runs.metadata.context_events``, ``placeholders``) in item positions.

    Items that exist only because the harness's policy acted (a recorded summary, content re-sent or re-attached
    after it: ``copy_generations``, the unlogged re-attachment a compaction adds) are marked ``recorded_only``:
    every policy but ``recorded`` replays the run without them."""
    pos = {it["seq"]: p for p, it in enumerate(items) if it["seq"] is not None}
    recorded_only = copy_generations(items, metadata) > 0
    steps, kinds, drops = [], [], []
    for ev in _events(metadata):
        # after the last request (the session ended on it): its summariser call is charged at the last request, and
        # it drops nothing there, whose prompt came before it
        ended = ev["step"] >= n_requests
        ranges = [] if ended else ev.get("drop") or []
        dropped = [pos[q] for lo, hi in ranges for q in range(int(lo), int(hi)) if q in pos]
        steps.append(min(ev["step"], max(n_requests - 1, 0)))
        # Cline's truncation is recorded as a condensation with no summary: it makes no summariser call
        truncation = ev.get("harness_kind") == "truncation" and ev.get("summary_seq") is None
        kinds.append("truncation" if truncation else str(ev.get("kind") or "compaction"))
        drops.append(np.array(sorted(dropped), dtype=np.int64))
        summary = pos.get(ev.get("summary_seq"))
        if summary is not None:
            recorded_only[summary] = True
    for p, it in enumerate(items):
        if it.get("synthetic") == "compaction":
            recorded_only[p] = True
    masked = _placeholders(metadata, pos)
    cleared = _cleared(metadata, pos, n_requests)
    if len(cleared):
        masked = tuple(np.concatenate([a, cleared[:, i]]) for i, a in enumerate(masked))
    return RecordedEvents(np.array(steps, dtype=np.int64), tuple(kinds), tuple(drops), recorded_only, *masked)


def _cleared(metadata: dict, pos: dict, n_requests: int) -> np.ndarray:
    """Results an event (or a derived rewrite, ``context_rewrites``) rewrote into a short note that stays from its
    request on (Claude Code's microcompact, Cline's duplicate-file-read pass; ``cleared``: [result seq, characters
    of the note]), as per-request placeholder rows (request, position,
    characters) for every request from the event's to the last; rows of (0, 3) when there are none."""
    rows: list[tuple[int, int, int]] = []
    for ev in events_and_rewrites(metadata):
        if not isinstance(ev, dict) or not isinstance(ev.get("step"), int):
            continue
        for entry in ev.get("cleared") or []:
            if isinstance(entry, list) and len(entry) == 2 and entry[0] in pos and isinstance(entry[1], int):
                rows.extend((k, pos[entry[0]], entry[1]) for k in range(max(ev["step"], 0), n_requests))
    return np.array(sorted(rows), dtype=np.int64).reshape(-1, 3)


def _placeholders(metadata: dict, pos: dict) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-request masking the log records (step, item position, characters shown), origin 'prompt' only."""
    rows = ((metadata.get("placeholders") or {}).get("events")) or []
    keep = [(r[0], pos[r[1]], r[3]) for r in rows if isinstance(r, list) and len(r) == 5 and r[4] == 0 and r[1] in pos]
    arr = np.array(keep, dtype=np.int64).reshape(-1, 3)
    return arr[:, 0], arr[:, 1], arr[:, 2]


def load_run(
    con: duckdb.DuckDBPyConnection, run_id: str, tokenizer_id: str | None = None, prompt: PromptModel | None = None
) -> RunArrays:
    """One run's arrays; tokens from token_counts for ``tokenizer_id`` when present, else chars/4.

    With a ``prompt`` model the items are counted as the server counts them and the harness prefix the log
    does not hold comes first, as a ``system`` item (see ``replay.simulator.prompt``)."""
    return load_many(con, [run_id], tokenizer_id, {run_id: prompt} if prompt is not None else {})[0]


def load_many(
    con: duckdb.DuckDBPyConnection,
    ids: list[str],
    tokenizer_id: str | None = None,
    prompts: dict[str, PromptModel] | None = None,
    own_windows: bool = False,
) -> list[RunArrays]:
    """The arrays of the runs ``ids``, in that order, read with one query per table (``prompts``: each run's
    prompt model, as ``load_run`` takes it; ``own_windows``: each request's window, limit and trigger where its
    model's preset's are not the run's (replay.simulator.request_windows), and the run's own preset they were chosen
    against (``RunArrays.own_preset``), for replaying a run on its harness's own window, as fidelity and simulate
    without ``--window`` do (replay.simulator.own_window); a window the user chooses holds for every request, so
    elsewhere every request takes the budget's)."""
    items = _by_run(con, _ITEMS, [tokenizer_id or "", ids])
    reqs = _by_run(con, _REQS, [ids])
    runs = {r[0]: (r[1], _metadata(r[2]), r[3] or "") for r in con.execute(_RUNS, [ids]).fetchall()}
    skills = skill_writes(con) if any(lists_skills(meta) for _, meta, _ in runs.values()) else []
    out = []
    for rid in ids:
        if rid not in items and rid not in reqs:
            raise ReplayError(f"run {rid!r} not in the store; see `replay runs`")
        model, metadata, fmt = runs.get(rid, (None, {}, ""))
        run = _assemble(
            rid, items.get(rid, []), reqs.get(rid, []), model, metadata, tokenizer_id, (prompts or {}).get(rid), skills
        )
        if own_windows:
            lines = [r["line"] for r in reqs.get(rid, [])]
            own = request_windows(fmt, metadata, model, run.req_model, lines, run.rec_prompt)
            run = replace(
                run,
                req_window=own.window,
                req_limit=own.limit,
                req_trigger=own.trigger,
                req_unknown_limit=own.unknown,
                own_preset=None if own.preset is None else (own.preset[0], own.preset[1].window, own.preset[2]),
            )
        out.append(run)
    return _with_caches(con, ids, out)


def _with_caches(con: duckdb.DuckDBPyConnection, ids: list[str], runs: list[RunArrays]) -> list[RunArrays]:
    """Each run with its cache model calibrated from its recorded reads (replay.simulator.cache_fit), its harness's
    condenser by the log's format (replay.policies.condenser_prompt) and whether its harness's summariser call reads
    the cached conversation (``summary_reads_cache``)."""
    from replay.simulator.cache_fit import fit_caches

    rows = con.execute(
        "SELECT run_id, format, metadata FROM runs WHERE run_id IN (SELECT unnest(?::VARCHAR[]))", [ids]
    ).fetchall()
    formats = {rid: fmt for rid, fmt, _ in rows}
    metadata = {rid: _metadata(meta) for rid, _, meta in rows}
    return [
        replace(
            r,
            condenser=CONDENSERS.get(formats.get(r.run_id) or "", NO_CONDENSER),
            summary_reads_cache=summariser_reads_cache(formats.get(r.run_id) or "", metadata.get(r.run_id, {}), r),
        )
        for r in fit_caches(runs, formats)
    ]


def summariser_reads_cache(fmt: str, metadata: dict, run: RunArrays) -> bool:
    """Whether the run's harness sends its summariser call as the conversation it summarises, reading its cached
    prefix: what the harness's own preset for the run's version and model says (``summary_reads_cache``)."""
    chosen = harness_preset(fmt, metadata, run.model, int(run.rec_prompt.max(initial=0)))
    if chosen is None or chosen[0] not in PRESETS:
        return False
    name, _, knobs = chosen
    return bool({**PRESETS[name].params, **knobs}.get("summary_reads_cache", False))


def _assemble(
    run_id: str,
    items: list[dict],
    reqs: list[dict],
    model: str | None,
    metadata: dict,
    tokenizer_id: str | None,
    prompt: PromptModel | None,
    skills: list[SkillWrite] | None = None,
) -> RunArrays:
    """One run's arrays from its rows (see ``load_run``; ``skills``: the store's skill writes,
    replay.simulator.harness_changes)."""
    for it in items:
        if it["args"] is not None:  # which lines a read shows: repeat reads are by content
            it["span"] = read_span(it["tool_name"], it["args"])
    source = token_source(items, tokenizer_id)
    prefix, prompt_source, caveat = 0, NONE, ""
    exact = ExactSizes()
    if prompt is not None and prompt.source != NONE:
        items = apply_prompt(items, prompt)
        # what the log gives only as a size (encrypted reasoning, a remote summary; no reasoning when the fit left it
        # out and the harness never resends it): unscaled, framed as every other item is (calibrate: one message more)
        exact = exact_sizes(metadata, prompt.drop_reasoning, model)
        for it in items:
            if it["seq"] in exact:
                it["tokens"] = exact[it["seq"]] + prompt.framing(it["role"])
        prefix, prompt_source, caveat = prompt.prefix, prompt.source, prompt.unreconstructable
    writes = metadata.get("cache_writes")
    run = build(run_id, items, reqs, source, model, recorded_ttl(writes), copy_generations(items, metadata))
    if writes and run.cache_ttl is None:  # split by duration, left at zero: the reads say which
        run = replace(run, cache_ttl=inferred_ttl(run))
    events = recorded_events(items, metadata, len(reqs))
    calls, made = recorded_calls(metadata)
    dup_key, dup_chars = duplicate_candidates(items, metadata)
    return replace(
        run,
        thinking_switch=thinking_switches(items, reqs, model),
        harness_change=harness_changes(run, metadata, skills or []),
        assistant_bp=marks_last_two(metadata),
        tools_change=tool_list_changes(metadata, len(reqs)),
        req_resumed=resumed_requests(metadata, reqs),
        prefix_tokens=prefix,
        prompt_source=prompt_source,
        unreconstructable=caveat,
        recorded=events,
        server_gone=_gone_at(items, reqs, exact, rollback_drops(metadata)),
        harness_est=per_item(items, metadata, "harness_estimates"),
        harness_keep=per_item(items, metadata, "harness_keep_estimates"),
        media_chars=per_item(items, metadata, "media_chars"),
        edit_chars=edit_growth(items),
        part_read=part_reads(items),
        file_chars=per_item(items, metadata, "file_chars"),
        file_lines=per_item(items, metadata, "file_lines"),
        framing=np.array([it.get("framing", 0) for it in items], dtype=np.int64),
        text_tools=metadata.get("tool_calls") == "text",
        dup_key=dup_key,
        dup_chars=dup_chars,
        summariser_calls=tuple((c.step, c.model, c.counts) for c in calls),
        summariser_made=made,
        server_calls=tuple((c.step, c.model, c.counts) for c in server_calls(metadata)),
        session_totals=tuple((t.model, t.requests, t.counts) for t in session_totals(metadata)),
    )


def resumed_requests(metadata: dict, reqs: list[dict]) -> np.ndarray:
    """Per request, True at the first request from each step at which the log shows a process loading the
    conversation to resume it (``runs.metadata.resumes``); empty when there is none."""
    steps = [r["step"] for r in reqs]
    out = np.zeros(len(reqs), dtype=np.bool_)
    for note in metadata.get("resumes") or []:
        at = note.get("step") if isinstance(note, dict) else None
        k = int(np.searchsorted(steps, at, side="left")) if isinstance(at, int) else len(reqs)
        if k < len(reqs):
            out[k] = True
    return out if out.any() else np.zeros(0, dtype=np.bool_)


def edit_growth(items: list[dict]) -> np.ndarray | None:
    """Per item, the characters an edit call (a write whose arguments hold ``old_string`` and ``new_string``) adds
    to its file (negative: it removes them); None when no item is such an edit. ``replace_all`` is taken as one
    replacement (the log does not say how many there were)."""
    growth = [
        len(it["edit_new"]) - len(it["edit_old"])
        if it.get("edit_new") is not None and it.get("edit_old") is not None
        else 0
        for it in items
    ]
    return np.array(growth, dtype=np.int64) if any(growth) else None


def part_reads(items: list[dict]) -> np.ndarray | None:
    """Per item, whether a read call shows part of its file (a line range: Claude Code's Read with an ``offset`` or a
    ``limit``, whatever their values, as its SDK loop tells a whole read; replay.readers.tool_targets.read_span);
    None when no item is such a read."""
    part = [
        it.get("span") is not None and (it["span"][:2] != (1, END) or "offset" in args or "limit" in args)
        if isinstance(args := json_args(it.get("args")), dict)
        else False
        for it in items
    ]
    return np.array(part, dtype=np.bool_) if any(part) else None


def duplicate_candidates(items: list[dict], metadata: dict) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``dup_key`` and ``dup_chars`` per item from ``runs.metadata.duplicate_candidates`` ([[seq, key, chars after
    the rewrite], ...]); both None when the reader recorded none."""
    given = {
        int(c[0]): (int(c[1]), int(c[2]))
        for c in metadata.get("duplicate_candidates") or []
        if isinstance(c, list) and len(c) == 3 and all(isinstance(v, int) for v in c)
    }
    if not given:
        return None, None
    pairs = [given.get(it["seq"], (-1, 0)) if it["seq"] is not None else (-1, 0) for it in items]
    return np.array([p[0] for p in pairs], dtype=np.int64), np.array([p[1] for p in pairs], dtype=np.int64)


def per_item(items: list[dict], metadata: dict, key: str) -> np.ndarray | None:
    """Per item, the number a reader recorded for some items as ``runs.metadata[key]`` ([[seq, n], ...]; 0 for the
    others): ``harness_estimates`` (the tokens the harness's own trigger count gives the item),
    ``harness_keep_estimates`` (its own size where it chooses what to keep, when not that), ``media_chars`` (the
    characters of the media data it stands for), ``file_chars`` and ``file_lines`` (the whole file after a file
    tool's call, replay.readers.claude_code_files); None when it recorded none."""
    given = {
        int(p[0]): int(p[1])
        for p in metadata.get(key) or []
        if isinstance(p, list) and len(p) == 2 and all(isinstance(v, int) for v in p)
    }
    if not given:
        return None
    return np.array([given.get(it["seq"], 0) if it["seq"] is not None else 0 for it in items], dtype=np.int64)


def recorded_ttl(cache_writes: dict | None) -> float | None:
    """3,600 s when the log's 1 h cache writes outweigh its 5 min ones, else 300 s; None when the log does not
    split them (``runs.metadata.cache_writes``: request step -> [5 min tokens, 1 h tokens], Claude Code)."""
    if not cache_writes:
        return None
    five = sum(int(v[0] or 0) for v in cache_writes.values())
    hour = sum(int(v[1] or 0) for v in cache_writes.values())
    return (3600.0 if hour > five else 300.0) if five or hour else None


def run_ids(con: duckdb.DuckDBPyConnection, pattern: str | None = None) -> list[str]:
    """Run ids with at least one request, optionally filtered by a LIKE pattern on run_id or source path."""
    sql = "SELECT run_id FROM runs WHERE n_requests > 0"
    params: list = []
    if pattern:
        sql += " AND (run_id LIKE ? OR source_path LIKE ?)"
        params = [pattern, pattern]
    return [r[0] for r in con.execute(sql + " ORDER BY run_id", params).fetchall()]


def load_runs(
    con: duckdb.DuckDBPyConnection,
    tokenizer_id: str | None = None,
    pattern: str | None = None,
    prompt: bool = True,
    overhead: int | None = None,
    fitted: tuple | None = None,
    ids: list[str] | None = None,
    own_windows: bool = False,
) -> list[RunArrays]:
    """Runs matching ``pattern`` (or the runs ``ids``), under the prompt model (``prompt=False``: the log's items
    only; ``overhead``: the prefix for runs with no fit of their own and no profile; ``fitted``: a ``fit_usage``
    result for this tokenizer to reuse; ``own_windows``: as ``load_many``)."""
    ids = run_ids(con, pattern) if ids is None else ids
    require_counts(con, tokenizer_id, ids)
    models = prompt_models(con, tokenizer_id, ids, override=overhead, fitted=fitted) if prompt else {}
    return load_many(con, ids, tokenizer_id, models, own_windows)


def require_counts(con: duckdb.DuckDBPyConnection, tokenizer_id: str | None, ids: list[str]) -> None:
    """Fail when runs are to be loaded under a tokenizer that counted nothing in this store."""
    if (
        tokenizer_id
        and ids
        and con.execute("SELECT count(*) FROM token_counts WHERE tokenizer_id = ?", [tokenizer_id]).fetchall()[0][0]
        == 0
    ):
        raise ReplayError(
            f"no token counts for tokenizer {tokenizer_id!r} in this store: count them first "
            "(`replay tokens -t NAME|PATH`, or pass -t to the command), or give no tokenizer for "
            "chars/4 estimates"
        )


def prompt_sources(runs: list[RunArrays]) -> str:
    """One line: how many runs took their prefix from a fit, a harness profile, ``--overhead`` or nothing."""
    counts: dict[str, int] = {}
    for r in runs:
        counts[r.prompt_source] = counts.get(r.prompt_source, 0) + 1
    text = ", ".join(f"{n} runs {src}" for src, n in sorted(counts.items()))
    if counts.get(NONE):
        text += (
            f" ({counts[NONE]} runs have no usage to fit and no harness profile: their prompt is the log's "
            "items only; pass --overhead TOKENS)"
        )
    return text
