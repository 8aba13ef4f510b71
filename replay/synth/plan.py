"""One synthetic run, format-free: a donor's groups resampled in blocks, filled with filler text.

The number of requests is the donor's, scaled by a log-normal factor (sigma 0.15); the groups after the first are
drawn in blocks of consecutive requests (block bootstrap, so a read is still followed by its edit); each keeps its
sizes, tool names, argument skeletons, errors and the time since the previous request. A read or write the donor
made of a resource it had touched before picks the resource at the same recency rank in this run (a re-read of the
latest file stays one, so a few files are read many times, as in real runs); otherwise a new path. Re-reading a
file not written since returns the same text. Usage: prompt tokens from the donor's fit on characters in context,
split into uncached, cache read and cache write by the donor request's own shares; output tokens as recorded.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from replay.readers.tool_targets import PATH_KEYS
from replay.synth.filler import SYLLABLES, Filler
from replay.synth.profile import Donor, Shape, Text, Usage, recent

BLOCK = 8  # requests per resampled block
SPREAD = 0.15  # sigma of the log-normal factor on the number of requests
ASSISTANT_SIDE = ("assistant_text", "reasoning", "tool_call")
EXTENSIONS = (".py", ".ts", ".go", ".md", ".json", ".rs", ".tsx", ".yaml")


@dataclass
class Call:
    """A tool call with its result (``result`` None: no result was logged)."""

    call_id: str
    tool: str
    args: Any  # a dict for JSON arguments, a string otherwise
    result: str | None
    is_error: bool = False

    @property
    def json_args(self) -> bool:
        return isinstance(self.args, dict)


@dataclass
class Entry:
    kind: str
    text: str = ""
    call: Call | None = None


@dataclass
class Plan:
    """groups[k]: what request k first sees (group 0: the opening input; the last: the last request's output).
    Assistant-side entries of group k (k >= 1) are request k-1's output."""

    index: int
    format: str
    model: str | None
    session_id: str
    cwd: str
    times: list[datetime] = field(default_factory=list)
    usage: list[Usage | None] = field(default_factory=list)
    groups: list[list[Entry]] = field(default_factory=list)


def sources(donor: Donor, rng: random.Random) -> list[int]:
    """Donor request indexes for each synthetic request: the donor's opening block first (a session's start, with
    its commands and set-up, is unlike its middle), then blocks of consecutive requests starting after request 0."""
    n_real = donor.n_requests
    if n_real == 1:
        return [0]
    n = max(1, round(n_real * math.exp(rng.gauss(0.0, SPREAD))))
    out = list(range(min(n_real, BLOCK)))
    while len(out) < n:
        start = rng.randrange(1, n_real)
        out.extend(range(start, min(n_real, start + BLOCK)))
    return out[:n]


ID_CHARS = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0123456789"
ID_BYTES = bytes(ord(ID_CHARS[b % len(ID_CHARS)]) for b in range(256))  # a random byte -> an identifier character


def _ident(rng: random.Random, prefix: str, n: int = 24) -> str:
    return prefix + rng.randbytes(n).translate(ID_BYTES).decode("ascii")


class Builder:
    """Fills one plan: resources, texts and usage."""

    def __init__(
        self,
        donor: Donor,
        index: int,
        fmt: str,
        filler: Filler,
        mixes: dict[str, float],
        rng: random.Random,
        start: datetime,
    ) -> None:
        self.donor, self.filler, self.mixes, self.rng = donor, filler, mixes, rng
        session = (
            f"{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}-4{rng.getrandbits(12):03x}-"
            f"{rng.getrandbits(16):04x}-{rng.getrandbits(48):012x}"
        )
        self.plan = Plan(index, fmt, donor.model, session, f"/home/dev/project-{index:05d}")
        self.reads: list[str] = []  # distinct paths read, least recent first
        self.touched: list[str] = []  # distinct paths read or written, least recent first
        self.last_read: dict[str, str] = {}  # path -> text of its last read, while not written since
        self.start = start

    def text(self, kind: str, n: int) -> str:
        return self.filler.text(n, self.mixes.get(kind, 0.5), self.rng)

    def path(self, shape: Shape) -> str:
        """The resource a call touches: the one at the donor's recency rank among the same candidates, else new."""
        pool = {
            "reread": self.reads,
            "again": self.touched,
            "after_write": [p for p in self.touched if p not in self.reads],
        }.get(shape.touch)
        if pool:
            return pool[-1 - min(shape.rank, len(pool) - 1)]
        word = "".join(self.rng.choice(SYLLABLES) for _ in range(self.rng.randint(2, 3)))
        folder = "".join(self.rng.choice(SYLLABLES) for _ in range(2))
        return f"{self.plan.cwd}/src/{folder}/{word}{self.rng.choice(EXTENSIONS)}"

    def command(self, access: str | None, path: str | None, n: int) -> str:
        """A shell command of about ``n`` characters that classifies as ``access`` on ``path``."""
        if access == "write" and path:
            head = f"cat > {path} <<'EOF'\n"
            return head + self.text("tool_call", max(1, n - len(head) - 4)) + "\nEOF"
        head = {"read": f"cat {path} | ", "search": "rg "}.get(access or "", "") if path or access == "search" else ""
        return head + self.text("tool_call", max(1, n - len(head)))

    def fill(self, skel: Any, key: str | None, shape: Shape, path: str | None) -> Any:
        """Argument values from a skeleton: paths and commands that classify as the donor's did, filler elsewhere."""
        if isinstance(skel, dict):
            return {k: self.fill(v, k, shape, path) for k, v in skel.items()}
        if isinstance(skel, list):
            if key in ("command", "cmd") and skel and all(isinstance(v, Text) for v in skel):
                return ["bash", "-lc", self.command(shape.access, path, sum(v.n for v in skel))]
            return [self.fill(v, None, shape, path) for v in skel]
        if not isinstance(skel, Text):
            return skel  # numbers, booleans, null: kept
        if key in PATH_KEYS and path:
            return path
        if key in ("command", "cmd"):
            return self.command(shape.access, path, skel.n)
        return self.text("tool_call", skel.n)

    def call(self, shape: Shape) -> Call:
        path = self.path(shape) if shape.touch != "none" else None
        skel = shape.args
        args: Any
        if isinstance(skel, dict):
            args = self.fill(skel, None, shape, path)
        elif isinstance(skel, Text) and shape.access == "write" and path:
            head = f"*** Begin Patch\n*** Update File: {path}\n@@\n"
            args = head + self.text("tool_call", max(1, skel.n - len(head) - 16)) + "\n*** End Patch\n"
        else:
            args = self.text("tool_call", skel.n if isinstance(skel, Text) else max(1, shape.chars))
        result = None
        if shape.result_chars is not None:
            same = bool(path) and shape.access == "read" and path in self.last_read
            result = self.last_read[path] if same and path else self.text("tool_result", shape.result_chars)
        if path:
            if shape.access == "read":
                recent(self.reads, path)
            recent(self.touched, path)
            if shape.access == "read" and result is not None and not shape.is_error:
                self.last_read[path] = result
            elif shape.access == "write":
                self.last_read.pop(path, None)
        return Call(_ident(self.rng, "call_"), shape.tool or "", args, result, shape.is_error)

    def entry(self, shape: Shape) -> Entry:
        if shape.kind == "tool_call":
            return Entry("tool_call", call=self.call(shape))
        return Entry(shape.kind, self.text(shape.kind, shape.chars))

    def group(self, shapes: list[Shape], first: bool) -> list[Entry]:
        """The entries of one group: the previous request's output first, then results, then new input."""
        out = [s for s in shapes if s.kind in ASSISTANT_SIDE]
        inp = [s for s in shapes if s.kind not in ASSISTANT_SIDE]
        return [self.entry(s) for s in ([] if first else out) + inp]

    def build(self) -> Plan:
        d, plan = self.donor, self.plan
        src = sources(d, self.rng)
        t = self.start
        context = 0
        for k, j in enumerate(src):
            t += timedelta(seconds=d.gaps[j] if k else 0.0)
            group = self.group(d.groups[j], first=k == 0)
            plan.groups.append(group)
            context += sum(_chars(e) for e in group)
            plan.times.append(t)
            plan.usage.append(self.usage(d.usage[j], context))
        plan.groups.append(self.group(d.groups[d.n_requests], first=False))
        return plan

    def usage(self, real: Usage | None, context: int) -> Usage | None:
        if real is None:
            return None
        a, b = self.donor.fit
        prompt = max(1, round(a + b * context))
        total = real.prompt_tokens or 0
        read = round(prompt * (real.cache_read or 0) / total) if total else 0
        write = round(prompt * (real.cache_write or 0) / total) if total else 0
        read = min(read, prompt)
        write = min(write, prompt - read)
        return Usage(
            prompt - read - write, read, write if real.cache_write is not None else None, real.output_tokens, prompt
        )


def _chars(e: Entry) -> int:
    if e.call is None:
        return len(e.text)
    return len(e.call.tool) + len(str(e.call.args)) + len(e.call.result or "")


def build_plan(donor: Donor, index: int, fmt: str, filler: Filler, mixes: dict[str, float], seed: int) -> Plan:
    """Synthetic run ``index`` from ``donor``; the same (seed, index, donor) gives the same plan."""
    rng = random.Random(f"{seed}:{index}")
    start = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=rng.randrange(300 * 86400))
    return Builder(donor, index, fmt, filler, mixes, rng, start).build()
