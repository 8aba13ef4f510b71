"""Deterministic generator of realistic synthetic agent runs in the canonical JSONL format.

Each run is a coding session: a system prompt and tool definitions, a task, then request after
request of tool calls (file reads, edits, greps, shell commands) whose outputs vary from a line to
tens of kilobytes. A few files are read again and again (some after an edit, most not), so repeat
reads of every class occur. One run (sample-dense-1) also dumps binary files as hex (about 1.2 characters per
token instead of 3.7), so the chars/4 estimate a policy decides on under-counts its prompt by a third and seed A
needs its emergency margin there. Timestamps advance with think time and occasional long pauses (past a
5-minute cache TTL). Recorded usage follows Anthropic's semantics: the prefix sent at the previous
request is a cache read unless the pause exceeded the TTL; the rest is a cache write.

    python -m replay.synth.sample data/sample --seed 7      # or: replay.synth.sample.generate(Path, seed)
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

MARKER = "replay-canonical/1"
WORDS = (
    "cache",
    "token",
    "policy",
    "window",
    "request",
    "summary",
    "budget",
    "result",
    "parser",
    "config",
    "session",
    "history",
    "segment",
    "reader",
    "store",
    "prompt",
    "handler",
    "worker",
    "limit",
    "event",
)
TOOLS_DEF = json.dumps(
    [
        {"name": n, "description": f"{n} tool", "input_schema": {"type": "object"}}
        for n in ("Read", "Edit", "Write", "Bash", "Grep")
    ]
)
CHARS_PER_TOKEN = 3.7
HEX_CHARS_PER_TOKEN = 1.2  # hex dumps: measured 1.17 with tekken on xxd-style lines
TTL_S = 300


@dataclass(frozen=True)
class RunSpec:
    """Shape of one synthetic run: how many steps, how big the files, how much shell noise."""

    run_id: str
    steps: int
    n_files: int
    file_lines: tuple[int, int]
    hot_share: float  # probability a read targets the single hottest file
    big_output_share: float  # probability a shell call dumps a large log
    hex_share: float = 0.0  # probability a step dumps a binary file as hex (token-dense: chars/4 under-counts)


SPECS = (
    RunSpec("sample-short-1", 30, 6, (30, 90), 0.2, 0.05),
    RunSpec("sample-short-2", 45, 8, (30, 110), 0.3, 0.1),
    RunSpec("sample-medium-1", 90, 10, (40, 140), 0.35, 0.08),
    RunSpec("sample-medium-2", 120, 12, (40, 150), 0.25, 0.1),
    RunSpec("sample-long-1", 190, 14, (40, 170), 0.4, 0.08),
    RunSpec("sample-long-2", 200, 16, (40, 160), 0.3, 0.08),
    RunSpec("sample-dense-1", 110, 8, (40, 120), 0.3, 0.05, hex_share=0.08),
)


def _ident(rng: random.Random) -> str:
    return "_".join(rng.sample(WORDS, 2))


def _code_file(rng: random.Random, path: str, n_lines: int) -> list[str]:
    """Plausible Python source: functions with bodies, docstrings and comments."""
    lines = [f'"""{path}: {" ".join(rng.sample(WORDS, 5))}."""', "", "from __future__ import annotations", ""]
    while len(lines) < n_lines:
        name, arg = _ident(rng), rng.choice(WORDS)
        lines += [
            f"def {name}({arg}: int, limit: int = {rng.randint(1, 4096)}) -> int:",
            f'    """Return the {rng.choice(WORDS)} of the {arg} within limit."""',
        ]
        for _ in range(rng.randint(2, 9)):
            lines.append(f"    {arg} = min({arg} + {rng.randint(1, 99)}, limit)  # {rng.choice(WORDS)}")
        lines += [f"    return {arg}", ""]
    return lines[:n_lines]


def _hex_dump(rng: random.Random, n_lines: int) -> str:
    """xxd-style lines: offset, eight 4-digit hex groups, the printable column."""
    return "\n".join(
        f"{i * 16:08x}: "
        + " ".join(f"{rng.randrange(65536):04x}" for _ in range(8))
        + "  "
        + "".join(chr(rng.randrange(33, 127)) for _ in range(16))
        for i in range(n_lines)
    )


def _numbered(lines: list[str]) -> str:
    return "\n".join(f"{i:>6}\t{line}" for i, line in enumerate(lines, 1))


def _shell_output(rng: random.Random, big: bool, files: list[str]) -> tuple[str, str, bool]:
    """A shell command, its output and whether it failed (pytest, logs, git, ls)."""
    kind = rng.choice(("pytest", "log", "git", "ls")) if not big else rng.choice(("pytest", "log"))
    n = rng.randint(120, 500) if big else rng.randint(1, 40)
    if kind == "pytest":
        failed = rng.random() < 0.4
        body = [
            f"tests/test_{rng.choice(WORDS)}.py::test_{_ident(rng)} {'FAILED' if failed and i % 7 == 0 else 'PASSED'}"
            for i in range(n)
        ]
        tail = f"{'1 failed, ' if failed else ''}{n} passed in {rng.uniform(0.2, 40):.2f}s"
        return "python -m pytest -q", "\n".join(body + [tail]), failed
    if kind == "log":
        body = [
            f"2026-01-0{rng.randint(1, 9)} 10:{rng.randint(0, 59):02d} INFO {_ident(rng)} processed "
            f"{rng.randint(1, 10**6)} items in {rng.random():.3f}s"
            for _ in range(n)
        ]
        return "python -m app.worker --verbose", "\n".join(body), False
    if kind == "git":
        return "git status --short", "\n".join(f" M {rng.choice(files)}" for _ in range(min(n, 8))), False
    return "ls -la src", "\n".join(f"-rw-r--r-- 1 dev dev {rng.randint(100, 90000):>6} {f}" for f in files), False


class _Session:
    """Walks one run: keeps files, clock and the prompt size the recorded harness sent."""

    def __init__(self, spec: RunSpec, rng: random.Random) -> None:
        self.spec, self.rng = spec, rng
        self.out: list[dict[str, Any]] = []
        self.files = {
            f"src/pkg/{_ident(rng)}.py": _code_file(rng, f"src/pkg/{i}.py", rng.randint(*spec.file_lines))
            for i in range(spec.n_files)
        }
        self.paths = list(self.files)
        self.clock = datetime(2026, 1, 5, 9, 0, tzinfo=UTC) + timedelta(hours=rng.randint(0, 72))
        self.chars, self.sent, self.last_ts, self.n = 0, 0, self.clock, 0
        self.dense_tokens = 0  # tokens of hex dumps, counted at their own density

    def item(self, kind: str, role: str, text: str = "", **extra: object) -> None:
        self.chars += len(text) + len(json.dumps(extra.get("args", "")))
        rec = {"type": "item", "kind": kind, "role": role, "text": text, "ts": self.clock.isoformat()}
        self.out.append(rec | extra)

    def request(self) -> None:
        pause = self.rng.random()
        self.clock += timedelta(seconds=self.rng.uniform(2, 25) + (self.rng.uniform(320, 900) if pause < 0.04 else 0))
        prompt = int(self.chars / CHARS_PER_TOKEN) + self.dense_tokens + 2100  # plus the harness prefix
        expired = (self.clock - self.last_ts).total_seconds() > TTL_S
        read = 0 if expired or self.sent == 0 else self.sent
        new = prompt - read
        self.out.append(
            {
                "type": "request",
                "ts": self.clock.isoformat(),
                "input_tokens": min(new, 3),
                "cache_read": read,
                "cache_write": max(new - 3, 0),
                "output_tokens": self.rng.randint(20, 600),
            }
        )
        self.sent, self.last_ts, self.n = prompt, self.clock, self.n + 1

    def read(self, path: str) -> None:
        cid = f"c{self.n}"
        self.item("tool_call", "assistant", tool_name="Read", call_id=cid, args={"file_path": path})
        self.item("tool_result", "tool", _numbered(self.files[path]), call_id=cid)

    def edit(self, path: str) -> None:
        lines, cid = self.files[path], f"c{self.n}"
        at = self.rng.randrange(len(lines))
        old, new = lines[at], lines[at] + f"  # fixed {self.rng.choice(WORDS)}"
        lines[at] = new
        self.item(
            "tool_call",
            "assistant",
            tool_name="Edit",
            call_id=cid,
            args={"file_path": path, "old_string": old, "new_string": new},
        )
        self.item("tool_result", "tool", f"The file {path} has been updated.", call_id=cid)

    def hex_dump(self) -> None:
        """`xxd` of a fixture: a token-dense output."""
        cid, n_lines = f"c{self.n}", self.rng.randint(30, 90)
        name = f"tests/fixtures/{_ident(self.rng)}.bin"
        self.item(
            "tool_call", "assistant", tool_name="Bash", call_id=cid, args={"command": f"xxd {name} | head -{n_lines}"}
        )
        text = _hex_dump(self.rng, n_lines)
        self.out.append(
            {
                "type": "item",
                "kind": "tool_result",
                "role": "tool",
                "text": text,
                "call_id": cid,
                "ts": self.clock.isoformat(),
            }
        )
        self.dense_tokens += int(len(text) / HEX_CHARS_PER_TOKEN)

    def step(self) -> None:
        rng, cid = self.rng, f"c{self.n}"
        if self.spec.hex_share and rng.random() < self.spec.hex_share:
            self.hex_dump()
            return
        if rng.random() < 0.3:
            note = f"Next I will check the {_ident(rng)} handling. " * rng.randint(1, 4)
            self.item("assistant_text", "assistant", note)
        r = rng.random()
        if r < 0.45:
            hot = rng.random() < self.spec.hot_share
            self.read(self.paths[0] if hot else rng.choice(self.paths))
        elif r < 0.6:
            self.edit(rng.choice(self.paths[:4]))
        elif r < 0.7:
            pat = rng.choice(WORDS)
            hits = [f"{p}:{rng.randint(1, 400)}:    {pat} = {rng.randint(0, 9)}" for p in rng.sample(self.paths, 3)]
            self.item("tool_call", "assistant", tool_name="Grep", call_id=cid, args={"pattern": pat, "path": "src"})
            self.item("tool_result", "tool", "\n".join(hits * rng.randint(1, 6)), call_id=cid)
        else:
            cmd, output, failed = _shell_output(rng, rng.random() < self.spec.big_output_share, self.paths)
            self.item("tool_call", "assistant", tool_name="Bash", call_id=cid, args={"command": cmd})
            self.item("tool_result", "tool", output, call_id=cid, is_error=failed)
        if rng.random() < 0.05:
            self.item("user_text", "user", f"Also make sure {_ident(rng)} keeps working.", new_turn=True)

    def run(self) -> list[dict]:
        spec = self.spec
        self.out.append(
            {
                "type": "run",
                "format": MARKER,
                "run": spec.run_id,
                "model": "claude-sonnet-4-5",
                "harness": "replay-sample",
                "started_at": self.clock.isoformat(),
                "metadata": {"generator": "replay.sample", "steps": spec.steps},
            }
        )
        self.item("system", "system", "You are a careful coding agent working in a Python repository. " * 20)
        self.item("tool_defs", "system", TOOLS_DEF)
        self.item("user_text", "user", f"The {_ident(self.rng)} tests fail after the refactor; find and fix it.")
        for _ in range(spec.steps):
            self.request()
            self.step()
        self.request()
        return self.out


def generate(out_dir: Path, seed: int = 7, specs: tuple[RunSpec, ...] = SPECS) -> list[Path]:
    """Write one canonical JSONL file per run spec into ``out_dir``; same seed, same bytes."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, spec in enumerate(specs):
        records = _Session(spec, random.Random(seed * 1000 + i)).run()
        path = out_dir / f"{spec.run_id}.jsonl"
        path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in records), encoding="utf-8")
        paths.append(path)
    return paths


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "data/sample")
    seed = int(sys.argv[sys.argv.index("--seed") + 1]) if "--seed" in sys.argv else 7
    for p in generate(target, seed):
        print(p, p.stat().st_size)
