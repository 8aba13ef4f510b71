"""Codex rollout and Codex TUI readers against the real corpus: counts vs MANIFEST.md, usage, compaction, sniffing."""

from __future__ import annotations

import json
from pathlib import Path

from replay.model import Item, Request, Run
from replay.readers import detect
from replay.readers.base import HEAD_BYTES, ReadContext
from replay.readers.codex_rollout import READER as ROLLOUT
from replay.readers.codex_tui import READER as TUI


def manifest_rows(corpus: Path, section: str) -> dict[str, tuple[str, str]]:
    """file -> (requests, tool calls) cells from one MANIFEST.md section."""
    text = (corpus / "MANIFEST.md").read_text()
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in body.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) > 6 and cells[0] not in ("file", "---"):
            rows[cells[0]] = (cells[5], cells[6])
    return rows


def read(reader, path: Path) -> list:
    return list(reader.read(ReadContext(path=path, file_hash="0" * 32)))


def of(records: list, cls: type) -> list:
    return [r for r in records if isinstance(r, cls)]


def leading_int(cell: str) -> int:
    return int(cell.lstrip("~").split()[0])


# Where the reader deliberately differs from the manifest (which counts raw events):
# - pharma requests: the manifest's "~714 (token_count events)" counts every non-null token_count event, but Codex
#   logs each one twice (after the model output and again after the tool output, identical total_token_usage), and
#   two more after the compactions carry a zero last_token_usage with an unchanged total: 714 - 364 - 2 = 348.
# - fixture tool calls: the manifest's 6 are function_call + custom_tool_call + tool_search_call; the reader also
#   counts the hosted web_search_call (it is a call in the model's context), 7.
# - TUI tool calls: the manifest's 31 are exec commands; the reader also counts the one apply_patch, 32.
EXPECTED = {
    "codex-fixture-agentsessions-small-compacted.jsonl": (2, 7),
    "codex-pharma-platform-019d20aa.jsonl": (348, 411),
    "codex-tui-sessionlog-binary-size-gpt5.jsonl": (34, 32),
}


def test_counts_match_manifest(corpus: Path) -> None:
    rows = manifest_rows(corpus, "codex-rollout")
    assert set(rows) == set(EXPECTED) == {f.name for f in (corpus / "codex-rollout").glob("*.jsonl")}
    manifest = {name: (leading_int(r), leading_int(c)) for name, (r, c) in rows.items()}
    assert manifest == {"codex-fixture-agentsessions-small-compacted.jsonl": (2, 6),
                        "codex-pharma-platform-019d20aa.jsonl": (714, 411),
                        "codex-tui-sessionlog-binary-size-gpt5.jsonl": (34, 31)}, "MANIFEST changed: re-check"
    for name, (requests, calls) in EXPECTED.items():
        path = corpus / "codex-rollout" / name
        reader = TUI if "tui" in name else ROLLOUT
        assert detect(path) is reader, name
        records = read(reader, path)
        n_calls = sum(1 for i in of(records, Item) if i.kind == "tool_call")
        assert (len(of(records, Request)), n_calls) == (requests, calls), name
    tui = of(read(TUI, corpus / "codex-rollout" / "codex-tui-sessionlog-binary-size-gpt5.jsonl"), Item)
    assert sum(1 for i in tui if i.kind == "tool_call" and i.tool_name == "exec_command") == 31


def test_rollout_usage_and_request_placement(corpus: Path) -> None:
    path = corpus / "codex-rollout" / "codex-pharma-platform-019d20aa.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    totals = [o["payload"]["info"]["total_token_usage"] for o in lines
              if o["type"] == "event_msg" and o["payload"]["type"] == "token_count" and o["payload"]["info"]]
    records = read(ROLLOUT, path)
    reqs = of(records, Request)
    assert sum(r.output_tokens for r in reqs) == totals[-1]["output_tokens"], "each response counted once"
    assert all(r.prompt_tokens == r.input_tokens + r.cache_read for r in reqs)
    assert all(r.ts and r.model == "gpt-5.3-codex-bak" for r in reqs)
    run = of(records, Run)[0]
    assert run.harness == "codex" and run.model == "gpt-5.3-codex-bak" and run.started_at
    items = of(records, Item)
    assert items[0].kind == "system" and items[0].text.startswith("You are Codex")
    first_call = next(i for i in items if i.kind == "tool_call")
    assert first_call.step == 1, "the call is output of request 0, so first seen by request 1"
    assert first_call.tool_name == "exec_command" and first_call.access
    patch = next(i for i in items if i.tool_name == "apply_patch")
    assert patch.access == "write" and patch.resource.endswith("backend/go.mod")
    results = {i.call_id for i in items if i.kind == "tool_result"}
    assert len(results) == 410  # one call was interrupted (turn_aborted) before its output


def test_compactions_are_summaries(corpus: Path) -> None:
    cases = (("codex-pharma-platform-019d20aa.jsonl", 2), ("codex-fixture-agentsessions-small-compacted.jsonl", 6))
    for name, n in cases:
        summaries = [i for i in of(read(ROLLOUT, corpus / "codex-rollout" / name), Item) if i.kind == "summary"]
        assert len(summaries) == n, name
    real = [i for i in of(read(ROLLOUT, corpus / "codex-rollout" / "codex-pharma-platform-019d20aa.jsonl"), Item)
            if i.kind == "summary"]
    assert all("summary" in s.text for s in real)


def test_tui_log(corpus: Path) -> None:
    records = read(TUI, corpus / "codex-rollout" / "codex-tui-sessionlog-binary-size-gpt5.jsonl")
    runs = of(records, Run)
    assert len(runs) == 2 and all(r.model == "gpt-5" for r in runs)  # /new starts a second session
    reqs = of(records, Request)
    assert reqs[0].prompt_tokens == 6034 and reqs[0].cache_read == 5537 and reqs[0].input_tokens == 497
    items = of(records, Item)
    reads = [i for i in items if i.kind == "tool_call" and i.access == "search"]
    assert reads and all(i.resource for i in reads)
    assert all(i.kind != "reasoning" or len(i.text) > 20 for i in items), "full reasoning texts, not deltas"


def test_sniff_rejects_other_formats(corpus: Path) -> None:
    for f in corpus.rglob("*"):
        if not f.is_file() or f.name == "MANIFEST.md":
            continue
        with f.open("rb") as fh:
            head = fh.read(HEAD_BYTES).decode("utf-8", "replace")
        is_tui = f.name.startswith("codex-tui")
        assert ROLLOUT.sniff(head, f) == (f.parent.name == "codex-rollout" and not is_tui), f.name
        assert TUI.sniff(head, f) == is_tui, f.name


def test_encrypted_reasoning_sized_by_its_request(corpus: Path) -> None:
    # Reasoning is logged encrypted (empty summary); the request that produced it reports reasoning_output_tokens,
    # which the server then counts in the prompt for the rest of the turn. The first reasoning item of a response
    # takes them; items flushed by a user turn with no request after them (aborted turns) have no size.
    path = corpus / "codex-rollout" / "codex-pharma-platform-019d20aa.jsonl"
    records = read(ROLLOUT, path)
    sizes = dict(of(records, Run)[0].metadata["reasoning_tokens"])
    items = {i.seq: i for i in of(records, Item)}
    reasoning = [i for i in items.values() if i.kind == "reasoning"]
    assert len(reasoning) == 343 and len(sizes) == 340 and all(items[s].kind == "reasoning" for s in sizes)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    first = next(o["payload"]["info"]["last_token_usage"] for o in lines
                 if o["payload"].get("type") == "token_count" and o["payload"].get("info"))
    assert sizes[min(sizes)] == first["reasoning_output_tokens"] == 311
    assert sum(sizes.values()) <= sum(r.output_tokens for r in of(records, Request))
