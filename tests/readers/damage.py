"""Damage real corpus files one record at a time and read them back (the record-isolation fuzz suite's engine)."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from replay.model import BadRecord, Item, Request
from replay.readers import detect
from replay.readers.base import ReadContext

try:
    from replay.readers.base import read_isolated
except ImportError:  # the code before record isolation (for before/after counts)

    def read_isolated(reader, ctx):
        return list(reader.read(ctx))


# One small file per format (JSONL formats are damaged line by line, JSON documents value by value).
FILES = {
    "claude_code": "claude-code/cc-fixture-agentsessions-small.jsonl",
    "codex_rollout": "codex-rollout/codex-fixture-agentsessions-small-compacted.jsonl",
    "copilot_cli": "copilot-cli/copilot-vct-events-1.0.34-20260423.jsonl",
    "gemini_cli": "gemini-cli/gemini-vct-init-v040-20260423.jsonl",
    "openhands_v1": "openhands-v1/ohv1-sdk-goal-fixture-minimax-m27.events.jsonl",
    "openhands": "openhands/oh-resolver-mock-output-2inst.jsonl",
    "aider": "aider/aider-afi-core-gpt4o.md",
    "swe_agent": "swe-agent/swea-testdata-gpt4-test-repo-i1.traj",
    "mini_swe_agent": "mini-swe-agent/msa-testdata-github_issue.traj.json",
    "inspect_ai": "inspect-ai/inspect-security-guide-gpt4omini.json",
    "openai_messages": "openai-messages/ohsdk-llmlog-sonnet4-fncall-01.json",
    "openhands_traj": "openhands/oh-runtime-traj-basic.json",
    "cline": "cline/cline-jeehunter-mcp-root.ui_messages.json",
}
TEXT_DAMAGES = ("bad_byte", "aider_tokens")  # markdown logs: line structure matters, so no JSON damages
LINE_DAMAGES = (
    "truncate",
    "bad_byte",
    "deep",
    "nan",
    "negative",
    "overflow",
    "string",
    "huge_int",
    "duplicate",
    "wrong_type",
    "flip",
)
NUMBER_VALUES = {"nan": "NaN", "negative": "-5", "overflow": "1e400", "string": '"x"', "huge_int": str(10**30)}
# A usage-like key followed by a number: what the number damages replace.
USAGE_NUMBER = re.compile(
    r'("(?:[a-z_]*tokens?[a-z_]*|[a-z]*Tokens?[A-Za-z]*|cost|[a-z_]*cache[a-z_]*)"\s*:\s*)'
    r"(\d+(?:\.\d+)?)"
)
DEPTH = 100_000
MARKDOWN_MARKER = re.compile(rb"^(#|<<<<<<<|=======|>>>>>>>|> Tokens:)")
USAGE_FIELDS = ("input_tokens", "cache_read", "cache_write", "output_tokens", "prompt_tokens")
MAX_TOKENS = 10**9  # a plausible count per request (replay.readers.builder.MAX_TOKENS)


@dataclass
class Result:
    rows: Counter  # (line, kind, content hash) of items, ("request", line, usage) of requests
    bad: list[BadRecord]
    requests: list[Request]
    duplicates: int


def read(path: Path) -> Result:
    """Read ``path`` with the reader that detects it; an exception escaping the reader fails the caller."""
    reader = detect(path)
    if reader is None:  # ingest quarantines the file as "unknown format" at line 0
        return Result(Counter(), [BadRecord(0, "unknown format", "")], [], 0)
    ctx = ReadContext(path=path, file_hash="0" * 32)
    rows: Counter = Counter()
    bad, reqs = [], []
    for rec in read_isolated(reader, ctx):
        if isinstance(rec, Item):
            rows[(rec.line, rec.kind, rec.content_hash)] += 1
        elif isinstance(rec, Request):
            reqs.append(rec)
            rows[("request", rec.line)] += 1
        elif isinstance(rec, BadRecord):
            bad.append(rec)
    return Result(rows, bad, reqs, getattr(ctx, "stats", {}).get("duplicate_lines", 0))


def usage_is_valid(res: Result) -> bool:
    """No stored request carries a count that is not a plausible token count."""
    return all(
        v is None or (type(v) is int and 0 <= v <= MAX_TOKENS)
        for q in res.requests
        for v in (getattr(q, k) for k in USAGE_FIELDS)
    )


def damage_line(line: bytes, how: str, pick: int) -> bytes | None:
    """``line`` damaged ``how`` (``pick`` chooses where), or None when this damage does not apply to it."""
    body, end = (line[:-1], b"\n") if line.endswith(b"\n") else (line, b"")
    if how == "truncate":
        return body[: max(1, len(body) // 2)] + end if len(body) > 2 else None
    if how == "bad_byte" and MARKDOWN_MARKER.match(body):
        return None  # a damaged header, user or SEARCH/REPLACE marker changes the structure, not one record
    if how == "bad_byte":  # past a markdown role marker ("#### ", "> "): a damaged marker changes the line's role
        i = min(5, len(body) - 1) + pick % max(1, len(body) - 5) if len(body) > 5 else pick % len(body)
        return body[:i] + b"\xff" + body[i + 1 :] + end
    if how == "flip":
        i = pick % len(body)
        return body[:i] + bytes([body[i] ^ (1 << (pick % 7))]) + body[i + 1 :] + end
    if how == "deep":
        return b"[" * DEPTH + b"]" * DEPTH + end
    if how == "duplicate":
        return line + line if line.endswith(b"\n") else line + b"\n" + line
    if how == "wrong_type":
        return _wrong_type(body, pick) + end if _wrong_type(body, pick) is not None else None
    text = body.decode("utf-8", "replace")
    if how == "aider_tokens":
        m = re.search(r"Tokens: ([\d.,]+k?) sent", text)
        return (text[: m.start(1)] + "1.2.3k" + text[m.end(1) :]).encode() + end if m else None
    matches = list(USAGE_NUMBER.finditer(text))
    if not matches:
        return None
    m = matches[pick % len(matches)]
    return (text[: m.start(2)] + NUMBER_VALUES[how] + text[m.end(2) :]).encode() + end


def _wrong_type(body: bytes, pick: int) -> bytes | None:
    """The JSON value at one (chosen) key replaced by a value of another type."""
    try:
        obj = json.loads(body)
    except ValueError:
        return None
    paths = list(_paths(obj, ()))
    if not paths:
        return None
    path = paths[pick % len(paths)]
    old = _get(obj, path)
    swaps = [7, "x", [], {}, None, True, 1.5]
    new = next(v for v in swaps[pick % len(swaps) :] + swaps if type(v) is not type(old))
    _set(obj, path, new)
    return json.dumps(obj, ensure_ascii=False).encode()


def _paths(obj, prefix, depth=0):
    if depth > 6:
        return
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield prefix + (k,)
            yield from _paths(v, prefix + (k,), depth + 1)
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:20]):
            yield prefix + (i,)
            yield from _paths(v, prefix + (i,), depth + 1)


def _get(obj, path):
    for p in path:
        obj = obj[p]
    return obj


def _set(obj, path, value):
    _get(obj, path[:-1])[path[-1]] = value


def damage_document(raw: bytes, how: str, pick: int) -> bytes | None:
    """A single-document JSON file damaged ``how``: a value replaced (usage numbers, types), deep nesting
    inserted, or the document truncated."""
    if how == "truncate":
        return raw[: max(1, (pick % len(raw)))]
    if how in NUMBER_VALUES:
        text = raw.decode("utf-8")
        matches = list(USAGE_NUMBER.finditer(text))
        if not matches:
            return None
        m = matches[pick % len(matches)]
        return (text[: m.start(2)] + NUMBER_VALUES[how] + text[m.end(2) :]).encode()
    obj = json.loads(raw)
    paths = list(_paths(obj, ()))
    if not paths:
        return None
    path = paths[pick % len(paths)]
    if how == "deep":
        _set(obj, path, _deep(DEPTH))
        return (
            json.dumps(obj, ensure_ascii=False, check_circular=False)
            .replace('"@DEEP@"', "[" * DEPTH + "]" * DEPTH)
            .encode()
        )
    if how == "wrong_type":
        return _wrong_type(json.dumps(obj).encode(), pick)
    return None


def _deep(_: int) -> str:
    return "@DEEP@"


JSONL = ("claude_code", "codex_rollout", "copilot_cli", "gemini_cli", "openhands_v1", "openhands", "aider")
MUST_QUARANTINE = ("truncate", "bad_byte", "deep", "aider_tokens")


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def check_line(pristine: Result, lines: list[bytes], k: int, how: str, pick: int, out: Path) -> list[str] | None:
    """Damage line ``k`` (1-based) of a line-based log, read it, and list what went wrong (None: not applicable)."""
    if not lines[k - 1].strip():
        return None
    damaged = damage_line(lines[k - 1], how, pick)
    if damaged is None:
        return None
    out.write_bytes(b"".join(lines[: k - 1]) + damaged + b"".join(lines[k:]))
    try:
        res = read(out)
    except Exception as exc:  # noqa: BLE001 - the finding
        return [f"traceback: {type(exc).__name__}: {str(exc)[:120]}"]
    problems = []
    if not usage_is_valid(res):
        problems.append("invalid usage stored")
    bad_lines = {b.line for b in res.bad} - {b.line for b in pristine.bad}
    if how == "duplicate":
        shifted = Counter({(_shift(key, k),): n for key, n in pristine.rows.items()})
        got = Counter({(key,): n for key, n in res.rows.items()})
        if b'"id"' in lines[k - 1] or b'"uuid"' in lines[k - 1] or b'"timestamp"' in lines[k - 1]:
            if got != shifted:
                problems.append(
                    f"duplicate line changed the rows ({sum((got - shifted).values())} extra, "
                    f"{sum((shifted - got).values())} missing)"
                )
        return problems
    spans = {k}  # a markdown item spans lines: the one holding line k (and the next one it may merge with) may change
    if how in TEXT_DAMAGES:
        spans.add(k + 1)
        spans.add(
            max((_line(key) for key in pristine.rows if key[0] != "request" and (_line(key) or 0) <= k), default=None)
        )
    kept = Counter({key: n for key, n in pristine.rows.items() if _line(key) not in spans})
    missing = kept - res.rows
    if missing:
        problems.append(f"{sum(missing.values())} rows of other lines lost, e.g. {next(iter(missing))}")
    if how in MUST_QUARANTINE and k not in bad_lines:
        problems.append(f"line {k} not quarantined (quarantined: {sorted(bad_lines)[:5]})")
    if how in NUMBER_VALUES and k not in bad_lines and res.rows != pristine.rows:
        problems.append(f"line {k}: damaged usage neither quarantined nor ignored")
    return problems


def _line(key: tuple):
    return key[1] if key[0] == "request" else key[0]


def _shift(key: tuple, k: int) -> tuple:
    line = _line(key)
    if line is None or line <= k:
        return key
    return ("request", line + 1) + key[2:] if key[0] == "request" else (line + 1,) + key[1:]


def check_document(pristine: Result, raw: bytes, how: str, pick: int, out: Path) -> list[str] | None:
    """Damage one value of a JSON-document log, read it, and list what went wrong (None: not applicable)."""
    damaged = damage_document(raw, how, pick)
    if damaged is None:
        return None
    out.write_bytes(damaged)
    try:
        res = read(out)
    except Exception as exc:  # noqa: BLE001 - the finding
        return [f"traceback: {type(exc).__name__}: {str(exc)[:120]}"]
    problems = []
    if not usage_is_valid(res):
        problems.append("invalid usage stored")
    if how in MUST_QUARANTINE and not res.bad:
        problems.append("damage not quarantined")
    if how in NUMBER_VALUES and len(res.bad) <= len(pristine.bad) and res.rows != pristine.rows:
        problems.append("damaged usage neither quarantined nor ignored")
    return problems


def main(argv: list[str]) -> None:
    """Counts per format: ``python tests/readers/damage.py [LINES [FORMAT...]]`` applies every damage to LINES
    sampled lines (or values) of each format's file and prints how many cases failed, by damage."""
    import random
    import tempfile

    from tests.conftest import CORPUS as corpus

    n = int(argv[0]) if argv else 12
    tmp = Path(tempfile.mkdtemp(prefix="replay-damage-"))
    for fmt in argv[1:] or list(FILES):
        src = corpus / FILES[fmt]
        out, pristine, rng = tmp / src.name, read(src), random.Random(0)
        counts: Counter = Counter()
        if fmt in JSONL:
            lines = lines_of(src)
            ks = rng.sample(range(1, len(lines) + 1), min(n, len(lines)))
            if fmt == "aider":
                ks = [i + 1 for i, ln in enumerate(lines) if b"Tokens:" in ln][:n] + ks
            cases = [(how, k) for how in (TEXT_DAMAGES if fmt == "aider" else LINE_DAMAGES) for k in ks]
        else:
            cases = [
                (how, p)
                for how in ("truncate", "deep", "wrong_type", *NUMBER_VALUES)
                for p in rng.sample(range(10**6), n)
            ]
        for how, k in cases:
            pick = rng.randrange(10**6)
            found = (
                check_line(pristine, lines, k, how, pick, out)
                if fmt in JSONL
                else check_document(pristine, src.read_bytes(), how, k, out)
            )
            if found is not None:
                counts["cases"] += 1
                counts["failed"] += bool(found)
                counts[how] += bool(found)
        print(
            f"{fmt:16} cases={counts.pop('cases', 0):4} failed={counts.pop('failed', 0):4} "
            f"{ {k: v for k, v in counts.items() if v} }"
        )


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
