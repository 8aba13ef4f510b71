"""mini-swe-agent reader against the real corpus: counts match MANIFEST.md, usage, resources, sniffing."""

from __future__ import annotations

import json
from pathlib import Path

from replay.model import BadRecord, Item, Request, Run
from replay.readers import detect
from replay.readers.base import HEAD_BYTES, ReadContext
from replay.readers.mini_swe_agent import READER
from replay.simulator.fidelity import harness_version
from tests.readers.mini_swe_fixture import chat_usage, openrouter_usage, responses_v2, textbased_v1, toolcall_v2
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


def test_format_error_with_response_is_a_request(tmp_path: Path) -> None:
    """2.3.1+ keeps a rejected call's response on the FormatError message: 4 calls (api_calls), 4 requests, the
    rejected one with its own usage, before the error text it caused."""
    usages = [chat_usage(3000, 0, 2990, 120), chat_usage(3400, 2990, 380, 80), chat_usage(3600, 3370, 200, 60)]
    records = read(toolcall_v2(tmp_path / "a.traj.json", usages, chat_usage(3200, 2990, 190, 40)))
    assert not [r for r in records if isinstance(r, BadRecord)]
    reqs = [r for r in records if isinstance(r, Request)]
    assert len(reqs) == records[0].metadata["model_stats"]["api_calls"] == 4
    rejected = reqs[1]
    assert (rejected.prompt_tokens, rejected.cache_read, rejected.cache_write, rejected.output_tokens) == (
        3200,
        2990,
        190,
        40,
    )
    error = next(r for r in records if isinstance(r, Item) and r.text.startswith("No tool calls found"))
    first_result = next(r for r in records if isinstance(r, Item) and r.kind == "tool_result")
    assert first_result.step == rejected.step == 1  # the rejected call was sent the first result
    assert error.step == 2  # and the error text is first sent by the call after it
    assert "format_error_calls" not in records[0].metadata
    assert harness_version(records[0].metadata) == "2.4.6"  # what fidelity names


def test_format_error_without_response_is_counted(tmp_path: Path) -> None:
    """2.0-2.3.0 kept no response on the FormatError message: no request, the call counted in the metadata."""
    usages = [chat_usage(3000, 0, 2990, 120), chat_usage(3400, 2990, 380, 80), chat_usage(3600, 3370, 200, 60)]
    records = read(toolcall_v2(tmp_path / "b.traj.json", usages, None))
    assert sum(isinstance(r, Request) for r in records) == 3
    assert records[0].metadata["format_error_calls"] == 1


def test_cache_writes_under_either_litellm_rule(tmp_path: Path) -> None:
    """Cache writes are kept (LiteLLM's Anthropic fields, OpenRouter's usage accounting); a prompt_tokens that
    leaves them out (LiteLLM before 1.77.3) gains them."""
    newer = [chat_usage(3000, 0, 2990, 120), chat_usage(3400, 2990, 380, 80), chat_usage(3600, 3370, 200, 60)]
    older = [chat_usage(10, 0, 2990, 120), chat_usage(3020, 2990, 380, 80), chat_usage(3400, 3370, 200, 60)]
    openrouter = [openrouter_usage(*u) for u in ((3000, 0, 2990, 120), (3400, 2990, 380, 80), (3600, 3370, 200, 60))]
    for name, usages in (("new", newer), ("old", older), ("openrouter", openrouter)):
        records = read(toolcall_v2(tmp_path / f"{name}.traj.json", usages, None))
        reqs = [r for r in records if isinstance(r, Request)]
        assert [(r.prompt_tokens, r.input_tokens, r.cache_read, r.cache_write) for r in reqs] == [
            (3000, 10, 0, 2990),
            (3400, 30, 2990, 380),
            (3600, 30, 3370, 200),
        ], name
        assert ("cache writes are left out" in records[0].metadata["prompt_tokens_rule"]) == (name == "old")


def test_responses_api_messages(tmp_path: Path) -> None:
    """A Responses API model keeps the response object as the assistant message and results as
    function_call_output items: each is read, none quarantined."""
    records = read(responses_v2(tmp_path / "r.traj.json"))
    assert not [r for r in records if isinstance(r, BadRecord)]
    reqs = [r for r in records if isinstance(r, Request)]
    assert [(r.prompt_tokens, r.cache_read, r.input_tokens, r.output_tokens) for r in reqs] == [
        (1500, 0, 1500, 210),
        (1900, 1408, 492, 90),
    ]
    assert reqs[0].model == "gpt-5-mini-2025-08-07" and reqs[0].ts is not None
    items = [r for r in records if isinstance(r, Item)]
    assert [i.kind for i in items] == [
        "system",
        "user_text",
        "reasoning",
        "assistant_text",
        "tool_call",
        "tool_result",
        "reasoning",
        "assistant_text",
        "tool_call",
    ]
    call, result = items[4], items[5]
    assert call.args == '{"command":"ls"}' and result.call_id == call.call_id == "call_0"
    assert result.text.endswith("a.py\n</output>")


def test_v1_message_timestamps(tmp_path: Path) -> None:
    """1.x writes each message's time beside its role: the request is timed."""
    records = read(textbased_v1(tmp_path / "v1.traj.json"))
    req = next(r for r in records if isinstance(r, Request))
    assert req.ts == "2025-10-09T08:53:25+00:00" and req.prompt_tokens == 800
    result = next(r for r in records if isinstance(r, Item) and r.kind == "tool_result")
    assert result.ts == "2025-10-09T08:53:26+00:00"


def test_v1_rejected_response_runs_nothing(tmp_path: Path) -> None:
    """1.x runs a response only when it has exactly one block: two blocks are a format error, no tool call, and the
    error message that follows is not a result."""
    records = read(textbased_v1(tmp_path / "v1.traj.json"))
    items = [r for r in records if isinstance(r, Item)]
    assert sum(isinstance(r, Request) for r in records) == 2
    assert [i.kind for i in items if i.kind in ("tool_call", "tool_result")] == ["tool_call", "tool_result"]
    assert items[-1].kind == "user_text" and items[-1].text.startswith("Please always provide EXACTLY ONE")


def test_v1_0_trajectory_without_format_marker(tmp_path: Path) -> None:
    """mini-swe-agent 1.0.0 to 1.3.0 (``src/minisweagent/run/utils/save.py`` ``save_traj``; 1.0.x as
    ``microsweagent``) write ``{"info": {"exit_status", "submission", "model_stats": {"instance_cost",
    "api_calls"}}, "messages", "instance_id"}`` with ``json.dumps(indent=2)``: no ``trajectory_format`` (1.4) or
    ``mini_version`` (1.5), messages bare ``{"role", "content"}`` (``DefaultAgent.add_message``). Synthetic
    content. Main: "unknown format", not ingested."""
    messages = [
        {"role": "system", "content": "You are a helpful assistant that can interact with a computer."},
        {"role": "user", "content": "Please solve this issue: parse() drops the last field."},
        {"role": "assistant", "content": "THOUGHT: look.\n\n```bash\nls\n```"},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\nparse.py\n</output>"},
        {"role": "assistant", "content": "Two.\n```bash\nls\n```\n```bash\npwd\n```"},
        {"role": "user", "content": "Please always provide EXACTLY ONE action in triple backticks, found 2 actions."},
        {"role": "assistant", "content": "THOUGHT: done.\n\n```bash\necho MINI_SWE_AGENT_FINAL_OUTPUT\n```"},
        {"role": "user", "content": "Submitted"},
    ]
    doc = {
        "info": {"exit_status": "Submitted", "submission": "", "model_stats": {"instance_cost": 0.01, "api_calls": 3}},
        "messages": messages,
        "instance_id": "x__y-1",
    }
    path = tmp_path / "x__y-1.traj.json"
    path.write_text(json.dumps(doc, indent=2))
    assert detect(path) is READER
    records = read(path)
    assert not [r for r in records if isinstance(r, BadRecord)]
    assert sum(isinstance(r, Request) for r in records) == doc["info"]["model_stats"]["api_calls"]
    kinds = [r.kind for r in records if isinstance(r, Item)]
    assert kinds.count("tool_call") == 2 and kinds.count("tool_result") == 2  # the two-block reply ran nothing
    run = next(r for r in records if isinstance(r, Run))
    assert run.metadata["model_stats"] == {"instance_cost": 0.01, "api_calls": 3}
    assert run.metadata["instance_id"] == "x__y-1"


def test_a_call_written_in_the_text_is_counted_once(tmp_path: Path) -> None:
    """The text-based format (1.x, 2.x ``mswea_bash_command``) sends the command once, inside the assistant's
    text: the text around the block is assistant text and the block, as written, the call's arguments (no copy
    of the command in the text and again as JSON)."""
    records = read(textbased_v1(tmp_path / "v1.traj.json"))
    items = [r for r in records if isinstance(r, Item) and r.step == 1]
    assert [(i.kind, i.text, i.args) for i in items[:2]] == [
        ("assistant_text", "THOUGHT: look around.", None),
        ("tool_call", "", "```mswea_bash_command\nls\n```"),
    ]
    call = items[1]
    assert call.tool_name == "bash" and call.access == "search"  # classified from the command, as before
    rejected = [i for i in records if isinstance(i, Item) and i.step == 2 and i.kind == "assistant_text"]
    assert rejected[0].text.startswith("Both.") and "cat a.py" in rejected[0].text  # no call: the text stays whole
