"""A run's transcript as one self-contained HTML page (``replay show RUN --transcript``): every item of the log in
order, each request where it was sent with its tokens, cache reads and writes and what it cost, and a search box
that filters the entries in the page itself.

The page is a jinja2 template (``templates/transcript.html.j2``) rendered with autoescape on; every string from the
log goes through :func:`replay.untrusted.for_html` (the ``untrusted`` filter), so no log text becomes markup, and
the page loads nothing from anywhere (its style and script are inline).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb

from replay.metrics.prices import DEFAULT_PRICING, Pricing
from replay.metrics.recorded_bill import request_bill
from replay.reports.templating import environment, inline_script
from replay.store import frame

KIND_LABEL = {
    "user_text": "user",
    "assistant_text": "assistant",
    "reasoning": "reasoning",
    "tool_call": "tool call",
    "tool_result": "tool result",
    "system": "system",
    "tool_defs": "tool definitions",
    "summary": "summary",
    "attachment": "attachment",
    "image": "image",
}


@dataclass
class Entry:
    """One item of the log, or one request at the point it was sent."""

    what: str  # "item" or "request"
    label: str
    kind: str = ""
    tool: str = ""
    text: str = ""
    args: str = ""
    ts: str = ""
    is_error: bool = False
    step: int | None = None
    request: dict | None = None


def transcript_entries(
    con: duckdb.DuckDBPyConnection, run_id: str, pricing: Pricing = DEFAULT_PRICING
) -> tuple[list[Entry], dict]:
    """The run's items in log order with each request placed after the items it was sent with (a request of step
    s follows the items of steps up to s; its reply is the items of step s + 1), and the run's totals."""
    items = frame(
        con,
        """SELECT seq, step, kind, role, tool_name, args, text, is_error, ts FROM items WHERE run_id = ?
           ORDER BY seq""",
        [run_id],
    )
    bill = request_bill(con, pricing, [run_id]).sort("step")
    requests = bill.to_dicts()
    entries: list[Entry] = []
    pending = 0

    def place(before_step: int | None) -> None:
        nonlocal pending
        while pending < len(requests) and (before_step is None or requests[pending]["step"] < before_step):
            entries.append(_request_entry(pending, requests[pending]))
            pending += 1

    for row in items.iter_rows(named=True):
        if row["step"] is not None:  # an item without a step stays where the log has it, between requests
            place(row["step"])
        entries.append(
            Entry(
                what="item",
                label=KIND_LABEL.get(row["kind"] or "", row["kind"] or "item"),
                kind=row["kind"] or "",
                tool=row["tool_name"] or "",
                text=row["text"] or "",
                args=row["args"] or "",
                ts=row["ts"] or "",
                is_error=bool(row["is_error"]),
                step=row["step"],
            )
        )
    place(None)
    priced = [r["cost_usd"] for r in requests if r["billed"] and r["cost_usd"] == r["cost_usd"]]
    unpriced = sum(1 for r in requests if r["billed"] and r["cost_usd"] != r["cost_usd"])
    totals = {
        "items": items.height,
        "requests": sum(1 for r in requests if r["call"] == "request"),
        "billed": sum(r["covers"] for r in requests),
        "cost": sum(priced) if priced and not unpriced else None,
        "unpriced": unpriced,
        "why": sorted({r["why"] for r in requests if r["why"]}),
    }
    return entries, totals


def _request_entry(k: int, r: dict) -> Entry:
    cost = r["cost_usd"]
    usage = (
        {
            "prompt": r["input_tokens"] + r["cache_read"] + r["cache_write_5m"] + r["cache_write_1h"],
            "input": r["input_tokens"],
            "read": r["cache_read"],
            "write_5m": r["cache_write_5m"],
            "write_1h": r["cache_write_1h"],
            "output": r["output_tokens"],
            "cost": None if cost != cost else cost,
            "why": r["why"],
        }
        if r["billed"]
        else None
    )
    label = {"request": f"request {k}", "session": f"session totals ({r['covers']} requests)"}.get(
        r["call"], f"{r['call']} call"
    )
    return Entry(
        what="request",
        label=label,
        ts="",
        request={"k": k, "step": r["step"], "model": r["model"] or "", "usage": usage},
    )


def render_transcript(run: dict, entries: list[Entry], totals: dict) -> str:
    """The page as text (``run``: the run's id, format, model, source path, start). Its one script is allowed by
    its hash in the page's Content-Security-Policy, so no other script could run in it."""
    script, script_hash = inline_script("transcript.js")
    return (
        environment()
        .get_template("transcript.html.j2")
        .render(run=run, entries=entries, totals=totals, script=script, script_hash=script_hash)
    )


def write_transcript(
    con: duckdb.DuckDBPyConnection, run_id: str, out: Path, pricing: Pricing = DEFAULT_PRICING
) -> tuple[int, int]:
    """Write ``run_id``'s transcript page to ``out``; (items, requests) written."""
    row = con.execute(
        "SELECT run_id, format, model, source_path, started_at FROM runs WHERE run_id = ?", [run_id]
    ).fetchall()[0]
    run = dict(zip(("run_id", "format", "model", "source_path", "started_at"), row, strict=True))
    entries, totals = transcript_entries(con, run_id, pricing)
    out.write_text(render_transcript(run, entries, totals), encoding="utf-8")
    return totals["items"], totals["requests"]
