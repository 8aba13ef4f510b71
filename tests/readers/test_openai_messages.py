"""OpenAI-messages reader against the real corpus: counts match MANIFEST.md, usage, results, sniffing."""

from __future__ import annotations

import json
from pathlib import Path

from replay.model import BadRecord, Item, Request, Run
from replay.readers import detect
from replay.readers.base import HEAD_BYTES, ReadContext
from replay.readers.openai_messages import READER
from tests.readers.test_swe_agent import manifest_rows


def read(path: Path) -> list:
    return list(READER.read(ReadContext(path=path, file_hash="0" * 32)))


def test_counts_match_manifest(corpus: Path) -> None:
    rows = manifest_rows(corpus, "openai-messages")
    assert len(rows) == len(list((corpus / "openai-messages").glob("*.json"))) == 13
    for name, (requests, calls) in rows.items():
        records = read(corpus / "openai-messages" / name)
        assert not [r for r in records if isinstance(r, BadRecord)], name
        assert sum(isinstance(r, Run) for r in records) == 1
        reqs = [r for r in records if isinstance(r, Request)]
        # "~353 assistant msgs": one request per assistant message in a transcript
        assert len(reqs) == int(requests.strip("~").split()[0]), name
        assert sum(isinstance(r, Item) and r.kind == "tool_call" for r in records) == int(calls), name
        assert all(r.prompt_tokens is not None for r in reqs) == name.startswith("ohsdk-llmlog"), name


def test_llm_log_usage_and_response(corpus: Path) -> None:
    records = read(corpus / "openai-messages" / "ohsdk-llmlog-deepseek-nonfncall-02.json")
    (req,) = [r for r in records if isinstance(r, Request)]
    assert (req.prompt_tokens, req.cache_read, req.input_tokens, req.output_tokens) == (8856, 8000, 856, 100)
    assert req.model == "litellm_proxy/deepseek-chat" and req.step == 0 and req.ts.startswith("2025-09-04")
    items = [r for r in records if isinstance(r, Item)]
    assert [i.kind for i in items] == ["tool_defs", "system", "user_text", "assistant_text", "user_text"]
    assert all(i.step == 0 for i in items)  # the whole file is one prompt
    run = records[0]
    assert run.metadata["response_tool_calls"] and run.metadata["cost"] > 0
    sonnet = read(corpus / "openai-messages" / "ohsdk-llmlog-sonnet4-fncall-06.json")
    (req,) = [r for r in sonnet if isinstance(r, Request)]
    assert (req.prompt_tokens, req.cache_write, req.output_tokens) == (6729, 0, 199)
    assert sonnet[0].metadata["response_tool_calls"][0]["name"]


def test_transcript_calls_and_results(corpus: Path) -> None:
    records = read(corpus / "openai-messages" / "oai-from-codex-pharma-platform.json")
    run = records[0]
    assert run.started_at and run.harness == "codex_cli_rs" and run.model
    items = [r for r in records if isinstance(r, Item)]
    calls = {i.call_id: i for i in items if i.kind == "tool_call"}
    results = [i for i in items if i.kind == "tool_result"]
    assert len(results) == 285 and all(r.call_id in calls for r in results)
    assert {i.access for i in calls.values()} >= {"read", "write", "exec", "search"}
    assert all(i.ts for i in items)
    first_call = next(i for i in items if i.kind == "tool_call")
    assert first_call.tool_name == "exec_command" and json.loads(first_call.args)["cmd"] == "pwd && ls -la"
    fn = read(corpus / "openai-messages" / "ohsdk-fncall-llm-message.json")
    kinds = [r.kind if isinstance(r, Item) else "REQ" for r in fn if not isinstance(r, Run)]
    assert kinds[:4] == ["system", "user_text", "REQ", "assistant_text"]


def test_anthropic_messages_log(tmp_path: Path) -> None:
    log = {
        "model": "claude-x",
        "system": "be brief",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "read a.py"}]},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "a.py"}}],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "print(1)"}]},
        ],
        "response": {
            "content": [{"type": "text", "text": "done"}],
            "usage": {"input_tokens": 5, "cache_read_input_tokens": 100, "output_tokens": 2},
        },
    }
    path = tmp_path / "log.json"
    path.write_text(json.dumps(log))
    assert READER.sniff(path.read_text(), path)
    records = read(path)
    (req,) = [r for r in records if isinstance(r, Request)]
    assert (req.prompt_tokens, req.input_tokens, req.cache_read) == (105, 5, 100)
    result = next(r for r in records if isinstance(r, Item) and r.kind == "tool_result")
    assert (result.resource, result.access, result.text) == ("a.py", "read", "print(1)")
    assert records[0].metadata["response_text"] == "done"


def test_jsonl_messages_and_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    path.write_text('{"role": "user", "content": "hi"}\n{"role": "assistant", "content": "yo"}\n{broken\n')
    assert READER.sniff(path.read_text(), path)
    records = read(path)
    assert [type(r).__name__ for r in records].count("BadRecord") == 1
    assert sum(isinstance(r, Request) for r in records) == 1


def test_sniff(corpus: Path) -> None:
    for path in sorted(corpus.glob("*/*")):
        if path.name == "MANIFEST.md" or path.is_dir():  # run folders (OpenHands V1, Cline) are not files
            continue
        head = path.open("rb").read(HEAD_BYTES).decode("utf-8", "replace")
        # the old mini-swe-agent format *is* a plain chat-message array; its own reader is tried first
        expected = path.parent.name == "openai-messages" or path.name == "msa-testdata-github_issue.traj.json"
        assert READER.sniff(head, path) == expected, path
        if path.parent.name == "openai-messages":
            assert detect(path) is READER, path
