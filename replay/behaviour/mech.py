"""The closed-loop re-read: before an edit of a file whose latest read the view hides, the agent reads the file
again. Each such re-read is inserted into the run as one more request (the read call and its result, a copy of the
latest read), and the policy is run again on the longer run: the inserted results push older ones out of a window,
which can hide the read before a later edit (a cascade). Repeated until no edit is left blind."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from replay.errors import ReplayError
from replay.policies.view import ORIGINAL, View
from replay.run_arrays import ACCESS_CODE, TOOL_CALL, RecordedEvents, RunArrays

READ, WRITE = ACCESS_CODE["read"], ACCESS_CODE["write"]
MAX_PASSES = 200  # a cascade that has not settled after this many passes is reported, not cut short

ViewsOf = Callable[[RunArrays], Iterable[View]]


@dataclass(frozen=True)
class Mech:
    """The inserted re-reads: ``requests`` of them, ``prompt_tokens`` the prompts of those requests under the
    policy, in ``passes`` passes (1: no cascade)."""

    requests: int
    prompt_tokens: int
    passes: int


def blind_edits(
    run: RunArrays, views: Iterable[View], prompts: dict[int, int] | None = None
) -> list[tuple[int, int, int]]:
    """(request, latest read call, edit call) per edit call whose file's latest read result (in the deciding
    request's history) the view of that request hides; one per request and file. ``prompts``: requests whose
    prompt tokens to note in it as the views stream past (none is kept)."""
    reads = np.flatnonzero((run.kind == TOOL_CALL) & (run.resource >= 0) & (run.pair >= 0) & (run.access == READ))
    read_res = run.pair[reads].astype(np.int64)
    edits = np.flatnonzero((run.kind == TOOL_CALL) & (run.resource >= 0) & (run.access == WRITE))
    decide = np.searchsorted(run.req_end, edits, side="right") - 1
    by_request: dict[int, list[int]] = {}
    for e, k in zip(edits.tolist(), decide.tolist(), strict=True):
        if k >= 0:
            by_request.setdefault(k, []).append(e)
    out: list[tuple[int, int, int]] = []  # (request, earlier read, edit)
    for k, view in enumerate(views):
        if prompts is not None and k in prompts:
            prompts[k] = int(view.prompt_tokens)
        for e in by_request.get(k, ()):
            mine = np.flatnonzero((run.resource[reads] == run.resource[e]) & (read_res < view.end))
            if len(mine) and view.forms[read_res[mine[-1]]] != ORIGINAL:
                if not any(o[0] == k and o[1] == int(reads[mine[-1]]) for o in out):
                    out.append((k, int(reads[mine[-1]]), int(e)))
    return out


def insert_reads(
    run: RunArrays, picks: list[tuple[int, int]] | list[tuple[int, int, int]]
) -> tuple[RunArrays, list[int]]:
    """``run`` with one request inserted before each request k of ``picks`` whose response is a copy of read call
    ``c`` and its result; and the new requests' indices."""
    if not picks:
        return run, []
    n, m = run.n_items, run.n_requests
    picks = sorted((p[0], p[1]) for p in picks)
    at = np.array([int(run.req_end[k]) for k, _ in picks], dtype=np.int64)  # items inserted before this position
    src_call = np.array([c for _, c in picks], dtype=np.int64)
    src = np.stack([src_call, run.pair[src_call].astype(np.int64)], axis=1).reshape(-1)  # call, result, call, ...
    before = np.repeat(at, 2)
    old_pos = np.arange(n)
    item_shift = 2 * np.searchsorted(at, old_pos, side="right")  # old item p moves by 2 per insertion at <= p
    new_old = old_pos + item_shift
    new_ins = before + 2 * np.repeat(np.arange(len(picks)), 2) + np.tile([0, 1], len(picks))
    req_k = np.array([k for k, _ in picks], dtype=np.int64)
    req_shift = np.searchsorted(req_k, np.arange(m), side="right")  # old request k moves by insertions at <= k
    new_req_old = np.arange(m) + req_shift
    new_req_ins = req_k + np.arange(len(picks))
    n2, m2 = n + 2 * len(picks), m + len(picks)

    def items(a: np.ndarray, fill: np.ndarray | None = None) -> np.ndarray:
        out = np.empty((n2, *a.shape[1:]), dtype=a.dtype)
        out[new_old] = a
        out[new_ins] = a[src] if fill is None else fill
        return out

    def reqs(a: np.ndarray) -> np.ndarray:
        if len(a) != m:
            return a
        out = np.empty(m2, dtype=a.dtype)
        out[new_req_old] = a
        out[new_req_ins] = a[req_k]
        return out

    def unknown(a: np.ndarray) -> np.ndarray:
        if len(a) != m:
            return a
        out = reqs(a)
        out[new_req_ins] = -1
        return out

    remap = np.concatenate([new_old, [-1]])  # old position -> new (-1 stays -1)
    pair = items(run.pair.astype(np.int64))
    pair[new_old] = remap[run.pair]
    pair[new_ins] = new_ins.reshape(-1, 2)[:, ::-1].reshape(-1)
    req_step = np.arange(m2, dtype=np.int32)  # one step a request, in order
    first_out = np.concatenate([new_old, [n2]])  # old position -> new; n (past the end) -> n2
    req_end = np.empty(m2, dtype=np.int64)
    req_end[new_req_old] = first_out[run.req_end]  # an old request's history takes the pairs inserted before it
    req_end[new_req_ins] = at + 2 * np.arange(len(picks))
    step = np.searchsorted(req_end, np.arange(n2), side="right").astype(np.int32)  # first request that holds it
    call_ids = list(run.call_ids) if run.call_ids else [None] * n
    new_ids: list[str | None] = [None] * n2
    for p, q in zip(old_pos.tolist(), new_old.tolist(), strict=True):
        new_ids[q] = call_ids[p]
    for i, q in enumerate(new_ins.tolist()):
        new_ids[q] = f"mech-reread-{i // 2}"
    gone = run.server_gone
    if gone is not None:
        g = np.where(gone >= 0, remap_req(gone, new_req_old), -1)
        gone = items(g, np.full(len(new_ins), -1, dtype=gone.dtype))
    return (
        dataclasses.replace(
            run,
            step=step,
            kind=items(run.kind),
            tokens=items(run.tokens),
            chars=items(run.chars),
            resource=items(run.resource),
            access=items(run.access),
            pair=pair.astype(np.int32),
            is_error=items(run.is_error),
            ts=items(run.ts),
            tool=items(run.tool),
            turn=items(run.turn),
            lines=items(run.lines),
            req_step=req_step,
            req_end=req_end.astype(np.int32),
            req_ts=reqs(run.req_ts),
            rec_prompt=unknown(run.rec_prompt),
            rec_cache_read=unknown(run.rec_cache_read),
            rec_input=unknown(run.rec_input),
            rec_output=unknown(run.rec_output),
            rec_write=unknown(run.rec_write),
            rec_write_1h=unknown(run.rec_write_1h),
            usage_offset=reqs(run.usage_offset) if len(run.usage_offset) == m else run.usage_offset,
            req_model=tuple(reqs(np.array(run.req_model, dtype=object))) if len(run.req_model) == m else (),
            call_ids=tuple(new_ids),
            server_gone=gone,
            recorded=_shift_events(run.recorded, remap, new_req_old, n2),
            read_span=items(run.read_span) if run.read_span is not None else None,
        ),
        new_req_ins.tolist(),
    )


def remap_req(k: np.ndarray, new_req_old: np.ndarray) -> np.ndarray:
    return new_req_old[np.clip(k, 0, len(new_req_old) - 1)]


def _shift_events(
    ev: RecordedEvents | None, remap: np.ndarray, new_req_old: np.ndarray, n2: int
) -> RecordedEvents | None:
    """The harness's own events at their new item and request positions."""
    if ev is None:
        return None
    keep = np.zeros(n2, dtype=bool)
    keep[remap[:-1]] = ev.recorded_only
    return RecordedEvents(
        remap_req(ev.step, new_req_old),
        ev.kind,
        tuple(remap[d] for d in ev.drop),
        keep,
        remap_req(ev.mask_step, new_req_old),
        remap[ev.mask_pos],
        ev.mask_chars,
    )


def first_per_file(run: RunArrays, picks: list[tuple[int, int, int]], done: set | None = None) -> list[tuple]:
    """The earliest pick of each file among edits not re-read for yet (``done``: their call ids): a re-read is the
    latest read of its file for the edits after it, so those are judged again on the next pass; an edit is re-read
    for once (a window too small for the files one request edits cannot be helped by reading again)."""
    seen: set[int] = set()
    out = []
    for k, c, e in sorted(picks):
        if done is not None and edit_key(run, e) in done:
            continue
        if int(run.resource[c]) not in seen:
            seen.add(int(run.resource[c]))
            out.append((k, c, e))
    return out


def edit_key(run: RunArrays, e: int) -> object:
    """An edit call's identity that survives insertions: its call id, else its position among the run's calls."""
    cid = run.call_ids[e] if run.call_ids else None
    return cid if cid is not None else ("call", int(np.count_nonzero(run.kind[:e] == TOOL_CALL)))


def mech(run: RunArrays, views_of: ViewsOf) -> Mech:
    """Insert the re-reads until no edit is blind (``views_of``: the policy's views of a run, per request)."""
    inserted: list[int] = []
    done: set = set()
    for passes in range(1, MAX_PASSES + 1):
        prompts = dict.fromkeys(inserted, 0)
        picks = first_per_file(run, blind_edits(run, views_of(run), prompts), done)
        done |= {edit_key(run, e) for _, _, e in picks}
        if not picks:
            return Mech(len(inserted), sum(prompts.values()) + run.tail * len(inserted), passes)
        run, new = insert_reads(run, picks)
        old_k = np.array(sorted(p[0] for p in picks))
        moved = [k + int(np.searchsorted(old_k, k, side="right")) for k in inserted]
        inserted = sorted(moved + new)
    raise ReplayError(
        f"{run.run_id}: re-reads before blind edits still cascade after {MAX_PASSES} passes; "
        "report the run (replay behaviour --runs RUN) with the policy setting"
    )
