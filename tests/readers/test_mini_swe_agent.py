"""mini-swe-agent reader against the real corpus: counts match MANIFEST.md, usage, resources, sniffing."""

from __future__ import annotations

from pathlib import Path

from replay.model import BadRecord, Item, Request, Run
from replay.readers import detect
from replay.readers.base import HEAD_BYTES, ReadContext
from replay.readers.mini_swe_agent import READER
from tests.readers.test_swe_agent import manifest_rows


def read(path: Path) -> list:
    return list(READER.read(ReadContext(path=path, file_hash="0" * 32)))


def test_counts_match_manifest(corpus: Path) -> None:
    rows = manifest_rows(corpus, "mini-swe-agent")
    assert len(rows) == len(list((corpus / "mini-swe-agent").glob("*.traj.json"))) == 4
    for name, (requests, calls) in rows.items():
        records = read(corpus / "mini-swe-agent" / name)
        assert not [r for r in records if isinstance(r, BadRecord)], name
        assert sum(isinstance(r, Run) for r in records) == 1
        reqs = [r for r in records if isinstance(r, Request)]
        assert len(reqs) == int(requests), name
        assert sum(isinstance(r, Item) and r.kind == "tool_call" for r in records) == int(calls), name
        with_usage = sum(r.prompt_tokens is not None for r in reqs)
        assert with_usage == (0 if name.startswith("msa-testdata") else len(reqs)), name


def test_usage_and_results(corpus: Path) -> None:
    records = read(corpus / "mini-swe-agent" / "msa-live-gpt5mini-django__django-13590.traj.json")
    run = records[0]
    assert run.model == "openai/gpt-5-mini" and run.metadata["model_stats"]["api_calls"] == 114
    reqs = [r for r in records if isinstance(r, Request)]
    first = reqs[0]
    assert (first.prompt_tokens, first.cache_read, first.input_tokens, first.output_tokens) == (1686, 0, 1686, 89)
    assert reqs[1].cache_read == 1664 and reqs[1].input_tokens == reqs[1].prompt_tokens - 1664
    items = [r for r in records if isinstance(r, Item)]
    first_call = next(i for i in items if i.kind == "tool_call")
    result = next(i for i in items if i.kind == "tool_result")
    assert first_call.args == '{"command":"ls -la"}' and result.call_id == first_call.call_id
    assert result.text.startswith("<returncode>0</returncode>") and result.access == "search"
    assert result.step == first_call.step == 1


def test_old_format_bash_blocks(corpus: Path) -> None:
    records = read(corpus / "mini-swe-agent" / "msa-testdata-github_issue.traj.json")
    items = [r for r in records if isinstance(r, Item)]
    calls = [i for i in items if i.kind == "tool_call"]
    assert calls[0].tool_name == "bash" and calls[0].access == "read"
    assert calls[0].resource.endswith("tests/missing_colon.py")
    results = [i for i in items if i.kind == "tool_result"]
    assert len(results) == 10 and all(r.call_id for r in results)
    assert any(c.access == "write" for c in calls)


def test_sniff(corpus: Path) -> None:
    for f in sorted(corpus.rglob("*")):
        if not f.is_file() or f.name == "MANIFEST.md":
            continue
        head = f.open("rb").read(HEAD_BYTES).decode("utf-8", "replace")
        assert READER.sniff(head, f) == (f.parent.name == "mini-swe-agent"), f.name
    assert detect(corpus / "mini-swe-agent" / "msa-live-gpt5mini-psf__requests-1142.traj.json") is READER
