"""inspect_ai reader against the real corpus: counts match MANIFEST.md, per-event usage, scorer runs, sniffing."""

from __future__ import annotations

import json
from pathlib import Path

from replay.model import BadRecord, Item, Request, Run
from replay.readers import detect
from replay.readers.base import HEAD_BYTES, ReadContext
from replay.readers.inspect_ai import READER
from tests.readers.test_swe_agent import manifest_rows


def read(path: Path) -> list:
    return list(READER.read(ReadContext(path=path, file_hash="0" * 32)))


def test_counts_match_manifest(corpus: Path) -> None:
    rows = manifest_rows(corpus, "inspect-ai")
    assert len(rows) == len(list((corpus / "inspect-ai").glob("*.json"))) == 2
    for name, (requests, calls) in rows.items():
        records = read(corpus / "inspect-ai" / name)
        assert not [r for r in records if isinstance(r, BadRecord)], name
        reqs = [r for r in records if isinstance(r, Request)]
        assert len(reqs) == int(requests), name
        assert sum(isinstance(r, Item) and r.kind == "tool_call" for r in records) == int(calls), name
        assert all(r.prompt_tokens is not None and r.output_tokens is not None for r in reqs), name


def test_usage_matches_model_usage(corpus: Path) -> None:
    path = corpus / "inspect-ai" / "inspect-browser-gpt4omini.json"
    usage = json.loads(path.read_text())["samples"][0]["model_usage"]["openai/gpt-4o-mini"]
    records = read(path)
    reqs = [r for r in records if isinstance(r, Request)]
    assert sum(r.prompt_tokens for r in reqs) == usage["input_tokens"]
    assert sum(r.cache_read for r in reqs) == usage["input_tokens_cache_read"]
    assert sum(r.output_tokens for r in reqs) == usage["output_tokens"]
    assert (reqs[1].prompt_tokens, reqs[1].cache_read, reqs[1].input_tokens) == (1568, 1024, 544)
    items = [r for r in records if isinstance(r, Item)]
    assert items[0].kind == "tool_defs" and items[1].kind == "user_text" and items[1].text.startswith("Use the web")
    go = next(i for i in items if i.kind == "tool_call")
    assert (go.tool_name, go.resource, go.step) == ("web_browser_go", "https://www.aisi.gov.uk/", 1)
    results = [i for i in items if i.kind == "tool_result"]
    assert len(results) == 4 and results[0].resource == go.resource
    assert items[-1].kind == "assistant_text" and items[-1].step == 5


def test_scorer_calls_are_child_runs(corpus: Path) -> None:
    records = read(corpus / "inspect-ai" / "inspect-security-guide-gpt4omini.json")
    runs = [r for r in records if isinstance(r, Run)]
    mains = [r for r in runs if r.parent_run_id is None]
    assert len(mains) == 3 and len(runs) == 6
    assert all(r.metadata["span"] == "model_graded_fact" for r in runs if r.parent_run_id)
    system = next(r for r in records if isinstance(r, Item) and r.kind == "system")
    assert "computer security expert" in system.text  # attachment:// resolved
    assert mains[0].model == "openai/gpt-4o-mini" and mains[0].metadata["model_usage"]


def test_sniff(corpus: Path) -> None:
    for path in sorted(corpus.glob("*/*")):
        if path.name == "MANIFEST.md" or path.is_dir():  # run folders (OpenHands V1, Cline) are not files
            continue
        head = path.open("rb").read(HEAD_BYTES).decode("utf-8", "replace")
        assert READER.sniff(head, path) == (path.parent.name == "inspect-ai"), path
        if path.parent.name == "inspect-ai":
            assert detect(path) is READER


def test_openai_tools_are_counted_as_the_server_declares_them(corpus: Path) -> None:
    """gpt-4o-mini's server declares the tools as a TypeScript namespace, not as their JSON: with the tools read so,
    the log's items and the default template give every recorded prompt of the browser run within 2% with no fit
    (the JSON over-counted each request by ~250 tokens: 1,382 against 1,124 recorded at the first)."""
    from replay.tokens import DEFAULT_OVERHEAD, load_tokenizer

    records = read(corpus / "inspect-ai" / "inspect-browser-gpt4omini.json")
    items = [r for r in records if isinstance(r, Item) and r.run_id.endswith("/1.1")]
    defs = next(i for i in items if i.kind == "tool_defs")
    assert (
        "namespace functions {" in defs.text
        and "type web_browser_go = (_: {\n// URL to navigate to.\nurl: string," in defs.text
    )
    tok = load_tokenizer("o200k")

    def tokens(i: Item) -> int:
        text = f"{i.tool_name or ''}({i.args or ''})" if i.kind == "tool_call" else i.text
        return tok.count(text) + DEFAULT_OVERHEAD.for_role(i.role)

    reqs = [r for r in records if isinstance(r, Request) and r.run_id.endswith("/1.1")]
    assert len(reqs) == 5
    for r in reqs:
        counted = DEFAULT_OVERHEAD.fixed + sum(tokens(i) for i in items if i.step <= r.step)
        assert abs(counted - r.prompt_tokens) <= 0.02 * r.prompt_tokens, (r.step, counted, r.prompt_tokens)


def test_render_functions_shapes() -> None:
    from replay.readers.openai_tools import render_functions

    tools = [
        {"type": "function", "function": {"name": "ping", "description": "Ping."}},
        {
            "name": "move",
            "parameters": {
                "type": "object",
                "required": ["to"],
                "properties": {
                    "to": {"type": "string", "enum": ["n", "s"], "description": "Where."},
                    "steps": {"type": "integer", "default": 1},
                    "tags": {"type": "array", "items": {"type": "string"}},
                },
            },
        },
    ]
    assert render_functions(tools) == (
        "# Tools\n\n## functions\n\nnamespace functions {\n\n// Ping.\ntype ping = () => any;\n\n"
        'type move = (_: {\n// Where.\nto: "n" | "s",\nsteps?: number, // default: 1\ntags?: string[],\n}) => any;\n\n'
        "} // namespace functions"
    )
    assert render_functions([{"no": "name"}]) is None and render_functions("x") is None
