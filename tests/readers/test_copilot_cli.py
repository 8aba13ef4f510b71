"""Copilot CLI reader: events.jsonl (turns as requests, toolRequests + tool.execution_*) and the legacy JSON."""

from __future__ import annotations

import json
from pathlib import Path

from replay.model import BadRecord, Item, Request, Run
from replay.readers import detect
from replay.readers.base import ReadContext
from replay.readers.copilot_cli import READER


def read(path: Path) -> list:
    return list(READER.read(ReadContext(path=path, file_hash="0" * 32)))


def of(records: list, cls: type) -> list:
    return [r for r in records if isinstance(r, cls)]


def test_events_jsonl(corpus: Path) -> None:
    path = corpus / "copilot-cli" / "copilot-vct-events-1.0.34-20260423.jsonl"
    assert detect(path) is READER
    records = read(path)
    assert not of(records, BadRecord)
    (run,) = of(records, Run)
    metrics = run.metadata["session_usage"]["modelMetrics"]["claude-sonnet-4.6"]
    reqs = of(records, Request)
    assert len(reqs) == metrics["requests"]["count"] == 6  # one request per assistant.turn_start
    assert [q.output_tokens for q in reqs] == [311, 170, 141, 153, 1379, 694]
    assert sum(q.output_tokens for q in reqs) == metrics["usage"]["outputTokens"]  # the per-message counts add up
    assert all(q.prompt_tokens is None and q.model == "claude-sonnet-4.6" for q in reqs)
    items = of(records, Item)
    calls = [i for i in items if i.kind == "tool_call"]
    results = {i.call_id: i for i in items if i.kind == "tool_result"}
    assert len(calls) == 13 and set(results) == {c.call_id for c in calls}
    glob = next(c for c in calls if c.tool_name == "glob")  # started without a toolRequest: added at its start
    assert (glob.line, glob.step, glob.access) == (34, 3, "search")
    assert [i.kind for i in items[:3]] == ["system", "user_text", "reasoning"]
    assert items[1].text.startswith("<current_datetime>")  # transformedContent: the text sent
    assert sum(i.kind == "system" for i in items) == 1  # the repeated identical system message is not re-added


def test_legacy_session_json(tmp_path: Path) -> None:
    doc = {
        "sessionId": "s1",
        "startTime": "2025-09-01T00:00:00Z",
        "timeline": [{"type": "info"}],
        "chatMessages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "list files"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "t1", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls src"}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "t1", "content": "a.py"},
            "junk",
            {"role": "assistant", "content": "one file"},
        ],
    }
    path = tmp_path / "session.json"
    path.write_text(json.dumps(doc, indent=2))
    assert detect(path) is READER
    records = read(path)
    assert [b.line for b in of(records, BadRecord)] == [4]
    assert len(of(records, Request)) == 2
    call, result = (i for i in of(records, Item) if i.kind in ("tool_call", "tool_result"))
    assert (call.resource, call.access, result.call_id, result.step) == ("src", "search", "t1", 1)


def test_events_jsonl_harness_prefix(corpus: Path) -> None:
    """The corpus file has no compaction; it has the shutdown's context breakdown: the tool definitions are the
    prefix the log does not hold (its system message is logged)."""
    records = read(corpus / "copilot-cli" / "copilot-vct-events-1.0.34-20260423.jsonl")
    (run,) = of(records, Run)
    assert run.model == "claude-sonnet-4.6" and "context_events" not in run.metadata
    assert run.metadata["harness_prefix"] == {
        "tokens": 15204,
        "tool_definitions": 15204,
        "system": 9891,
        "system_logged": True,
        "from": "session.shutdown",
    }


def _event(kind: str, data: dict, n: int) -> dict:
    stamp = f"2026-04-23T17:{n // 60:02d}:{n % 60:02d}.000Z"
    parent = f"e{n - 1:03d}" if n else None
    return {"type": kind, "data": data, "id": f"e{n:03d}", "timestamp": stamp, "parentId": parent}


def compaction_session() -> list[dict]:
    """A hand-made events.jsonl in 1.0.34's layout: a background compaction starts after the second turn's tool
    call and completes after the third turn's call (messages added in between stay)."""
    out: list[dict] = []

    def add(kind: str, **data) -> None:
        out.append(_event(kind, data, len(out)))

    add(
        "session.start",
        sessionId="s1",
        version=1,
        producer="copilot-agent",
        copilotVersion="1.0.34",
        startTime="2026-04-23T17:00:00.000Z",
        selectedModel="gpt-5.2",
        context={"cwd": "/w"},
    )
    add("system.message", content="You are the GitHub Copilot CLI.")
    add("user.message", content="fix the tests", transformedContent="fix the tests")
    for turn, (name, call) in enumerate([("view", "c1"), ("bash", "c2"), ("view", "c3")]):
        add("assistant.turn_start", turnId=str(turn))
        add(
            "assistant.message",
            messageId=f"m{turn}",
            content=f"step {turn}",
            outputTokens=50,
            toolRequests=[{"toolCallId": call, "name": name, "arguments": {"path": f"/w/f{turn}.py"}}],
        )
        add("tool.execution_start", toolCallId=call, toolName=name, arguments={"path": f"/w/f{turn}.py"})
        add(
            "tool.execution_complete",
            toolCallId=call,
            success=True,
            result={"content": f"contents of f{turn} " * 50, "detailedContent": "..."},
        )
        add("assistant.turn_end", turnId=str(turn))
        if turn == 1:
            add("session.compaction_start", systemTokens=1200, conversationTokens=98000, toolDefinitionsTokens=9000)
    add(
        "session.compaction_complete",
        success=True,
        preCompactionTokens=108200,
        postCompactionTokens=14000,
        preCompactionMessagesLength=8,
        messagesRemoved=6,
        tokensRemoved=94200,
        summaryContent="Fixed two tests.",
        checkpointNumber=1,
        compactionTokensUsed={"input": 99000, "output": 900, "cachedInput": 80000},
        systemTokens=1200,
        conversationTokens=3800,
        toolDefinitionsTokens=9000,
    )
    add("assistant.turn_start", turnId="3")
    add("assistant.message", messageId="m3", content="done", outputTokens=20, toolRequests=[])
    add("assistant.turn_end", turnId="3")
    return out


def test_compaction_replaces_the_messages_up_to_its_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in compaction_session()) + "\n")
    records = read(path)
    (run,) = of(records, Run)
    assert run.model == "gpt-5.2"  # session.start's selectedModel
    (event,) = run.metadata["context_events"]
    items = of(records, Item)
    third = next(i for i in items if i.kind == "tool_call" and i.call_id == "c3")
    summary = next(i for i in items if i.kind == "summary")
    assert event["step"] == 3 and event["trigger"] == "auto"
    assert event["drop"] == [[1, third.seq - 1]]  # from the user message to the checkpoint: turn 3 stays
    assert event["summary_seq"] == summary.seq and summary.text.endswith("Fixed two tests.")
    assert "fix the tests" in summary.text  # the summary message lists the user's messages
    # the CLI writes the call's prompt_tokens as ``input`` (cached included): canonical ``input`` is the uncached part
    assert event["usage"] == {"input": 19000, "cache_read": 80000, "output": 900, "prompt": 99000}
    assert (event["pre_tokens"], event["post_tokens"]) == (108200, 14000)
    assert run.metadata["harness_prefix"]["tokens"] == 9000  # from compaction_start, the first breakdown


def test_logged_prefix_and_session_totals_give_the_prompt(corpus: Path, tmp_path: Path) -> None:
    """No per-request usage, so nothing to fit per request. Where the shutdown's totals are the run's
    (replay.metrics.session_totals) they give the sum of its prompts (186,809 tokens, cache reads included), and
    the scale that makes the logged prefix and the items add up to it: the six replayed prompts then do (before:
    167,953, -10%). Where they are not (here: the count altered to 5 calls), the tool definitions the log sizes are
    the prefix at scale 1: within 11% of that sum; the log's items alone gave 85k (-54%)."""
    from replay.ingest import ingest
    from replay.simulator.fidelity import replay_recorded
    from replay.simulator.load import load_runs
    from replay.store import open_store
    from replay.tokens.counting import count_items
    from replay.tokens.loading import load_tokenizer

    source = corpus / "copilot-cli" / "copilot-vct-events-1.0.34-20260423.jsonl"
    altered = tmp_path / "altered" / source.name
    altered.parent.mkdir()
    altered.write_text(source.read_text().replace('"requests":{"count":6,', '"requests":{"count":5,'))
    total = 186_809  # session.shutdown modelMetrics["claude-sonnet-4.6"].usage.inputTokens
    tok = load_tokenizer("o200k")
    for path, source_name, prefix, within in [
        (source, "totals:copilot-cli", None, 0.001),
        (altered, "log:copilot-cli", 15204, 0.11),
    ]:
        con = open_store(tmp_path / f"{path.parent.name}.duckdb")
        ingest(con, [path])
        count_items(con, tok)
        (run,) = load_runs(con, tok.tokenizer_id)
        assert run.prompt_source == source_name
        assert prefix is None or run.prefix_tokens == prefix
        cols, _ = replay_recorded(run, "none")
        assert abs(cols["prompt_tokens"].sum() / total - 1) <= within, (source_name, cols["prompt_tokens"].sum())


def background_session(body: int = 60_000) -> tuple[list[dict], int]:
    """1.0.34's layout again, sized so that its background compaction is due: five turns each reading about
    ``body`` characters on gpt-4.1 (max_prompt_tokens 64,000 in the CLI's table: due at 0.8 of it). The compaction
    starts before the fourth request (after three reads) and completes during it; (events, prompt after it as the
    CLI counts it: system + conversation + tool definitions)."""
    out: list[dict] = []

    def add(kind: str, **data) -> None:
        out.append(_event(kind, data, len(out)))

    summary = "Read f0, f1 and f2; the failing assertion is in f2."
    add(
        "session.start",
        sessionId="s2",
        version=1,
        producer="copilot-agent",
        copilotVersion="1.0.34",
        startTime="2026-04-23T17:00:00.000Z",
        selectedModel="gpt-4.1",
        context={"cwd": "/w"},
    )
    add("system.message", content="You are the GitHub Copilot CLI.")
    add("user.message", content="find the bug", transformedContent="find the bug")
    kept = 0
    for turn in range(5):
        if turn == 3:
            add(
                "session.compaction_start",
                systemTokens=10,
                conversationTokens=3 * body // 4,
                toolDefinitionsTokens=9000,
            )
        if turn == 4:
            after = 10 + (len("find the bug") + len(summary)) // 4 + kept + 9000
            add(
                "session.compaction_complete",
                success=True,
                summaryContent=summary,
                messagesRemoved=7,
                compactionTokensUsed={"input": 3 * body // 4, "output": 300, "cachedInput": 0},
                systemTokens=10,
                conversationTokens=after - 9010,
                toolDefinitionsTokens=9000,
            )
        add("assistant.turn_start", turnId=str(turn))
        text = "".join(f"{turn}:{n:06d}\n" for n in range(body // 9))
        add(
            "assistant.message",
            messageId=f"m{turn}",
            content=f"reading f{turn}",
            outputTokens=30,
            toolRequests=[{"toolCallId": f"c{turn}", "name": "view", "arguments": {"path": f"/w/f{turn}.py"}}],
        )
        add("tool.execution_start", toolCallId=f"c{turn}", toolName="view", arguments={"path": f"/w/f{turn}.py"})
        add("tool.execution_complete", toolCallId=f"c{turn}", success=True, result={"content": text})
        add("assistant.turn_end", turnId=str(turn))
        if turn == 3:
            kept = (len(f"reading f{turn}") + len(text)) // 4 + 20  # the messages since the checkpoint stay
    return out, after


def test_background_compaction_preset_and_fidelity(tmp_path: Path) -> None:
    """No per-request usage: fidelity still scores the compaction, the prompt after it as the CLI counted it; the
    copilot-cli preset, chosen from the model, starts at 0.8 of gpt-4.1's 64,000 before the fourth request and
    applies at the next one, keeping what came since, as the CLI did."""
    from replay.ingest import ingest
    from replay.simulator.fidelity import fidelity_frame
    from replay.store import open_store

    events, after = background_session()
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    con = open_store(tmp_path / "b.duckdb")
    ingest(con, [path])
    rows = fidelity_frame(con, None).to_dicts()
    (row,) = rows
    assert row["kind"] == "compaction" and row["preset"] == "copilot-cli@64000"
    assert row["recorded_request"] == 4 and row["recorded_after"] == after
    assert row["simulated_request"] == 4 and row["within"], row


def test_compaction_without_the_size_after_is_listed_not_scored(tmp_path: Path) -> None:
    """A completion that logs no breakdown after it (a real 2026-04 session's: success, preCompactionTokens,
    summaryContent, checkpoint, compactionTokensUsed) on a run without usage: fidelity lists the event with the
    request the preset fires at and why it is not scored (main dropped the run: fidelity found nothing at all)."""
    from replay.ingest import ingest
    from replay.simulator.fidelity import fidelity_frame
    from replay.store import open_store

    events, _ = background_session()
    for ev in events:
        if ev["type"] == "session.compaction_complete":
            for key in ("systemTokens", "conversationTokens", "toolDefinitionsTokens"):
                del ev["data"][key]
            ev["data"]["preCompactionTokens"] = 45_000
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    con = open_store(tmp_path / "b.duckdb")
    ingest(con, [path])
    (row,) = fidelity_frame(con, None).to_dicts()
    assert row["kind"] == "compaction" and row["recorded_request"] == 4 and row["simulated_request"] == 4
    assert row["recorded_after"] is None and row["within"] is None
    assert row["reason"] == "no recorded prompt after it: request 4 has no usage in the log"


def test_a_bill_of_the_summariser_call_alone_says_so(tmp_path: Path) -> None:
    """No request records its prompt, the compaction records its call's usage: the recorded bill is that call alone
    (a real 2026-04 session: $0.185 against about $0.57 at list prices for its 16 requests), and the run row says
    the requests are left out of it (main said nothing: the note needed a billed request)."""
    from replay.ingest import ingest
    from replay.policies import Budget, make_policy
    from replay.simulator.load import load_runs
    from replay.simulator.run import simulate_run
    from replay.store import open_store

    events, _ = background_session()
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    con = open_store(tmp_path / "b.duckdb")
    ingest(con, [path])
    (run,) = load_runs(con, None)
    row = simulate_run(run, make_policy("recorded"), None, Budget(200_000))[1]
    assert row["recorded_cost_usd"] > 0  # the summariser call, priced
    assert row["recorded_cost_note"].startswith(f"{run.n_requests} of {run.n_requests} requests record no usage")
    assert "the bill is the log's summariser calls alone" in row["recorded_cost_note"]


def test_sub_agent_events_are_not_the_main_conversation(tmp_path: Path) -> None:
    """1.0.34 writes a task sub-agent's messages and tool events into the session's file with
    ``data.parentToolCallId`` (its own rebuild of the main messages skips them): they are a child run's, and the
    main turn that ran the task keeps one request."""
    out: list[dict] = []

    def add(kind: str, **data) -> None:
        out.append(_event(kind, data, len(out)))

    add("session.start", sessionId="s3", version=1, producer="copilot-agent", copilotVersion="1.0.34",
        startTime="2026-04-23T17:00:00.000Z", selectedModel="claude-sonnet-4.6", context={"cwd": "/w"})  # fmt: skip
    add("system.message", content="You are the GitHub Copilot CLI.")
    add("user.message", content="look around", transformedContent="look around")
    add("assistant.turn_start", turnId="0")
    add("assistant.message", messageId="m0", content="", outputTokens=40, requestId="r0",
        toolRequests=[{"toolCallId": "t1", "name": "task", "arguments": {"prompt": "list src"}}])  # fmt: skip
    add("tool.execution_start", toolCallId="t1", toolName="task", arguments={"prompt": "list src"})
    add("subagent.started", toolCallId="t1", agentName="explore", agentDisplayName="Explore", agentDescription="x")
    add("assistant.message", parentToolCallId="t1", messageId="s0", content="", requestId="r9",
        toolRequests=[{"toolCallId": "s1", "name": "glob", "arguments": {"pattern": "src/*"}}])  # fmt: skip
    add("tool.execution_start", parentToolCallId="t1", toolCallId="s1", toolName="glob", arguments={"pattern": "src/*"})
    add("tool.execution_complete", parentToolCallId="t1", toolCallId="s1", success=True, result={"content": "a.py"})
    add("assistant.message", parentToolCallId="t1", messageId="s1m", content="src has a.py", requestId="r10")
    add("subagent.completed", toolCallId="t1", agentName="explore", agentDisplayName="Explore")
    add("tool.execution_complete", toolCallId="t1", success=True, result={"content": "src has a.py"})
    add("assistant.turn_end", turnId="0")
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in out) + "\n")
    records = read(path)
    main, child = of(records, Run)
    assert child.parent_run_id == main.run_id and child.metadata["subagent"]["agentName"] == "explore"
    main_items = [i for i in of(records, Item) if i.run_id == main.run_id]
    assert [i.kind for i in main_items] == ["system", "user_text", "tool_call", "tool_result"]
    assert [q.output_tokens for q in of(records, Request) if q.run_id == main.run_id] == [40]
    child_items = [(i.kind, i.text) for i in of(records, Item) if i.run_id == child.run_id]
    assert child_items == [("tool_call", ""), ("tool_result", "a.py"), ("assistant_text", "src has a.py")]
    assert sum(q.run_id == child.run_id for q in of(records, Request)) == 2
