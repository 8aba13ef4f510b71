"""Claude Code reader against the real corpus: counts match MANIFEST.md, usage dedup, compaction, sniffing."""

from __future__ import annotations

import json
from pathlib import Path

from replay.model import BadRecord, Item, Request, Run
from replay.readers import detect
from replay.readers.base import HEAD_BYTES, ReadContext
from replay.readers.claude_code import FILE_REFERENCE_NOTE, READER, persisted_note


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


def read(path: Path) -> list:
    return list(READER.read(ReadContext(path=path, file_hash="0" * 32)))


def of(records: list, cls: type) -> list:
    return [r for r in records if isinstance(r, cls)]


# The manifest counts each `<synthetic>` assistant entry (an API-error notice Claude Code writes itself, model
# "<synthetic>", zero usage) as a request; it is not one, so these files have one request fewer than listed. (The
# fixture's synthetic entry shares its "[trimmed for fixture]" id with the real response after it: no change.)
SYNTHETIC_ENTRIES = {"ccb-android-avd-opus-3e89eb15-main.jsonl": 1, "ccs-livecd-gen-compact-e1ffaf02.jsonl": 1}
SYNTHETIC_FILES = {*SYNTHETIC_ENTRIES, "cc-fixture-agentsessions-small.jsonl"}


def test_counts_match_manifest(corpus: Path) -> None:
    # cc-fixture-agentsessions-small: line 19 is an assistant line with neither requestId nor message.id (a
    # partial reply); it continues the open request. Its "[trimmed for fixture]" requestIds collapse several
    # responses into one id; the manifest counts them as one too.
    added = manifest_rows(corpus, "Added 2026-12-04: harness versions that record their own context events")
    rows = manifest_rows(corpus, "claude-code") | {
        k.split("/", 1)[1]: v for k, v in added.items() if k.startswith("claude-code/")
    }
    files = sorted((corpus / "claude-code").glob("*.jsonl"))
    assert set(rows) == {f.name for f in files} and len(files) == 27  # 26 in the claude-code section, 1 added
    for path in files:
        records = read(path)
        requests, calls = rows[path.name]
        n_calls = sum(1 for i in of(records, Item) if i.kind == "tool_call")
        expected = int(requests) - SYNTHETIC_ENTRIES.get(path.name, 0)
        assert (len(of(records, Request)), n_calls) == (expected, int(calls)), path.name
        assert ('"model":"<synthetic>"' in path.read_text()) == (path.name in SYNTHETIC_FILES), path.name
        assert detect(path) is READER, path.name


def test_usage_is_counted_once_per_request_id(corpus: Path) -> None:
    path = corpus / "claude-code" / "ccl-coderabbit-cb2e607c.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    by_id = {o["requestId"]: o["message"]["usage"] for o in lines if o.get("type") == "assistant"}
    assert sum(1 for o in lines if o.get("type") == "assistant") > len(by_id) == 80
    reqs = of(read(path), Request)
    assert sum(r.output_tokens for r in reqs) == sum(u["output_tokens"] for u in by_id.values())
    first = next(iter(by_id.values()))
    r0 = reqs[0]
    assert (r0.input_tokens, r0.cache_read, r0.cache_write) == (
        first["input_tokens"],
        first["cache_read_input_tokens"],
        first["cache_creation_input_tokens"],
    )
    assert r0.prompt_tokens == r0.input_tokens + r0.cache_read + r0.cache_write
    assert all(r.ts and r.model for r in reqs)
    assert [r.step for r in reqs] == list(range(len(reqs)))


def test_compact_summary_and_titles(corpus: Path) -> None:
    records = read(corpus / "claude-code" / "ccs-livecd-gen-compact-e1ffaf02.jsonl")
    summaries = [i for i in of(records, Item) if i.kind == "summary"]
    assert len(summaries) == 1 and summaries[0].line == 134
    assert "continued from a previous conversation" in summaries[0].text
    titled = read(corpus / "claude-code" / "ccs-livecd-gen-155c3456.jsonl")
    assert len(of(titled, Run)[0].metadata["titles"]) == 8
    assert not [i for i in of(titled, Item) if i.kind == "summary"], "title lines are not context"


def test_items_blocks_and_results(corpus: Path) -> None:
    records = read(corpus / "claude-code" / "ccl-jssoundrecorder-7acd37a8.jsonl")
    run = of(records, Run)[0]
    assert run.harness == "claude-code" and run.model == "claude-sonnet-4-5-20250929" and run.started_at
    items = of(records, Item)
    assert {"reasoning", "assistant_text", "user_text", "tool_call", "tool_result"} <= {i.kind for i in items}
    calls = {i.call_id: i for i in items if i.kind == "tool_call"}
    results = [i for i in items if i.kind == "tool_result"]
    assert all(r.call_id in calls and calls[r.call_id].seq < r.seq for r in results)
    assert any(c.access == "read" and c.resource for c in calls.values())
    assert all(i.ts for i in items)
    assert [i.seq for i in items] == list(range(len(items)))
    sub = corpus / "claude-code" / "ccb-android-avd-3e89eb15-sub-wf_4af3c93a-ada-agent-a340795228348a5a6.jsonl"
    web = [i for i in of(read(sub), Item) if i.kind == "tool_call" and (i.tool_name or "").startswith("mcp__")]
    assert web and all(i.resource for i in web)
    image = read(corpus / "claude-code" / "ccl-dd-me-next-9e953218.jsonl")
    assert sum(1 for i in of(image, Item) if i.kind == "image") == 1


def test_sidechains(corpus: Path) -> None:
    runs = of(read(corpus / "claude-code" / "ccv-todo-nextjs-fe5e1c67.jsonl"), Run)
    main, children = runs[0], runs[1:]
    assert len(children) == 5 and all(c.parent_run_id == main.run_id and c.metadata["sidechain"] for c in children)
    agent = of(read(corpus / "claude-code" / "ccl-worktrees-ef958aa1-sub-agent-a36efb2a1231c41e2.jsonl"), Run)
    assert len(agent) == 1 and agent[0].metadata["sidechain"] and agent[0].metadata["agent_id"] == "a36efb2a1231c41e2"
    assert agent[0].metadata["session_id"]


def test_sniff_rejects_other_formats(corpus: Path) -> None:
    others = [f for f in corpus.rglob("*") if f.is_file() and f.parent.name not in ("claude-code", "corpus")]
    assert len(others) > 30
    for f in others:
        with f.open("rb") as fh:
            head = fh.read(HEAD_BYTES).decode("utf-8", "replace")
        assert not READER.sniff(head, f), f.name
    fake = corpus / "claude-code" / "x.jsonl"
    assert not READER.sniff('{"type": "user", "content": "hi"}\n', fake)


def test_unlogged_content_is_noted(corpus: Path) -> None:
    # 3e89eb15 main: the assistant line 61 answers a message (the second workflow's notification) the log lacks
    main = of(read(corpus / "claude-code" / "ccb-android-avd-opus-3e89eb15-main.jsonl"), Run)[0]
    assert main.metadata["unlogged"] == [{"step": 4, "line": 61, "reason": "missing-parent"}]
    # a52886: ToolSearch results are tool_reference blocks the server expands into schemas the log omits; a
    # sub-agent's first attachments (its deferred tools, MCP instructions, agents) come with its second request
    sub = corpus / "claude-code" / "ccl-worktrees-ef958aa1-sub-agent-a52886dc180afb356.jsonl"
    notes = of(read(sub), Run)[0].metadata["unlogged"]
    assert [(n["step"], n["line"], n["reason"]) for n in notes] == [
        (1, 5, "subagent attachments"),
        (3, 10, "tool-reference"),
        (4, 15, "tool-reference"),
        (5, 20, "tool-reference"),
    ]
    assert notes[2]["tools"][:2] == ["TaskCreate", "TaskList"] and len(notes[2]["tools"]) == 9
    clean = of(read(corpus / "claude-code" / "ccl-coderabbit-cb2e607c.jsonl"), Run)[0]
    assert "unlogged" not in clean.metadata


def test_final_usage_line_wins(corpus: Path) -> None:
    # MiniMax behind Claude Code logs each response's streaming start (a partial count, output 0) on its first line
    # and the settled usage (cache read included) on its last; the last is the one that matches the prompt. Two
    # responses logged the opening alone (requests 0 and 14, lines 6 and 85): their usage is unknown.
    path = corpus / "claude-code" / "ccb-avd-minimax-2764ab64.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    last = {}
    for o in lines:
        if o.get("type") == "assistant":
            last[o["message"]["id"]] = o["message"]["usage"]
    records = read(path)
    reqs = of(records, Request)
    assert len(reqs) == len(last) == 161
    unsettled = [r.step for r, u in zip(reqs, last.values(), strict=True) if u["output_tokens"] == 0]
    assert unsettled == [0, 14] and of(records, Run)[0].metadata["unsettled_usage"] == 2
    for r, u in zip(reqs, last.values(), strict=True):
        expected = (u["input_tokens"], u["cache_read_input_tokens"], u["output_tokens"])
        assert (r.input_tokens, r.cache_read, r.output_tokens) == ((None,) * 3 if r.step in unsettled else expected)
    assert (reqs[1].prompt_tokens, reqs[1].output_tokens) == (40871, 114)  # not the first line's 7888 and 0


def test_compaction_event_on_the_corpus(corpus: Path) -> None:
    # ccs-livecd-gen-compact (Claude Code 1.0.90, no compact_boundary line): request 50 (line 132) recorded a
    # 155,073-token prompt, the isCompactSummary line 134 follows, and request 51 (line 135) recorded 64,368.
    records = read(corpus / "claude-code" / "ccs-livecd-gen-compact-e1ffaf02.jsonl")
    main = of(records, Run)[0]
    reqs = {r.step: r for r in of(records, Request) if r.run_id == main.run_id}
    assert (reqs[50].line, reqs[50].prompt_tokens, reqs[51].line, reqs[51].prompt_tokens) == (132, 155073, 135, 64368)
    summary = next(i for i in of(records, Item) if i.kind == "summary")
    assert main.metadata["context_events"] == [
        {
            "kind": "compaction",
            "step": 51,
            "drop": [[0, summary.seq]],
            "summary_seq": summary.seq,
            "trigger": None,
            "pre_tokens": None,
            "line": 134,
        }
    ]
    assert summary.step == 51 and summary.seq == 125 and summary.role == "user"
    assert not [i for i in of(records, Item) if i.kind == "user_text" and "continued from a previous" in i.text]
    # its <synthetic> API-error entry (line 211) is neither a request nor an item
    assert all(r.model != "<synthetic>" for r in reqs.values()) and not [i for i in of(records, Item) if i.line == 211]
    for path in (corpus / "claude-code").glob("*.jsonl"):  # files without compact markers record no event
        if path.name not in (
            "ccs-livecd-gen-compact-e1ffaf02.jsonl",
            "cc-fixture-agentsessions-small.jsonl",
            "cc-jason-webtech-48244adb.jsonl",
        ):  # 2.1.19: compact and microcompact boundaries
            assert all("context_events" not in r.metadata for r in of(read(path), Run)), path.name


def test_compact_boundary_and_reattached_files(corpus: Path) -> None:
    # the hand-built 2.x fixture: boundary line 21 (auto, 120,000 tokens) before any request; its summary line 22 is
    # marked isSidechain (it lands in that child run); boundary line 51 is followed by a re-attached file (52) and a
    # compact_file_reference (53) before the next request.
    records = read(corpus / "claude-code" / "cc-fixture-agentsessions-small.jsonl")
    main = of(records, Run)[0]
    events = main.metadata["context_events"]
    assert [(e["step"], e["trigger"], e["pre_tokens"], e["line"], e["summary_seq"]) for e in events] == [
        (0, "auto", 120000, 21, None),
        (2, None, 0, 51, None),
    ]
    assert events[0]["drop"] == [] and events[1]["trigger_logged"] == "[trimmed for fixture]"
    items = [i for i in of(records, Item) if i.run_id == main.run_id]
    assert events[1]["drop"] == [[0, next(i.seq for i in items if i.line == 52)]]
    after = [(i.kind, i.tool_name, i.step) for i in items if i.line in (52, 53)]
    assert after == [("attachment", "file", 2), ("attachment", "compact_file_reference", 2)]
    note = next(i for i in items if i.line == 53)
    assert note.text == FILE_REFERENCE_NOTE.format(name="[trimmed for fixture]")


def write_log(tmp_path: Path, lines: list[dict]) -> Path:
    path = tmp_path / "session.jsonl"
    base = {"sessionId": "s1", "version": "2.1.0", "timestamp": "2026-01-01T00:00:00Z"}
    path.write_text("\n".join(json.dumps({**base, **line}) for line in lines) + "\n")
    return path


def assistant(uuid: str, rid: str, text: str, prompt: int, model: str = "claude-sonnet-4-5") -> dict:
    usage = {"input_tokens": prompt, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0, "output_tokens": 5}
    return {
        "type": "assistant",
        "uuid": uuid,
        "requestId": rid,
        "message": {
            "id": rid,
            "model": model,
            "role": "assistant",
            "usage": usage,
            "content": [{"type": "text", "text": text}],
        },
    }


def test_hand_made_compaction(tmp_path: Path) -> None:
    path = write_log(
        tmp_path,
        [
            {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "do it"}},
            assistant("a1", "r1", "working", 1000),
            {"type": "user", "uuid": "u2", "parentUuid": "a1", "message": {"role": "user", "content": "more"}},
            {
                "type": "assistant",
                "uuid": "a2",
                "parentUuid": "u2",
                "isApiErrorMessage": True,
                "message": {
                    "id": "x",
                    "model": "<synthetic>",
                    "role": "assistant",
                    "usage": {"input_tokens": 0},
                    "content": [{"type": "text", "text": "API Error: 529 overloaded"}],
                },
            },
            {
                "type": "assistant",
                "uuid": "a3",
                "parentUuid": "a2",
                "message": {
                    "id": "y",
                    "model": "<synthetic>",
                    "role": "assistant",
                    "usage": {"input_tokens": 0},
                    "content": [{"type": "text", "text": "No response requested."}],
                },
            },
            assistant("a4", "r2", "done", 90000),
            {
                "type": "system",
                "subtype": "compact_boundary",
                "uuid": "b1",
                "parentUuid": None,
                "compactMetadata": {"trigger": "manual", "preTokens": 90123},
            },
            {
                "type": "user",
                "uuid": "s1",
                "parentUuid": "b1",
                "isCompactSummary": True,
                "message": {"role": "user", "content": "This session is being continued... summary"},
            },
            {
                "type": "attachment",
                "uuid": "f1",
                "parentUuid": "s1",
                "attachment": {"type": "compact_file_reference", "filename": "/repo/big.py", "displayPath": "big.py"},
            },
            {
                "type": "attachment",
                "uuid": "f2",
                "parentUuid": "f1",
                "attachment": {
                    "type": "file",
                    "filename": "/repo/a.py",
                    "content": {"type": "text", "file": {"filePath": "/repo/a.py", "content": "print(1)"}},
                },
            },
            assistant("a5", "r3", "continuing", 3000),
        ],
    )
    records = read(path)
    run = of(records, Run)[0]
    reqs = of(records, Request)
    assert [r.prompt_tokens for r in reqs] == [1000, 90000, 3000], "synthetic entries are not requests"
    items = of(records, Item)
    assert [(i.kind, i.text[:12]) for i in items] == [
        ("user_text", "do it"),
        ("assistant_text", "working"),
        ("user_text", "more"),
        ("assistant_text", "No response "),
        ("assistant_text", "done"),
        ("summary", "This session"),
        ("attachment", "Note: /repo/"),
        ("attachment", "print(1)"),
        ("assistant_text", "continuing"),
    ]
    assert [i.step for i in items[5:8]] == [2, 2, 2]
    assert run.metadata["context_events"] == [
        {
            "kind": "compaction",
            "step": 2,
            "drop": [[0, 5]],
            "summary_seq": 5,
            "trigger": "manual",
            "pre_tokens": 90123,
            "line": 7,
        }
    ]


def test_attachments_logged_before_the_summary_follow_it(tmp_path: Path) -> None:
    # whichever order the lines come in, what is re-sent after a compaction is placed after its summary
    path = write_log(
        tmp_path,
        [
            {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "do it"}},
            assistant("a1", "r1", "working", 1000),
            {"type": "system", "subtype": "compact_boundary", "uuid": "b1", "compactMetadata": {"trigger": "auto"}},
            {"type": "attachment", "uuid": "f1", "attachment": {"type": "compact_file_reference", "filename": "/x.py"}},
            {"type": "user", "uuid": "s1", "isCompactSummary": True, "message": {"role": "user", "content": "summary"}},
            assistant("a2", "r2", "continuing", 300),
        ],
    )
    records = read(path)
    items = of(records, Item)
    assert [(i.kind, i.line, i.step) for i in items] == [
        ("user_text", 1, 0),
        ("assistant_text", 2, 1),
        ("summary", 5, 1),
        ("attachment", 4, 1),
        ("assistant_text", 6, 2),
    ]
    event = of(records, Run)[0].metadata["context_events"][0]
    assert (event["step"], event["drop"], event["summary_seq"], event["pre_tokens"]) == (1, [[0, 2]], 2, None)


def test_microcompact_clears_the_listed_tool_results(tmp_path: Path) -> None:
    def call(uuid: str, rid: str, tool_id: str) -> dict:
        line = assistant(uuid, rid, "", 100)
        line["message"]["content"] = [
            {"type": "tool_use", "id": tool_id, "name": "Read", "input": {"file_path": f"/{tool_id}.py"}}
        ]
        return line

    def result(uuid: str, tool_id: str) -> dict:
        return {
            "type": "user",
            "uuid": uuid,
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": tool_id, "content": "x" * 100}],
            },
        }

    path = write_log(
        tmp_path,
        [
            {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "read all"}},
            call("a1", "r1", "t1"),
            result("u2", "t1"),
            call("a2", "r2", "t2"),
            result("u3", "t2"),
            call("a3", "r3", "t3"),
            result("u4", "t3"),
            {
                "type": "system",
                "subtype": "microcompact_boundary",
                "uuid": "m1",
                "microcompactMetadata": {
                    "trigger": "auto",
                    "preTokens": 5000,
                    "tokensSaved": 60,
                    "compactedToolIds": ["t1", "t2"],
                },
            },
            assistant("a4", "r4", "done", 200),
        ],
    )
    records = read(path)
    seqs = {i.call_id: i.seq for i in of(records, Item) if i.kind == "tool_result"}
    # the results become a note naming the file Claude Code saved them to; calls stay
    assert persisted_note("/home/me/p", "s1", "t1", "txt") == (
        "<persisted-output>Full result saved as: /home/me/.claude/projects/-home-me-p/s1/tool-results/t1.txt\n\n"
        "Read it for more</persisted-output>"
    )
    meta = of(records, Run)[0].metadata
    note = len(persisted_note(meta.get("cwd", ""), meta.get("session_id", ""), "t1", "txt"))
    assert meta["context_events"] == [
        {
            "kind": "microcompact",
            "step": 3,
            "drop": [],
            "cleared": [[seqs["t1"], note], [seqs["t2"], note]],
            "summary_seq": None,
            "trigger": "auto",
            "pre_tokens": 5000,
            "line": 8,
            "tokens_saved": 60,
        }
    ]


def test_microcompact_on_the_corpus(corpus: Path) -> None:
    # cc-jason-webtech (2.1.19): microcompact_boundary line 285 (auto, preTokens 59,492, 23 compactedToolIds) before
    # request 46; compact_boundary lines 427 and 807 before requests 78 and 142
    records = read(corpus / "claude-code" / "cc-jason-webtech-48244adb.jsonl")
    main = of(records, Run)[0]
    events = main.metadata["context_events"]
    assert [(e["kind"], e["step"], e["pre_tokens"], e["line"]) for e in events] == [
        ("microcompact", 46, 59_492, 285),
        ("compaction", 78, 155_933, 427),
        ("compaction", 142, 155_800, 807),
    ]
    micro = events[0]
    assert micro["drop"] == [] and micro["tokens_saved"] == 21_761 and len(micro["cleared"]) == 23
    results = {i.seq: i for i in of(records, Item) if i.run_id == main.run_id}
    assert all(results[seq].kind == "tool_result" and results[seq].step < 46 for seq, _ in micro["cleared"])
    session, cwd = main.metadata["session_id"], main.metadata["cwd"]
    assert {chars for _, chars in micro["cleared"]} <= {
        len(persisted_note(cwd, session, "toolu_" + "x" * 24, ext)) for ext in ("txt", "json")
    }


FIXTURES = Path(__file__).parent / "fixtures"


def test_compaction_fork_counts_no_parent_request_and_keeps_the_summariser_call() -> None:
    # hand-written after cli.js 2.1.41's forked-agent transcript: the parent's messages copied (requestIds and usage
    # included, isSidechain, agentId "acompact-..."), the summary request, the summariser's one response
    records = read(FIXTURES / "agent-acompact-7e41c2.jsonl")
    (run,) = of(records, Run)
    assert of(records, Request) == []  # the copies are the parent's requests; the summariser's call is not a request
    assert run.metadata["forked_requests"] == 2 and run.metadata["sidechain"] is True
    assert run.metadata["context_events"] == [
        {
            "kind": "compaction",
            "step": 0,
            "drop": [],
            "summary_seq": None,
            "trigger": None,
            "pre_tokens": None,
            "line": 6,
            "usage": {"input": 3, "cache_read": 19_790, "cache_write": 160, "output": 845, "cache_write_1h": 0},
            "summariser_model": "claude-opus-4-6",
        }
    ]
    assert "cache_writes" not in run.metadata and run.model == "claude-opus-4-6"
    items = of(records, Item)
    assert {i.step for i in items} == {0} and [i.kind for i in items][-1] == "assistant_text"
    assert not of(records, BadRecord)


def test_a_forks_copy_of_its_parents_response_is_not_its_request(tmp_path: Path) -> None:
    """A 2.1.x prompt-suggestion fork (``subagents/agent-aprompt_suggestion-<hex>.jsonl``) may open with the parent's
    last response, its requestId and usage included, before the suggestion prompt (4 of 45 such files in a real
    session backup): that response is the fork's context and was billed in the parent's transcript."""
    copy = assistant("c1", "r-parent", "Installed the plugin.", 34_719) | {"parentUuid": "p9", "isSidechain": True}
    prompt = {
        "type": "user",
        "uuid": "u1",
        "parentUuid": "c1",
        "isSidechain": True,
        "message": {"role": "user", "content": "[SUGGESTION MODE: Suggest what the user might type next.]"},
    }
    answer = assistant("a1", "r-fork", "/plugin list", 35_767) | {"parentUuid": "u1", "isSidechain": True}
    fork = tmp_path / "subagents" / "agent-aprompt_suggestion-6d19a9.jsonl"
    fork.parent.mkdir()
    fork.write_text(
        "\n".join(json.dumps({"sessionId": "s1", "version": "2.1.27", **x}) for x in (copy, prompt, answer))
    )
    records = read(fork)
    (run,) = of(records, Run)
    assert [r.input_tokens for r in of(records, Request)] == [35_767]
    assert run.metadata["copied_responses"] == 1
    assert [i.kind for i in of(records, Item)] == ["assistant_text", "user_text", "assistant_text"]
    main = tmp_path / "session.jsonl"  # the same lines in a main session: the first response is a request
    main.write_text(fork.read_text())
    assert len(of(read(main), Request)) == 2


def test_model_switch_keeps_each_requests_model_and_notes_the_new_tool_list() -> None:
    # hand-written 2.1 session: 4 requests on Opus, /model sonnet, a deferred_tools_delta attachment, 6 on Sonnet
    records = read(FIXTURES / "cc-model-switch.jsonl")
    (run,) = of(records, Run)
    models = [r.model for r in of(records, Request)]
    assert models == ["claude-opus-4-6"] * 4 + ["claude-sonnet-4-6"] * 6
    assert run.model == "claude-sonnet-4-6"  # the model that served most requests, not the first
    assert run.metadata["unlogged"] == [{"step": 4, "line": 11, "reason": "deferred-tools", "added": 3, "removed": 0}]


def test_calibrate_and_the_prompt_model_agree_on_where_the_prefix_changes() -> None:
    from replay.simulator.prompt import PREFIX_CHANGES
    from replay.tokens.calibrate import SIGNED_BOUNDARIES

    assert set(PREFIX_CHANGES) == set(SIGNED_BOUNDARIES)


def test_cache_writes_logged_only_in_the_breakdown_are_counted(tmp_path: Path) -> None:
    """Claude Code before 2.1.152 wrote ``cache_creation_input_tokens: 0`` when the API reported the writes only in
    the nested ``cache_creation`` breakdown (its CHANGELOG, 2.1.152): the prompt still held them."""
    line = assistant("a1", "r1", "ok", 3)
    line["message"]["usage"] |= {
        "cache_read_input_tokens": 20_000,
        "cache_creation": {"ephemeral_5m_input_tokens": 1_500, "ephemeral_1h_input_tokens": 4_000},
    }
    kept = assistant("a2", "r2", "ok", 3)
    kept["message"]["usage"] |= {
        "cache_creation_input_tokens": 700,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
    }
    user = {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "go"}}
    records = read(write_log(tmp_path, [user, line, {**user, "uuid": "u2", "parentUuid": "a1"}, kept]))
    first, second = of(records, Request)
    assert (first.cache_write, first.cache_write_1h, first.prompt_tokens) == (5_500, 4_000, 25_503)
    assert (second.cache_write, second.cache_write_1h, second.prompt_tokens) == (700, 0, 703)
    assert not of(records, BadRecord)


def test_fast_mode_requests_are_noted_with_a_warning(tmp_path: Path) -> None:
    """``usage.speed`` "fast" (Claude Code's /fast) is billed at a multiple of the standard rates, which replay does
    not price: the requests are listed and the run warns, never a silent standard-rate bill."""
    fast = assistant("a2", "r2", "ok", 30)
    fast["message"]["usage"]["speed"] = "fast"
    standard = assistant("a1", "r1", "ok", 20)
    standard["message"]["usage"]["speed"] = "standard"
    user = {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "go"}}
    records = read(write_log(tmp_path, [user, standard, {**user, "uuid": "u2", "parentUuid": "a1"}, fast]))
    run = of(records, Run)[0]
    assert run.metadata["fast_requests"] == [1]  # the second request (steps from 0)
    assert [w["message"][:40] for w in run.metadata["warnings"]] == ["a request ran in fast mode (usage.speed "]


PRESERVED = Path(__file__).parent / "fixtures" / "cc-preserved-compaction.jsonl"


def _preserved_variant(tmp_path: Path, change) -> Path:
    """The preserved-compaction fixture with its compact_boundary's metadata changed by ``change``."""
    lines = [json.loads(x) for x in PRESERVED.read_text().splitlines()]
    for line in lines:
        if line.get("subtype") == "compact_boundary":
            change(line["compactMetadata"])
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def test_messages_a_compaction_preserved_are_sent_after_its_summary(tmp_path: Path) -> None:
    """Claude Code 2.1.332 (hand-written session in its transcript's shape): the compact_boundary keeps the last
    user message, the Edit call and its result verbatim (``preservedMessages``/``preservedSegment``); they are not
    logged again, the loader relinks them after the summary. Everything before the boundary is dropped and their
    items are sent again after the summary (``resent``), so the recorded policy sends them once, after it."""
    records = read(PRESERVED)
    items = {i.seq: i for i in of(records, Item)}
    (event,) = of(records, Run)[0].metadata["context_events"]
    assert (event["drop"], event["summary_seq"], event["resent"]) == ([[0, 7]], 7, [[8, 11]])
    kept = [items[q] for q in range(4, 7)]
    again = [items[q] for q in range(8, 11)]
    assert [(i.kind, i.text, i.call_id) for i in again] == [(i.kind, i.text, i.call_id) for i in kept]
    assert {i.step for i in again} == {items[7].step} == {of(records, Request)[-1].step}
    # the segment alone (walked from its tail to its head by parentUuid) names the same messages
    walked = read(_preserved_variant(tmp_path, lambda meta: meta.pop("preservedMessages")))
    assert of(walked, Run)[0].metadata["context_events"] == [event]


def test_preserved_messages_missing_from_the_log_are_read_as_dropped(tmp_path: Path) -> None:
    """A preserved message the log does not hold: Claude Code's loader gives the relink up; so does the reader, with a
    warning naming it."""

    def lose_one(meta: dict) -> None:
        meta["preservedMessages"]["uuids"][0] = "30000000-0000-4000-8000-00000000dead"

    records = read(_preserved_variant(tmp_path, lose_one))
    run = of(records, Run)[0]
    (event,) = run.metadata["context_events"]
    assert event["drop"] == [[0, 7]] and "resent" not in event
    assert any("kept 3 message(s) verbatim" in w["message"] for w in run.metadata["warnings"])


def _iteration(kind: str, uncached: int, read: int, write: int, out: int, **extra) -> dict:
    """One entry of ``usage.iterations`` as the API writes it (Anthropic SDK ``Beta*IterationUsage``)."""
    split = {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": write}
    return {
        "input_tokens": uncached,
        "output_tokens": out,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": write,
        "cache_creation": split,
        "type": kind,
        **extra,
    }


def _with_iterations(its: list[dict], uuid: str = "a1", rid: str = "r1") -> dict:
    """An assistant line whose top-level usage is the sum of its ``message`` iterations, as Claude Code 2.1 logs
    a response that called the advisor (the advisor's own iteration is left out of the top level)."""
    line = assistant(uuid, rid, "ok", 0, model="claude-sonnet-4-6")
    own = [it for it in its if it["type"] == "message"]
    total = {k: sum(it[k] for it in own) for k in ("input_tokens", "output_tokens", "cache_read_input_tokens")}
    writes = sum(it["cache_creation_input_tokens"] for it in own)
    line["message"]["usage"] = {
        **total,
        "cache_creation_input_tokens": writes,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": writes},
        "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
        "service_tier": "standard",
        "iterations": its,
        "speed": "standard",
    }
    line["message"]["content"] = [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "advisor", "input": {}},
        {"type": "advisor_tool_result", "tool_use_id": "srvtoolu_1", "content": {"type": "advisor_result"}},
        {"type": "text", "text": "ok"},
    ]
    return {**line, "version": "2.1.170"}


ADVISED = [
    _iteration("message", 2, 90_000, 3_000, 120),
    _iteration("advisor_message", 95_000, 0, 0, 1_500, model="claude-opus-4-7"),
    _iteration("message", 2, 93_000, 2_100, 400),
]


def test_a_response_that_called_the_advisor_is_its_first_message_iteration(tmp_path: Path) -> None:
    """The prompt the request sent is its first ``message`` iteration (Claude Code 2.1.332 reads a response's
    prompt size there); the top level sums both executor iterations (188,104 where the request sent 93,002). The
    advisor's iteration and the executor's second one are server calls of the request's step, each at its own
    model (the second: the request's), so that the bill still holds every iteration."""
    user = {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "plan it"}}
    records = read(write_log(tmp_path, [user, _with_iterations(ADVISED), _with_iterations(ADVISED)]))
    (req,) = of(records, Request)
    assert (req.input_tokens, req.cache_read, req.cache_write, req.cache_write_1h) == (2, 90_000, 3_000, 3_000)
    assert (req.prompt_tokens, req.output_tokens, req.model) == (93_002, 120, "claude-sonnet-4-6")
    run = of(records, Run)[0]
    assert run.metadata["cache_writes"] == {"0": [0, 3_000]}
    calls = run.metadata["server_iterations"]
    assert [(c["type"], c["model"], c["input"], c["cache_read"], c["cache_write"], c["output"]) for c in calls] == [
        ("advisor_message", "claude-opus-4-7", 95_000, 0, 0, 1_500),
        ("message", None, 2, 93_000, 2_100, 400),
    ]
    assert {c["step"] for c in calls} == {0}
    assert not run.metadata.get("warnings")


def test_iterations_that_cannot_be_split_leave_the_top_level_usage(tmp_path: Path) -> None:
    """One iteration (every corpus response with ``iterations``), or one whose counts are not all logged: the
    top-level usage stands and no server call is made up."""
    single = _with_iterations([_iteration("message", 5, 1_000, 10, 7)])
    partial = _with_iterations([ADVISED[0], {"type": "advisor_message", "model": "claude-opus-4-7"}], "a2", "r2")
    user = {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "go"}}
    records = read(write_log(tmp_path, [user, single, {**user, "uuid": "u2", "parentUuid": "a1"}, partial]))
    first, second = of(records, Request)
    assert (first.prompt_tokens, first.output_tokens) == (1_015, 7)
    assert (second.prompt_tokens, second.output_tokens) == (93_002, 120)  # the top level: the message iteration
    assert "server_iterations" not in of(records, Run)[0].metadata


def test_an_api_side_compaction_iteration_is_billed_and_warned_about(tmp_path: Path) -> None:
    """A ``compaction`` iteration first (the API summarised the context before sampling): the request's prompt is
    the ``message`` iteration after it, as Claude Code counts it; the summariser's call is billed at its own counts,
    and the run warns that the prompts after it are not the API's compacted context."""
    its = [_iteration("compaction", 180_000, 0, 0, 3_500), _iteration("message", 23_000, 0, 0, 1_000)]
    user = {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "go on"}}
    records = read(write_log(tmp_path, [user, _with_iterations(its)]))
    (req,) = of(records, Request)
    assert (req.prompt_tokens, req.output_tokens) == (23_000, 1_000)
    run = of(records, Run)[0]
    ((call),) = run.metadata["server_iterations"]
    assert (call["type"], call["input"], call["output"]) == ("compaction", 180_000, 3_500)
    assert [w["message"][:40] for w in run.metadata["warnings"]] == ["the API compacted the context inside thi"]


def test_a_fallback_response_keeps_each_hop_at_its_own_model(tmp_path: Path) -> None:
    """A server-side fallback: the declined hop's ``message`` iteration (its own ``model``) is the request, the
    ``fallback_message`` that served the response is a server call at the fallback model."""
    its = [
        _iteration("message", 4, 50_000, 0, 0, model="claude-fable-5"),
        _iteration("fallback_message", 4, 0, 50_000, 300, model="claude-opus-4-8"),
    ]
    user = {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "go"}}
    records = read(write_log(tmp_path, [user, _with_iterations(its)]))
    (req,) = of(records, Request)
    assert (req.model, req.prompt_tokens, req.output_tokens) == ("claude-fable-5", 50_004, 0)
    ((call),) = of(records, Run)[0].metadata["server_iterations"]
    assert (call["type"], call["model"], call["cache_write"], call["output"]) == (
        "fallback_message",
        "claude-opus-4-8",
        50_000,
        300,
    )


def test_zeroed_iterations_leave_the_message_and_its_model(corpus: Path) -> None:
    """The corpus fixture's fallback response (a ``message`` hop at claude-fable-5, a ``fallback_message`` at
    claude-opus-4-8) has every count trimmed to 0: no usage, no server call, and the request keeps the model its
    message names (the one that served it), as before iterations were read."""
    path = corpus / "claude-code" / "cc-fixture-agentsessions-small.jsonl"
    lines = [n for n, text in enumerate(path.read_text().splitlines(), 1) if '"fallback_message"' in text]
    records = read(path)
    fallback = [r for r in of(records, Request) if r.line in lines]
    assert [(r.model, r.prompt_tokens) for r in fallback] == [("claude-opus-4-8", None)]
    assert not any("server_iterations" in r.metadata for r in of(records, Run))


IDLE = Path(__file__).parent / "fixtures" / "cc-idle-compaction.jsonl"


def test_compaction_made_while_idle_is_marked_by_its_notice(tmp_path: Path) -> None:
    """Claude Code 2.1.300 (hand-written session in its transcript's shape): 54 minutes after the last response the
    session compacted while idle (compact_boundary trigger "auto", the newest round kept) and appended the notice
    "Compacted while idle, before the prompt cache expired ..."; the event's cause is "idle". The same boundary
    without the notice is an ordinary compaction, and a notice with no compaction just before it is warned about."""
    (event,) = of(read(IDLE), Run)[0].metadata["context_events"]
    assert (event["trigger"], event["cause"], event["step"]) == ("auto", "idle", 5)
    lines = IDLE.read_text().splitlines()
    plain = tmp_path / "plain.jsonl"
    plain.write_text("".join(x + "\n" for x in lines if '"informational"' not in x))
    (event,) = of(read(plain), Run)[0].metadata["context_events"]
    assert "cause" not in event
    stray = tmp_path / "stray.jsonl"
    stray.write_text("".join(x + "\n" for x in lines if '"compact_boundary"' not in x and "isCompactSummary" not in x))
    run = of(read(stray), Run)[0]
    assert not run.metadata.get("context_events")
    assert any("idle-compaction notice" in w["message"] for w in run.metadata["warnings"])


def test_a_session_whose_first_line_outgrows_the_head_is_recognised(tmp_path: Path) -> None:
    """A pasted image makes a message line longer than the head detection reads (a real 2.0.55 session: one line of
    855 KB); its envelope, which Claude Code writes first, still says what it is."""
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR" * 30_000}}
    line = {
        "parentUuid": None,
        "isSidechain": False,
        "sessionId": "15eaa3ee-d16e-4fdc-b5b5-ed52c42219bb",
        "version": "2.0.55",
        "type": "user",
        "uuid": "5b0f0c8e-1d4e-4c52-9a55-0c1f3f1b2a10",
        "message": {"role": "user", "content": [{"type": "text", "text": "What is wrong here?"}, image]},
    }
    path = tmp_path / "15eaa3ee-d16e-4fdc-b5b5-ed52c42219bb.jsonl"
    path.write_text(json.dumps(line, separators=(",", ":")) + "\n")
    assert path.stat().st_size > HEAD_BYTES
    assert detect(path) is READER
    assert len(of(read(path), Run)) == 1
    path.write_text('{"parentUuid":null,"other":' + '"x' * HEAD_BYTES)  # not Claude Code's envelope
    assert detect(path) is None


def test_microcompact_clears_answered_user_images() -> None:
    """2.1.38-2.1.68 (cli.js 2.1.41): the microcompact pass sends each image of a user message a response has
    followed as "[image]" and logs a boundary with no compactedToolIds; an image a tool result holds is not one (it
    is named after its tool). The boundary the next user turn logs again clears nothing new."""
    records = read(FIXTURES / "cc-image-microcompact.jsonl")
    images = [i for i in of(records, Item) if i.kind == "image"]
    assert [(i.tool_name, i.step) for i in images] == [(None, 1), ("Read", 2)]
    events = of(records, Run)[0].metadata["context_events"]
    assert [(e["kind"], e["step"], e["cleared"], e["tokens_saved"]) for e in events] == [
        ("microcompact", 2, [[images[0].seq, len("[image]")]], 2000),
        ("microcompact", 3, [], 2000),
    ]


def test_microcompact_before_2_1_38_clears_no_image(tmp_path: Path) -> None:
    """cli.js 2.1.37 has no image step: a boundary of that version leaves the image whole."""
    text = (FIXTURES / "cc-image-microcompact.jsonl").read_text().replace('"version":"2.1.41"', '"version":"2.1.37"')
    path = tmp_path / "s.jsonl"
    path.write_text(text)
    events = of(read(path), Run)[0].metadata["context_events"]
    assert [e["cleared"] for e in events] == [[], []]


def test_the_tool_list_announced_again_after_a_compaction_is_no_prefix_change(tmp_path: Path) -> None:
    """Claude Code 2.1.69 on announces every deferred tool again after a summary (the 2.1.132 binary builds the delta
    against the announcements left in the messages): the list the prefix holds from the first request. A delta
    mid-session (a new tool list) still marks a prefix change; the one logged after the summary does not."""

    def delta(uuid: str, names: list[str]) -> dict:
        att = {"type": "deferred_tools_delta", "addedNames": names, "addedLines": names, "removedNames": []}
        return {"type": "attachment", "uuid": uuid, "attachment": att}

    path = write_log(
        tmp_path,
        [
            delta("d0", ["WebFetch", "WebSearch"]),
            {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "do it"}},
            assistant("a1", "r1", "working", 1000),
            delta("d1", ["mcp__x__read"]),
            {"type": "user", "uuid": "u2", "message": {"role": "user", "content": "more"}},
            assistant("a2", "r2", "working", 1200),
            {"type": "system", "subtype": "compact_boundary", "uuid": "b1", "compactMetadata": {"trigger": "auto"}},
            {"type": "user", "uuid": "s1", "isCompactSummary": True, "message": {"role": "user", "content": "summary"}},
            delta("d2", ["WebFetch", "WebSearch", "mcp__x__read"]),
            assistant("a3", "r3", "continuing", 300),
        ],
    )
    run = of(read(path), Run)[0]
    assert [(n["step"], n["reason"]) for n in run.metadata["unlogged"]] == [(1, "deferred-tools")]


def test_tools_deferred_first_after_a_compaction_are_a_prefix_change(tmp_path: Path) -> None:
    """LAF-US/IDAHO-VAULT 05541cb5 (2.1.92): every tool was loaded until a /model switch right after a compaction
    deferred 438 of them to ToolSearch (the prompt fell from 168k to 42k). A delta after a summary that names
    tools no earlier delta deferred is a new tool list, not the list announced again; the re-announcement after
    the next summary is not."""

    def delta(uuid: str, names: list[str]) -> dict:
        att = {"type": "deferred_tools_delta", "addedNames": names, "addedLines": names, "removedNames": []}
        return {"type": "attachment", "uuid": uuid, "attachment": att}

    def compaction(n: int) -> list[dict]:
        boundary = {"type": "system", "subtype": "compact_boundary", "uuid": f"b{n}", "compactMetadata": {}}
        summary = {
            "type": "user",
            "uuid": f"s{n}",
            "isCompactSummary": True,
            "message": {"role": "user", "content": "s"},
        }
        return [boundary, summary]

    path = write_log(
        tmp_path,
        [
            {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "do it"}},
            assistant("a1", "r1", "working", 168_000),
            *compaction(1),
            {"type": "user", "uuid": "u2", "message": {"role": "user", "content": "/model"}},
            delta("d1", ["WebFetch", "mcp__x__read"]),
            assistant("a2", "r2", "working", 42_000),
            *compaction(2),
            delta("d2", ["WebFetch", "mcp__x__read"]),
            assistant("a3", "r3", "continuing", 40_000),
        ],
    )
    run = of(read(path), Run)[0]
    assert [(n["step"], n["reason"], n["added"]) for n in run.metadata["unlogged"]] == [(1, "deferred-tools", 2)]


def test_a_teleported_session_marker_alone_makes_no_run(tmp_path: Path) -> None:
    """A transcript holding only the ``teleported-from`` record (a web session brought to the CLI, nothing sent
    yet) is Claude Code's, with no run in it; not a file of unknown format."""
    marker = {"type": "teleported-from", "remoteSessionId": "session_01", "branch": "b", "messageCount": 0}
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(marker) + "\n")
    assert detect(path) is READER
    assert of(read(path), Run) == []


def test_each_images_pixel_size_is_kept(tmp_path: Path) -> None:
    """A pasted image and one a tool result holds (an MCP screenshot) keep their pixel size (``image_sizes``), read
    from the base64 data's header: what the server counts for them (replay.tokens.images); data that is no image
    keeps none."""
    import base64
    import io

    from PIL import Image

    def png(width: int, height: int) -> str:
        out = io.BytesIO()
        Image.new("RGB", (width, height)).save(out, "PNG")
        return base64.b64encode(out.getvalue()).decode()

    def image(data: str) -> dict:
        return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}

    call = {"type": "tool_use", "id": "t1", "name": "mcp__chrome__take_screenshot", "input": {}}
    shot = {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": [{"type": "text", "text": "Took it."}, image(png(2400, 2204))],
    }
    lines = [
        {
            "type": "user",
            "uuid": "u1",
            "message": {
                "role": "user",
                "content": [{"type": "text", "text": "see"}, image(png(300, 200)), image("iVBOR")],
            },
        },
        {**assistant("a1", "r1", "ok", 100), "parentUuid": "u1"},
        {
            "type": "assistant",
            "uuid": "a2",
            "parentUuid": "a1",
            "requestId": "r2",
            "message": {
                "id": "r2",
                "model": "claude-sonnet-4-5",
                "role": "assistant",
                "content": [call],
                "usage": {"input_tokens": 120, "output_tokens": 5},
            },
        },
        {"type": "user", "uuid": "u2", "parentUuid": "a2", "message": {"role": "user", "content": [shot]}},
        {**assistant("a3", "r3", "done", 1800), "parentUuid": "u2"},
    ]
    records = read(write_log(tmp_path, lines))
    images = [i for i in of(records, Item) if i.kind == "image"]
    assert [i.tool_name for i in images] == [None, None, "mcp__chrome__take_screenshot"]
    sizes = of(records, Run)[0].metadata["image_sizes"]
    assert sizes == [[images[0].seq, 300, 200], [images[2].seq, 2400, 2204]]


def test_thinking_logged_without_its_text_is_sized_from_the_output(tmp_path: Path) -> None:
    """2.1.x logs a thinking block's signature with an empty text: its size is the response's output less its
    visible blocks' characters / 4, at most a third of the signature's characters (claude_code_thinking); a
    response cut at max_tokens in its thinking gets none (Claude Code asks again without it)."""

    def response(uuid: str, rid: str, signature: int, visible: list[dict], output: int, stop: str) -> dict:
        thinking = {"type": "thinking", "thinking": "", "signature": "s" * signature}
        usage = {"input_tokens": 5, "cache_read_input_tokens": 20_000, "output_tokens": output}
        message = {"id": rid, "model": "claude-sonnet-4-6", "role": "assistant", "stop_reason": stop}
        return {
            "type": "assistant",
            "uuid": uuid,
            "requestId": rid,
            "message": {**message, "usage": usage, "content": [thinking, *visible]},
        }

    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "x" * 4_000}}
    lines = [
        {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "go"}},
        {**response("a1", "r1", 9_000, [{"type": "text", "text": "ok"}], 2_500, "end_turn"), "parentUuid": "u1"},
        {"type": "user", "uuid": "u2", "parentUuid": "a1", "message": {"role": "user", "content": "more"}},
        {**response("a2", "r2", 400, [call], 1_300, "tool_use"), "parentUuid": "u2"},
        {
            "type": "user",
            "uuid": "u3",
            "parentUuid": "a2",
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "done"}]},
        },
        {**response("a3", "r3", 60_000, [], 32_000, "max_tokens"), "parentUuid": "u3"},
    ]
    records = read(write_log(tmp_path, lines))
    thinking = [i.seq for i in of(records, Item) if i.kind == "reasoning"]
    sizes = of(records, Run)[0].metadata["thinking_tokens"]
    # 2,500 less 1 for "ok"; 1,300 less 1,006 for the call would be 294, but a 400-character signature holds 133
    assert sizes == [[thinking[0], 2_499], [thinking[1], 133]]
