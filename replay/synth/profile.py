"""What the generator learns from an ingested store: one donor per real run, holding its shape but no text.

A donor keeps, per request, the group of items first seen by that request (the previous request's output and
the inputs after it) as shapes: kind, size in characters, tool name, the call's argument skeleton (keys and
value lengths), whether a read or write touched a resource seen before in the run, and the paired result's size
and error flag. It also keeps each request's recorded usage and the time since the previous request, and a
linear fit of recorded prompt tokens on the characters in context (what the usage of a resampled run is drawn
from). Text is used only to measure token density per kind (:func:`kind_density`).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import duckdb

from replay.errors import ReplayError

WRITERS = ("claude-code", "codex-rollout")
USAGE = ("input_tokens", "cache_read", "cache_write", "output_tokens", "prompt_tokens")


@dataclass(frozen=True, slots=True)
class Text:
    """A string value of the arguments, kept as its length."""

    n: int


@dataclass(frozen=True, slots=True)
class Shape:
    """One item without its text. For a tool call: the argument skeleton and the paired result."""

    kind: str
    chars: int
    tool: str | None = None
    args: Any = None  # skeleton: JSON with strings as Text(length); Text(length) for non-JSON args
    access: str | None = None
    touch: str = "none"  # a read: "new", "reread" or "after_write" (written, never read); a write: "new"
    rank: int = 0  # or "again"; rank: the resource's recency rank among those candidates (0: latest)
    result_chars: int | None = None  # None: the call had no result
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int | None
    cache_read: int | None
    cache_write: int | None
    output_tokens: int | None
    prompt_tokens: int | None


@dataclass
class Donor:
    """A real run's shape: groups[k] are the items first seen by request k (the last group follows the last
    request); gaps[k] the seconds since request k-1; usage[k] its recorded usage (None if not logged)."""

    run_id: str
    format: str
    model: str | None
    started_at: str | None
    groups: list[list[Shape]] = field(default_factory=list)
    gaps: list[float] = field(default_factory=list)
    usage: list[Usage | None] = field(default_factory=list)
    fit: tuple[float, float] = (0.0, 0.25)  # prompt tokens ~ a + b * characters in context

    @property
    def n_requests(self) -> int:
        return len(self.usage)


def skeleton(args: str | None) -> Any:
    """Argument JSON with every string replaced by Text(its length); non-JSON arguments become one Text."""
    if args is None:
        return None
    try:
        value = json.loads(args)
    except ValueError:
        return Text(len(args))
    if isinstance(value, str):
        return Text(len(value))

    def strip(v: Any) -> Any:
        if isinstance(v, str):
            return Text(len(v))
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items()}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v

    return strip(value) if isinstance(value, dict) else {"input": strip(value)}


def _seconds(a: str | None, b: str | None) -> float | None:
    if a is None or b is None:
        return None
    try:
        return (
            datetime.fromisoformat(b.replace("Z", "+00:00")) - datetime.fromisoformat(a.replace("Z", "+00:00"))
        ).total_seconds()
    except (AttributeError, TypeError, ValueError):
        return None


def _fit(points: list[tuple[int, int]]) -> tuple[float, float]:
    """Least squares of prompt tokens on characters in context; a chars/4 line when there is too little."""
    if len(points) < 3:
        base = points[0][1] - points[0][0] / 4 if points else 0.0
        return max(0.0, base), 0.25
    n = len(points)
    mx, my = sum(p[0] for p in points) / n, sum(p[1] for p in points) / n
    sxx = sum((p[0] - mx) ** 2 for p in points)
    b = sum((p[0] - mx) * (p[1] - my) for p in points) / sxx if sxx else 0.0
    if not 0.05 <= b <= 1.0:  # compactions or odd usage: fall back to a chars/4 slope through the median
        b = 0.25
    return max(0.0, my - b * mx), b


def recent(order: list[str], value: str) -> None:
    """Move ``value`` to the most recent end of ``order``."""
    if value in order:
        order.remove(value)
    order.append(value)


def _touch(access: str | None, resource: str | None, reads: list[str], touched: list[str]) -> tuple[str, int]:
    """How a call touches a resource (see Shape.touch) and the recency rank of the one it picks."""
    if access not in ("read", "write") or not resource:
        return "none", 0
    if access == "write":
        touch = ("again", touched[::-1].index(resource)) if resource in touched else ("new", 0)
    elif resource in reads:
        touch = ("reread", reads[::-1].index(resource))
    elif resource in touched:
        unread = [r for r in touched if r not in reads]
        touch = ("after_write", unread[::-1].index(resource))
    else:
        touch = ("new", 0)
    if access == "read":
        recent(reads, resource)
    recent(touched, resource)
    return touch


def load_donors(
    con: duckdb.DuckDBPyConnection, formats: tuple[str, ...] = WRITERS, exclude: str | None = None
) -> list[Donor]:
    """A donor per run of ``formats`` with at least one request (``exclude``: a LIKE pattern on source_path)."""
    where = "format IN (SELECT unnest(?)) AND n_requests > 0" + (" AND source_path NOT LIKE ?" if exclude else "")
    params: list[Any] = [list(formats)] + ([exclude] if exclude else [])
    runs = con.execute(
        f"SELECT run_id, format, model, started_at FROM runs WHERE {where} ORDER BY run_id", params
    ).fetchall()
    if not runs:
        raise ReplayError(
            f"--from-db: no runs of format {', '.join(formats)} with requests in the store; "
            "ingest Claude Code or Codex logs first (replay ingest PATH --db STORE)"
        )
    donors = {r[0]: Donor(r[0], r[1], r[2], r[3]) for r in runs}
    ids = list(donors)
    reqs = con.execute(
        f"""SELECT run_id, step, ts, {", ".join(USAGE)} FROM requests
                           WHERE run_id IN (SELECT unnest(?)) ORDER BY run_id, step""",
        [ids],
    ).fetchall()
    last_ts: dict[str, str | None] = {}
    for run_id, _step, ts, *usage in reqs:
        d = donors[run_id]
        gap = _seconds(last_ts.get(run_id), ts) if run_id in last_ts else 0.0
        d.gaps.append(max(0.0, gap) if gap is not None else 0.0)
        d.usage.append(Usage(*usage) if any(u is not None for u in usage) else None)
        last_ts[run_id] = ts
    items = con.execute(
        """SELECT run_id, step, kind, tool_name, call_id, args, is_error, resource, access, chars
                           FROM items WHERE run_id IN (SELECT unnest(?)) ORDER BY run_id, seq""",
        [ids],
    ).fetchall()
    by_run: dict[str, list[tuple]] = {}
    for row in items:
        by_run.setdefault(row[0], []).append(row)
    for run_id, d in donors.items():
        _shape_run(d, by_run.get(run_id, []))
    return [d for d in donors.values() if d.n_requests]


def _shape_run(d: Donor, rows: list[tuple]) -> None:
    results = {r[4]: r for r in rows if r[2] == "tool_result" and r[4]}
    paired = {r[4] for r in rows if r[2] == "tool_call" and r[4]}
    d.groups = [[] for _ in range(d.n_requests + 1)]
    reads: list[str] = []  # distinct resources read, least recent first
    touched: list[str] = []  # distinct resources read or written, least recent first
    chars_before = [0] * (d.n_requests + 1)
    for _, step, kind, tool, call_id, args, is_error, resource, access, chars in rows:
        k = min(step, d.n_requests)
        chars_before[k] += chars
        if kind == "tool_result" and call_id in paired:
            continue  # emitted with its call
        if kind == "tool_result":
            d.groups[k].append(Shape("tool_result", chars, tool, is_error=bool(is_error)))
            continue
        if kind != "tool_call":
            d.groups[k].append(Shape(kind, chars))
            continue
        touch, rank = _touch(access, resource, reads, touched)
        res = results.get(call_id)
        d.groups[k].append(
            Shape(
                "tool_call",
                chars,
                tool,
                skeleton(args),
                access,
                touch,
                rank,
                res[9] if res else None,
                bool(res[6]) if res else False,
            )
        )
    points, total = [], 0
    for k in range(d.n_requests):
        total += chars_before[k]
        u = d.usage[k]
        if u is not None and u.prompt_tokens:
            points.append((total, u.prompt_tokens))
    d.fit = _fit(points)


def kind_density(
    con: duckdb.DuckDBPyConnection,
    count,
    formats: tuple[str, ...] = WRITERS,
    sample_chars: int = 400_000,
    seed: int = 0,
) -> dict[str, float]:
    """Characters per token of each item kind's real text under ``count`` (a tokenizer's count_many), measured on
    a random sample of up to ``sample_chars`` characters per kind."""
    rows = con.execute(
        """SELECT i.kind, i.text, i.args, i.tool_name FROM items i JOIN runs r USING (run_id)
                          WHERE r.format IN (SELECT unnest(?)) AND i.chars > 0""",
        [list(formats)],
    ).fetchall()
    rng = random.Random(seed)
    rng.shuffle(rows)
    texts: dict[str, list[str]] = {}
    sizes: dict[str, int] = {}
    for kind, text, args, tool in rows:
        payload = f"{tool or ''}({args or ''}){text}" if kind == "tool_call" else text
        if sizes.get(kind, 0) < sample_chars:
            texts.setdefault(kind, []).append(payload)
            sizes[kind] = sizes.get(kind, 0) + len(payload)
    return {k: sizes[k] / max(1, sum(count(v))) for k, v in texts.items()}
