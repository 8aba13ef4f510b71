"""What request k would have sent under a policy: the view segment by segment, with tokens and cache status.

Built from the simulator's public pieces: the run as ``load_run`` gives it (harness prefix first, as a synthetic
``system`` item), the charged views of ``replay.simulator.run.charged_views``, ``View.segments()`` and the cache
model ``billing_for`` picks. The loop mirrors ``replay.simulator.run._simulate`` (tests hold the two to the same
prompt and cache figures).
"""

from __future__ import annotations

import sys
from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache

import duckdb

from replay.errors import ReplayError
from replay.metrics.prices import DEFAULT_PRICING, Pricing
from replay.model import KINDS
from replay.policies.base import AnyPolicy, Budget
from replay.policies.view import DROPPED, OMITTED, ORIGINAL, PLACEHOLDER, SHRUNK, SPILLED, Segment, View
from replay.run_arrays import RunArrays
from replay.simulator.billing import billing_for
from replay.simulator.caches import CacheModel
from replay.simulator.load import apply_prompt
from replay.simulator.prompt import NONE, PromptModel
from replay.simulator.run import charged_views

PREVIEW = 160  # characters of an item's text kept for previews


@dataclass(frozen=True)
class ItemInfo:
    """What the store says about one history position (synthetic: the prompt model's own items)."""

    seq: int | None
    kind: str
    tool: str | None
    call_id: str | None
    head: str
    tail: str
    chars: int
    synthetic: str = ""


@dataclass
class Row:
    """One line of a shown view: a segment, or a collapsed range of dropped positions."""

    first: int  # history position (-1: the policy's summary)
    last: int
    form: str  # original, placeholder, shrunk, spilled, omitted, summary, dropped, prefix
    kind: str
    tool: str
    tokens: int
    est: int
    cache: str  # cached, written, uncached, cached+written, ... ('' for dropped)
    text: str
    full_tokens: int = 0  # dropped ranges: their tokens in full


@dataclass
class ShownView:
    """Request k of a run under one policy."""

    run_id: str
    policy: str
    k: int
    requests: int
    step: int
    items: int
    prompt_tokens: int
    cached: int
    written: int
    uncached: int
    window: int
    reserve: int
    overflow: bool
    summarised: bool
    emergency: bool
    rewritten: bool  # the view rewrote part of the previous one (a trim, placeholder pass or summary)
    token_source: str
    prompt_source: str
    cache_model: str
    rows: list[Row] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


@lru_cache(maxsize=1 << 16)  # a run's items recur in every view that keeps them
def clean(text: str, limit: int = PREVIEW) -> str:
    """One line of plain text: newlines and tabs as visible marks, other control characters escaped, cut."""
    end = limit + 1  # every character shows as one or more, so what lies past here is cut anyway
    while end < len(text) and text[end - 1] == "\r":  # never half of a \r\n
        end += 1
    text = text[:end]
    out = text.replace("\r\n", "\n").replace("\n", "⏎ ").replace("\t", " ")
    out = "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in out)
    return out if len(out) <= limit else out[: limit - 1] + "…"


_TEXT = """SELECT seq, kind, role, tool_name, call_id, step, substr(coalesce(nullif(text, ''), args, ''), 1, ?) AS head,
       right(coalesce(nullif(text, ''), args, ''), ?) AS tail, coalesce(chars, 0) AS chars
FROM items WHERE run_id = ? ORDER BY seq"""


def item_infos(con: duckdb.DuckDBPyConnection, run: RunArrays, prompt: PromptModel | None) -> list[ItemInfo]:
    """Per history position of ``run``, its store item, with the prompt model's synthetic items where
    ``replay.simulator.load`` puts them (the prefix first, unlogged content before the first item of its step)."""
    rows = con.execute(_TEXT, [PREVIEW, PREVIEW, run.run_id]).fetchall()
    stored = [
        {
            "seq": seq,
            "kind": kind,
            "role": role,
            "step": step,
            "chars": chars,
            "tokens": 0,
            "info": ItemInfo(seq, kind, tool, call, head, tail, chars),
        }
        for seq, kind, role, tool, call, step, head, tail, chars in rows
    ]
    if prompt is not None and prompt.source != NONE:  # the loader's own layout: prefix pieces, unlogged content
        stored = apply_prompt(stored, prompt)
    out = [
        it["info"] if "info" in it else ItemInfo(None, it["kind"], None, None, "", "", 0, it["synthetic"])
        for it in stored
    ]
    kinds = [KINDS[c] for c in run.kind]
    if len(out) != run.n_items or [i.kind for i in out] != kinds:
        raise ReplayError(
            f"run {run.run_id}: the store's items do not line up with the loaded run ({len(out)} vs "
            f"{run.n_items} positions); re-ingest the run (`replay ingest PATH --db ...`)"
        )
    return out


def _fmt(template: str, **values: object) -> str:
    class Keep(dict):
        def __missing__(self, key: str) -> str:
            return "{" + key + "}"

    try:
        return template.format_map(Keep(values))
    except (ValueError, IndexError):
        return template


# module constants that hold a form's wording, by form (first found in the policy's module wins)
_WORDING_NAMES = {
    PLACEHOLDER: ("WORDING", "CLEARED"),
    SHRUNK: ("APPLIED", "CLEARED_INPUT", "CAPPED"),
    OMITTED: ("MARKER",),
    SPILLED: ("POINTER",),
}
_CONFIG_NAMES = {PLACEHOLDER: ("wording",), OMITTED: ("marker",)}


def wording(policy: AnyPolicy, form: int, p: int, info: ItemInfo, run: RunArrays) -> str:
    """The text a policy puts in place of item ``p`` in ``form`` (its placeholder, marker, note), from the policy's
    own ``wording_of`` or its wording knob or module constant, with the item's tool, call id and lines filled in."""
    if form == PLACEHOLDER and hasattr(policy, "wording_of"):
        return str(policy.wording_of(p, run))
    if policy.replays_recorded and form == PLACEHOLDER:
        return "[the log's own placeholder; its text is not stored, only its length]"
    template = next(
        (
            getattr(policy.config, n)
            for n in _CONFIG_NAMES.get(form, ())
            if isinstance(getattr(policy.config, n, None), str)
        ),
        None,
    )
    if template is None:
        module = sys.modules.get(type(policy).__module__)
        template = next((getattr(module, n) for n in _WORDING_NAMES.get(form, ()) if hasattr(module, n)), None)
    if template is None:
        return f"[{policy.name}: {('placeholder', 'shrunk', 'spilled', 'omitted')[form - 1]} form]"
    return _fmt(
        template,
        tool=info.tool or "?",
        call_id=info.call_id or "?",
        n=int(run.lines[p]),
        cap=getattr(policy.config, "tool_cap", "?"),
        pointer="<spill file>",
    )


def _item_text(policy: AnyPolicy, form: int, p: int, info: ItemInfo, run: RunArrays) -> str:
    if info.synthetic == "prefix":
        return "harness prefix the log does not hold (system prompt, tool schemas; prompt model)"
    if info.synthetic:
        return f"content the log does not hold ({info.synthetic}; prompt model)"
    if form == ORIGINAL:
        return clean(info.head)
    said = wording(policy, form, p, info, run)
    head = getattr(policy.config, "head_chars", 0)  # seed_a's, or a Python policy's knob of that name
    if form == PLACEHOLDER and head:
        tail = getattr(policy.config, "tail_chars", 0)
        return clean(f"{said} {info.head[:head]} … {info.tail[-tail:] if tail else ''}")
    if form == SPILLED:
        return clean(f"{said} preview: {info.head}")
    return clean(said)


def _cache_status(lo: int, hi: int, cached: int, written: int) -> str:
    """Which part of the charged prompt [lo, hi) falls in: read from cache, written to it, or neither."""
    if hi <= lo:
        return "-"
    parts = [
        name
        for name, a, b in (
            ("cached", 0, cached),
            ("written", cached, cached + written),
            ("uncached", cached + written, 1 << 62),
        )
        if lo < b and hi > a
    ]
    return "+".join(parts)


def shown_view(
    run: RunArrays,
    infos: list[ItemInfo],
    policy: AnyPolicy,
    view: View,
    cached: int,
    written: int,
    budget: Budget,
    cache_name: str,
    prev_end: int,
) -> ShownView:
    """A view as rows: segments in prompt order, dropped ranges collapsed, cache status per segment."""
    k = view.k
    server_gone = run.gone_at  # an earlier turn's reasoning the server no longer counts (the prompt model)
    prompt = view.prompt_tokens
    window = view.window or budget.window
    rows: list[Row] = []
    recorded_only = run.events.recorded_only
    at = 0

    def summary_row(summary: Segment, at: int) -> Row:
        """The policy's summary as a row: simulated by size, so it has no text."""
        return Row(
            -1,
            -1,
            "summary",
            "summary",
            "",
            summary.tokens,
            summary.est,
            _cache_status(at, at + summary.tokens, cached, written),
            f"[{policy.name}'s summary #{view.summary_id}: simulated by size, no text]",
        )

    def gone(p: int) -> bool:
        return view.forms[p] == DROPPED or (not policy.replays_recorded and bool(recorded_only[p]))

    p = 0
    segs = {s.item: s for s in view.segments() if s.item >= 0}
    summary = next((s for s in view.segments() if s.kind == "summary"), None)
    while p < view.end:
        if p == view.summary_at and summary is not None:
            rows.append(summary_row(summary, at))
            at += summary.tokens
        if gone(p):
            q = p
            while q + 1 < view.end and gone(q + 1) and q + 1 != view.summary_at:
                q += 1
            full = int(run.tokens[p : q + 1].sum())
            what = (
                "recorded-only (the harness's own artifacts)"
                if not (view.forms[p : q + 1] == DROPPED).any()
                else "dropped"
            )
            if ((server_gone[p : q + 1] >= 0) & (server_gone[p : q + 1] <= k)).all():
                what = "the server's own drop (an earlier turn's reasoning)"
            n = q - p + 1
            rows.append(
                Row(
                    p,
                    q,
                    "dropped",
                    f"{n} item{'s' if n > 1 else ''}",
                    "",
                    0,
                    0,
                    "",
                    f"{what}, not sent ({full:,} tokens in full)",
                    full,
                )
            )
            p = q + 1
            continue
        s, info = segs[p], infos[p]
        partner = int(run.pair[p])
        if info.tool is None and partner >= 0:  # a result names its tool through its call
            info = replace(info, tool=infos[partner].tool)
        form = int(view.forms[p])
        name = "prefix" if info.synthetic == "prefix" else s.kind
        rows.append(
            Row(
                p,
                p,
                name,
                info.kind,
                info.tool or "",
                s.tokens,
                s.est,
                _cache_status(at, at + s.tokens, cached, written),
                _item_text(policy, form, p, info, run),
            )
        )
        at += s.tokens
        p += 1
    if summary is not None and view.summary_at >= view.end:
        rows.append(summary_row(summary, at))
        at += summary.tokens
    return ShownView(
        run.run_id,
        policy.name,
        k,
        run.n_requests,
        int(run.req_step[k]),
        view.end,
        prompt,
        cached,
        written,
        prompt - cached - written,
        window,
        budget.reserve,
        prompt + budget.reserve > window,
        view.summarised,
        view.emergency,
        view.dirty_from < prev_end,
        run.token_source,
        run.prompt_source,
        cache_name,
        rows,
    )


def replay_views(
    run: RunArrays,
    infos: list[ItemInfo],
    policy: AnyPolicy,
    cache: CacheModel | None,
    budget: Budget,
    pricing: Pricing = DEFAULT_PRICING,
    only: int | None = None,
    label: str = "",
) -> list[ShownView]:
    """Every request's shown view under ``policy`` (``only``: just that request, still stepping from 0 so the
    policy and cache carry their state), as ``replay.simulator.run`` charges them; ``label`` names the policy
    (default its registered name; a preset or knobs the user gave)."""
    bill = billing_for(run.model, cache, pricing, run.cache_ttl, run.cache_fit)
    steps, _ = charged_views(run, policy, budget, bill)
    out, prev_end = [], 0
    last = run.n_requests - 1 if only is None else only
    for k, (view, cached, written) in enumerate(steps):
        if k > last:
            break
        if only is None or k == only:
            shown = shown_view(run, infos, policy, view, cached, written, budget, bill.cache.name, prev_end)
            shown.policy = label or policy.name
            out.append(shown)
        prev_end = view.end
    return out


@dataclass
class DiffRow:
    """Positions (or the summary, pos -1) whose segments differ between two views the same way."""

    first: int
    last: int
    kind: str
    tool: str
    form_a: str
    tokens_a: int
    form_b: str
    tokens_b: int

    @property
    def delta(self) -> int:
        return self.tokens_b - self.tokens_a

    def to_dict(self) -> dict:
        return {**asdict(self), "delta": self.delta}


def _by_position(v: ShownView) -> dict[int, tuple[str, int, str, str]]:
    """Position -> (form, tokens, kind, tool); the summary at -1."""
    out: dict[int, tuple[str, int, str, str]] = {}
    for r in v.rows:
        if r.form == "summary":
            out[-1] = ("summary", r.tokens, "summary", "")
        else:
            for p in range(r.first, r.last + 1):
                out[p] = (r.form, r.tokens, r.kind, r.tool) if r.form != "dropped" else ("dropped", 0, "", "")
    return out


def diff_views(a: ShownView, b: ShownView) -> list[DiffRow]:
    """Segments only in one view, or in different forms or sizes, in prompt order (the summary first); runs of
    neighbouring positions that differ the same way (e.g. dropped in one, original in the other) are one row."""
    pa, pb = _by_position(a), _by_position(b)
    out: list[DiffRow] = []
    for key in sorted(set(pa) | set(pb)):
        fa, ta, kind, tool = pa.get(key, ("absent", 0, "", ""))
        fb, tb, kind_b, tool_b = pb.get(key, ("absent", 0, "", ""))
        if (fa, ta) == (fb, tb):
            continue
        prev = out[-1] if out else None
        if key >= 0 and prev is not None and prev.last == key - 1 and (prev.form_a, prev.form_b) == (fa, fb):
            prev.last, prev.tokens_a, prev.tokens_b = key, prev.tokens_a + ta, prev.tokens_b + tb
            prev.kind, prev.tool = f"{prev.last - prev.first + 1} items", ""  # two or more
            continue
        out.append(
            DiffRow(key if key >= 0 else -1, key if key >= 0 else -1, kind or kind_b, tool or tool_b, fa, ta, fb, tb)
        )
    return out
