"""Peak memory of ``replay ingest`` on a large corpus and on one huge record.

    python benchmarks/bench_ingest_memory.py [--work /tmp/replay-mem] [--corpus-mb 555] [--record-mb 200]
        [--cases corpus,line,document] [-- extra ingest options]

Builds its inputs under ``--work`` (once; kept for the next run):
- ``corpus``: the shared corpus copied until it reaches ``--corpus-mb``, each copy's ids changed (every UUID's
  first group rewritten, else a trailing newline added) so every copy is a new file and new runs;
- ``line``: a Claude Code session whose one tool result is ``--record-mb`` of text, on one JSONL line;
- ``document``: a SWE-agent trajectory (one JSON document) whose one tool output is ``--record-mb`` of text.
Each case runs ``python -m replay ingest`` in a fresh store as a subprocess; the peak is sampled from /proc every
20 ms over the whole process tree (the command, the forkserver, the parse workers): ``tree`` sums their resident
sets (an overestimate: pages they share count twice), ``largest`` is the largest single process; CPU seconds are
the whole tree's (the machine is shared: wall time varies with its load, CPU time less).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CORPUS = Path(os.environ.get("REPLAY_CORPUS", Path(__file__).resolve().parents[2] / "shared" / "corpus"))
UUID_HEAD = re.compile(rb"\b[0-9a-f]{8}(?=-[0-9a-f]{4}-)")
FILLER = '2026-01-01 12:00:00 INFO worker[%d] processed batch: status=ok rows=1024 "path": "/srv/app/x.py"\n'


def replicate(src: Path, dst: Path, target_mb: float) -> Path:
    """Copies of ``src`` under ``dst/cNN`` until ``target_mb``, each copy's session ids made its own."""
    if (dst / "done").exists():
        return dst
    files = [f for f in sorted(src.rglob("*")) if f.is_file() and f.name != "MANIFEST.md"]
    size, copy = 0, 0
    while size < target_mb * 1e6:
        for f in files:
            if size >= target_mb * 1e6:
                break
            data = f.read_bytes()
            changed = UUID_HEAD.sub(lambda m, c=copy: b"%04x" % c + m.group()[4:], data)
            out = dst / f"c{copy:02d}" / f.relative_to(src)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(changed if changed != data else data + b"\n" * (copy + 1))
            size += len(data)
        copy += 1
    (dst / "done").write_text(f"{copy} copies, {size} bytes\n")
    return dst


def filler(n_bytes: int) -> str:
    """Log-like text of about ``n_bytes`` (newlines and quotes, so JSON escapes it)."""
    block = "".join(FILLER % i for i in range(1000))
    return (block * (n_bytes // len(block) + 1))[:n_bytes]


def huge_line(path: Path, record_mb: float) -> Path:
    """A Claude Code session whose first tool result holds ``record_mb`` of text (one JSONL line)."""
    if path.exists():
        return path
    lines = (CORPUS / "claude-code" / "cc-fixture-agentsessions-small.jsonl").read_text().splitlines()
    for i, line in enumerate(lines):
        obj = json.loads(line)
        content = obj.get("message", {}).get("content") if obj.get("type") == "user" else None
        if isinstance(content, list) and any(isinstance(c, dict) and c.get("type") == "tool_result" for c in content):
            block = next(c for c in content if isinstance(c, dict) and c.get("type") == "tool_result")
            block["content"] = filler(int(record_mb * 1e6))
            lines[i] = json.dumps(obj)
            break
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def huge_document(path: Path, record_mb: float) -> Path:
    """A SWE-agent trajectory (one JSON document) whose first tool observation in its history holds ``record_mb``."""
    if path.exists():
        return path
    src = min((CORPUS / "swe-agent").glob("*.traj"), key=lambda f: f.stat().st_size)
    doc = json.loads(src.read_text())
    history = doc["history"]
    after_action = next(
        i for i in range(1, len(history)) if history[i - 1].get("action") and history[i]["role"] == "user"
    )
    history[after_action]["content"] = filler(int(record_mb * 1e6))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1))
    return path


def _tree(root: int) -> list[int]:
    """``root`` and its descendants, from /proc."""
    parents: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                ppid = int(Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(d))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(parents.get(pid, []))
    return out


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _cpu() -> float:
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return kids.ru_utime + kids.ru_stime


def measure(cmd: list[str]) -> tuple[float, float, float, float, int]:
    """Run ``cmd``; (peak tree RSS MB, peak largest-process RSS MB, wall s, CPU s of the tree, exit code)."""
    c0, t0 = _cpu(), time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    tree = largest = 0.0
    while proc.poll() is None:
        rss = [_rss_mb(p) for p in _tree(proc.pid)]
        tree, largest = max(tree, sum(rss)), max(largest, max(rss, default=0.0))
        time.sleep(0.02)
    out = proc.stdout.read() if proc.stdout else ""
    print("   ", out.strip().splitlines()[-1] if out.strip() else "(no output)")
    return tree, largest, time.perf_counter() - t0, _cpu() - c0, proc.returncode


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "replay-mem")
    ap.add_argument("--corpus-mb", type=float, default=555)
    ap.add_argument("--record-mb", type=float, default=200)
    ap.add_argument("--cases", default="corpus,line,document")
    ap.add_argument("extra", nargs="*", help="further `replay ingest` options")
    args = ap.parse_args()
    inputs = {
        "corpus": lambda: replicate(CORPUS, args.work / f"corpus{args.corpus_mb:g}", args.corpus_mb),
        "line": lambda: huge_line(args.work / f"line{args.record_mb:g}" / "session.jsonl", args.record_mb),
        "document": lambda: huge_document(args.work / f"doc{args.record_mb:g}" / "huge.traj", args.record_mb),
    }
    for case in args.cases.split(","):
        path = inputs[case]()
        mb = sum(f.stat().st_size for f in ([path] if path.is_file() else path.rglob("*")) if f.is_file()) / 1e6
        with tempfile.TemporaryDirectory(dir=args.work) as tmp:
            cmd = [sys.executable, "-m", "replay", "ingest", str(path), "--db", f"{tmp}/s.duckdb", *args.extra]
            print(f"{case}: {mb:.0f} MB, {' '.join(cmd[1:])}")
            tree, largest, secs, cpu, code = measure(cmd)
        print(
            f"{case:9s} peak RSS tree {tree:7.0f} MB  largest process {largest:7.0f} MB  {secs:6.1f} s wall "
            f"({mb / secs:5.1f} MB/s)  {cpu:6.1f} s CPU  exit {code}"
        )


if __name__ == "__main__":
    main()
