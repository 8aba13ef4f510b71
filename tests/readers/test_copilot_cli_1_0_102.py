"""Copilot CLI 1.0.102 events.jsonl: hand-made sessions in the layout its session-events schema gives and its
runtime wrote against a scripted provider (usage records, sub-agents in the same file, user message before the
system message, the summariser's usage in the call-usage shape, skill context by reference)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from genai_prices import Usage, calc_price

from replay.ingest import ingest
from replay.metrics.recorded_bill import request_bill, runs_bill
from replay.model import BadRecord, Item, Request, Run
from replay.readers.base import ReadContext
from replay.readers.copilot_cli import READER
from replay.simulator.fidelity import harness_version
from replay.simulator.harness_preset import harness_preset
from replay.store import open_store

SYSTEM = "You are the GitHub Copilot CLI, a terminal assistant built by GitHub."


def read(path: Path) -> list:
    return list(READER.read(ReadContext(path=path, file_hash="0" * 32)))


def of(records: list, cls: type) -> list:
    return [r for r in records if isinstance(r, cls)]


class Session:
    """Writes events as 1.0.102 does: ``{type, data, id, timestamp, parentId[, agentId]}``, one second apart unless
    told (``at``: seconds from the start, fractions allowed)."""

    def __init__(self, model: str = "claude-sonnet-4.6") -> None:
        self.events: list[dict] = []
        self.clock = 0.0
        self.calls = 0
        self.add(
            "session.start",
            sessionId="s102",
            version=1,
            producer="copilot-agent",
            copilotVersion="1.0.102",
            startTime="2026-12-01T10:00:00.000Z",
            selectedModel=model,
            contextTier=None,
            context={"cwd": "/w"},
            alreadyInUse=False,
            remoteSteerable=False,
        )

    def add(self, etype: str, agent: str | None = None, at: float | None = None, **data: Any) -> None:
        self.clock = self.clock + 1 if at is None else at
        whole, frac = int(self.clock), round((self.clock % 1) * 1000)
        n = len(self.events)
        ev = {
            "type": etype,
            "data": data,
            "id": f"00000000-0000-4000-8000-{n:012d}",
            "timestamp": f"2026-12-01T10:{whole // 60:02d}:{whole % 60:02d}.{frac:03d}Z",
            "parentId": f"00000000-0000-4000-8000-{n - 1:012d}" if n else None,
        }
        if agent:
            ev["agentId"] = agent
        self.events.append(ev)

    def prompt(self, text: str, agent: str | None = None, system: str = SYSTEM, **extra: Any) -> None:
        stamp = "<current_datetime>2026-12-01T10:00:00.000+00:00</current_datetime>\n\n"
        self.add("user.message", agent, content=text, transformedContent=stamp + text, delivery="idle", **extra)
        self.add("system.message", agent, role="system", content=system)

    def call(
        self,
        turn: int,
        content: str,
        tools: list[tuple[str, str, dict, str]] = (),  # type: ignore[assignment]
        *,
        agent: str | None = None,
        model: str = "claude-sonnet-4.6",
        usage: dict | None = None,
        kind: str = "conversation-agent",
        parent: str | None = None,
        at: float | None = None,
        duration: int = 900,
    ) -> str:
        """One turn: its start, the call's usage record, its message, each tool's start and result, its end."""
        self.calls += 1
        api = f"chatcmpl-{self.calls}"
        extra = {"parentToolCallId": parent} if parent else {}
        self.add("assistant.turn_start", agent, at, turnId=str(turn), interactionId="i1", **extra)
        counts = usage or {"inputTokens": 1000, "outputTokens": 10, "cacheReadTokens": 0, "cacheWriteTokens": 0}
        self.add(
            "session.usage_record",
            agent,
            None if at is None else at + duration / 1000 + 0.01,
            usage={
                "model": model,
                "modelDisplayName": model,
                **counts,
                "cost": 1.0,
                "duration": duration,
                "initiator": "agent",
                "interactionType": kind,
                "maxPromptTokens": 168_000,
                "apiCallId": api,
                "accounting": {"sourceSessionId": "s102", "sequence": self.calls, "usageId": api},
                "toolTokenCount": 15_000,
            },
        )
        requests = [
            {"toolCallId": cid, "name": name, "arguments": args, "type": "function", "intentionSummary": name}
            for cid, name, args, _ in tools
        ]
        self.add(
            "assistant.message",
            agent,
            messageId=f"m{self.calls}",
            model=model,
            content=content,
            toolRequests=requests,
            interactionId="i1",
            turnId=str(turn),
            rte=False,
            apiCallId=api,
            **extra,
        )
        for cid, name, args, result in tools:
            self.add("tool.execution_start", agent, toolCallId=cid, toolName=name, arguments=args, turnId=str(turn))
            self.add(
                "tool.execution_complete",
                agent,
                toolCallId=cid,
                model=model,
                interactionId="i1",
                turnId=str(turn),
                rte=False,
                success=True,
                result={"content": result},
                toolTelemetry={},
            )
        self.add("assistant.turn_end", agent, turnId=str(turn), **extra)
        return api

    def write(self, path: Path) -> Path:
        path.write_text("\n".join(json.dumps(e) for e in self.events) + "\n")
        return path


def test_usage_records_are_the_requests_usage(tmp_path: Path) -> None:
    """Each call's ``session.usage_record`` gives its request the counts: ``inputTokens`` is the whole prompt (reads
    and writes included), the output is the record's (the message carries none). The user message logged before the
    system message is sent after it. A sampling call's record is no request of the conversation."""
    s = Session()
    s.prompt("fix the tests")
    s.call(0, "reading", [("c1", "view", {"path": "/w/a.py"}, "print(1)")], usage={
        "inputTokens": 20_000, "outputTokens": 120, "cacheReadTokens": 0, "cacheWriteTokens": 18_000})  # fmt: skip
    s.add("session.usage_record", usage={"model": "gpt-5-mini", "inputTokens": 500, "outputTokens": 20,
                                         "interactionType": "conversation-sampling"})  # fmt: skip
    s.call(1, "done", usage={"inputTokens": 21_000, "outputTokens": 40, "cacheReadTokens": 18_000,
                             "cacheWriteTokens": 2_500}, model="claude-opus-4.6")  # fmt: skip
    records = read(s.write(tmp_path / "events.jsonl"))
    assert not of(records, BadRecord)
    (run,) = of(records, Run)
    reqs = of(records, Request)
    assert [(q.prompt_tokens, q.input_tokens, q.cache_read, q.cache_write, q.output_tokens) for q in reqs] == [
        (20_000, 2_000, 0, 18_000, 120),
        (21_000, 500, 18_000, 2_500, 40),
    ]
    assert [q.model for q in reqs] == ["claude-sonnet-4.6", "claude-opus-4.6"]  # each call's own model
    assert run.metadata["prompt_limit"] == 168_000
    sampling = {"line": 10, "step": 1, "type": "conversation-sampling", "model": "gpt-5-mini", "input": 500}
    assert run.metadata["side_calls"] == [{**sampling, "cache_read": 0, "cache_write": 0, "output": 20}]
    items = of(records, Item)
    assert [i.kind for i in items[:2]] == ["system", "user_text"]
    assert items[0].seq == 0 and items[1].line == 2


def test_usage_record_that_does_not_add_up_is_quarantined(tmp_path: Path) -> None:
    s = Session()
    s.prompt("hi")
    s.call(0, "hello", usage={"inputTokens": 100, "outputTokens": 5, "cacheReadTokens": 90, "cacheWriteTokens": 20})
    records = read(s.write(tmp_path / "events.jsonl"))
    (bad,) = of(records, BadRecord)
    assert bad.line == 5 and "exceed inputTokens 100" in bad.reason
    (req,) = of(records, Request)
    assert req.prompt_tokens is None and req.output_tokens is None


def test_chunks_of_one_call_are_one_request_and_another_call_opens_one(tmp_path: Path) -> None:
    """A response split at reasoning boundaries is several messages with one ``apiCallId``; a second call inside a
    turn has its own."""
    s = Session()
    s.prompt("explain")
    s.call(0, "part one")
    turn_end = s.events.pop()
    s.add("assistant.message", messageId="m1b", model="claude-sonnet-4.6", content="part two",
          apiCallId="chatcmpl-1", chunkIndex=1, chunkCount=2, turnId="0")  # fmt: skip
    usage = {"model": "claude-sonnet-4.6", "inputTokens": 1200, "outputTokens": 7, "apiCallId": "chatcmpl-9"}
    s.add("session.usage_record", usage={**usage, "interactionType": "conversation-agent"})
    s.add("assistant.message", messageId="m9", model="claude-sonnet-4.6", content="again", apiCallId="chatcmpl-9")
    s.events.append(turn_end)
    records = read(s.write(tmp_path / "events.jsonl"))
    reqs = of(records, Request)
    assert [(q.step, q.prompt_tokens) for q in reqs] == [(0, 1000), (1, 1200)]
    texts = [(i.step, i.text) for i in of(records, Item) if i.kind == "assistant_text"]
    assert texts == [(1, "part one"), (1, "part two"), (2, "again")]


def test_sub_agents_are_runs_of_their_own(tmp_path: Path) -> None:
    """A sub-agent's events (``agentId``) are its own conversation: a child run with its own system prompt, prompt,
    requests and model; the main run keeps only its own (the task call and its result)."""
    s = Session()
    s.prompt("delegate it")
    s.call(0, "delegating", [("t1", "task", {"prompt": "run echo", "agent_type": "general-purpose"}, "sub done")])
    # in the file the sub-agent's events come between the task call's start and its result: move them there
    main_end = s.events[-2:]
    del s.events[-2:]
    agent = "7651dd51-0000-4000-8000-000000000001"
    s.add("subagent.started", agent, toolCallId="t1", agentName="general-purpose", agentDisplayName="subby",
          model="gpt-5.4-mini", agentType="general-purpose", executionMode="sync")  # fmt: skip
    s.add("session.model_change", agent, source="agent", newModel="gpt-5.4-mini", reasoningEffort=None)
    s.add("subagent.configured", agent, model="gpt-5.4-mini", multiTurn=True)
    s.prompt("run echo", agent, system="As a sub-agent, complete your parent's task.", source="agent-s102")
    s.call(0, "echoing", [("c2", "bash", {"command": "echo hi"}, "hi")], agent=agent, model="gpt-5.4-mini",
           kind="conversation-subagent", parent="t1")  # fmt: skip
    s.call(1, "sub done", agent=agent, model="gpt-5.4-mini", kind="conversation-subagent", parent="t1")
    s.add("subagent.completed", agent, toolCallId="t1", agentName="general-purpose", model="gpt-5.4-mini",
          totalToolCalls=1, totalTokens=2000, durationMs=300)  # fmt: skip
    s.events.extend(main_end)
    s.call(1, "all done")
    records = read(s.write(tmp_path / "events.jsonl"))
    main, child = of(records, Run)
    assert child.parent_run_id == main.run_id and child.run_id == f"{main.run_id}/subagent-1"
    assert (main.model, child.model) == ("claude-sonnet-4.6", "gpt-5.4-mini")
    assert child.metadata["agent_id"] == agent and child.metadata["subagent"]["toolCallId"] == "t1"
    assert child.metadata["copilot_version"] == "1.0.102"  # fidelity names the version for it too
    by_run: dict[str, list] = {main.run_id: [], child.run_id: []}
    for r in records:
        if isinstance(r, Item | Request):
            by_run[r.run_id].append(r)
    main_items = [r for r in by_run[main.run_id] if isinstance(r, Item)]
    child_items = [r for r in by_run[child.run_id] if isinstance(r, Item)]
    assert [i.kind for i in main_items] == [
        "system", "user_text", "assistant_text", "tool_call", "tool_result", "assistant_text"]  # fmt: skip
    assert [i.text for i in main_items if i.kind == "system"] == [SYSTEM]
    assert [i.kind for i in child_items][:2] == ["system", "user_text"]
    assert child_items[1].text.endswith("run echo")
    assert sum(isinstance(r, Request) for r in by_run[main.run_id]) == 2
    assert sum(isinstance(r, Request) for r in by_run[child.run_id]) == 2


COMPLETE = {
    "success": True,
    "outcome": "applied",
    "compactionAttemptId": "a1",
    "preCompactionMessagesLength": 10,
    "messagesRemoved": 6,
    "summaryContent": "<overview>Counted lines.</overview>",
    "activeWorkflowSummary": "Workflow: counting.",
    "behaviorModelId": "claude-sonnet-4.6",
    "tokenLimit": 168_000,
    "trigger": "threshold",
    "preCompactionTokens": 160_500,
    "postCompactionTokens": 24_000,
    "tokensRemoved": 136_500,
    "tokenAccountingBasis": "local_full_context_estimate",
    "systemTokens": 4600,
    "conversationTokens": 4400,
    "toolDefinitionsTokens": 15_000,
    "compactionTokensUsed": {
        "requestCount": 1,
        "modelDisplayName": "Claude Sonnet 4.6",
        "inputTokens": 140_000,
        "outputTokens": 900,
        "cacheReadTokens": 120_000,
        "cacheWriteTokens": 4_000,
        "duration": 30_000,
        "model": "claude-sonnet-4.6",
    },
}


def compaction_session(wait: bool) -> Session:
    """A background compaction that starts before the fourth call and completes after the fifth turn started: that
    call began after the summary came (the CLI waited for it, past 0.95 of the window) or was already in flight
    (it then goes to the sixth)."""
    s = Session()
    s.prompt("count the lines")
    for turn in range(4):
        if turn == 3:
            s.add("session.compaction_start", compactionAttemptId="a1", model="claude-sonnet-4.6",
                  systemTokens=4600, conversationTokens=120_000, toolDefinitionsTokens=15_000,
                  currentTokens=139_600, tokenLimit=168_000, trigger="threshold")  # fmt: skip
        s.call(turn, f"step {turn}", [(f"c{turn}", "bash", {"command": "seq 1 9999"}, "1\n2\n" * 30)])
    start = s.clock + 1
    s.add("assistant.turn_start", at=start, turnId="4", interactionId="i1")
    done = start + 5
    s.add("session.compaction_complete", at=done, **COMPLETE)
    began, duration = (done + 0.05, 2000) if wait else (start + 1, 6000)
    s.add("session.usage_record", at=began + duration / 1000, usage={
        "model": "claude-sonnet-4.6", "inputTokens": 24_500 if wait else 161_000, "outputTokens": 30,
        "cacheReadTokens": 0, "cacheWriteTokens": 0, "duration": duration, "interactionType": "conversation-agent",
        "apiCallId": "chatcmpl-5", "maxPromptTokens": 168_000})  # fmt: skip
    s.add("assistant.message", messageId="m5", model="claude-sonnet-4.6", content="counted", apiCallId="chatcmpl-5",
          turnId="4")  # fmt: skip
    s.add("assistant.turn_end", turnId="4")
    s.call(5, "all counted")
    return s


def test_compaction_in_1_0_102_layout(tmp_path: Path) -> None:
    """The summariser's usage in the call-usage shape, the logged trigger, the window, the summary message (the
    user's own words, the summary, the active-workflow reminder); the drop never takes the system message the CLI
    logged after the first user message; the call that waited for the summary is the event's request."""
    records = read(compaction_session(wait=True).write(tmp_path / "events.jsonl"))
    assert not of(records, BadRecord)
    (run,) = of(records, Run)
    (event,) = run.metadata["context_events"]
    items = of(records, Item)
    summary = next(i for i in items if i.kind == "summary")
    assert items[0].kind == "system" and event["drop"] == [[1, 11]] and items[11].text == "step 3"
    assert event["usage"] == {
        "input": 16_000, "cache_read": 120_000, "cache_write": 4_000, "output": 900, "prompt": 140_000,
        "requests": 1}  # fmt: skip
    assert event["summariser_model"] == "claude-sonnet-4.6"
    assert (event["trigger"], event["trigger_logged"], event["token_limit"]) == ("auto", "threshold", 168_000)
    assert summary.text == "count the lines\n\n<overview>Counted lines.</overview>\n\nWorkflow: counting."
    assert event["step"] == summary.step == 4 and event["summary_seq"] == summary.seq
    assert event["after_tokens"] == 24_000 and event["pre_tokens"] == 160_500


def test_compaction_during_a_call_in_flight_is_at_the_next_request(tmp_path: Path) -> None:
    records = read(compaction_session(wait=False).write(tmp_path / "events.jsonl"))
    (run,) = of(records, Run)
    (event,) = run.metadata["context_events"]
    summary = next(i for i in of(records, Item) if i.kind == "summary")
    assert event["step"] == summary.step == 5 and len(of(records, Request)) == 6


def test_model_facing_events_are_items(tmp_path: Path) -> None:
    """Skill text delivered by reference (prefix + the earlier skill content with that sha256 + suffix), a system
    notification and a mode notice are user-role messages the model gets; a tool the user ran is not sent."""
    s = Session()
    s.prompt("count down")
    s.call(0, "loading", [("c1", "skill", {"skill": "countdown"}, 'Skill "countdown" loaded successfully.')])
    body = "# Countdown\n\nRun seq 10 -1 1.\n"
    digest = hashlib.sha256(body.encode()).hexdigest()
    turn_end = s.events.pop()
    s.add("skill.invoked", name="countdown", path="/h/skills/countdown/SKILL.md", content=body, allowedTools=[],
          source="personal-copilot", trigger="agent-invoked", model="claude-sonnet-4.6", invokedAtTurn=3)  # fmt: skip
    s.add("skill.context_delivered_ref", interactionId="i1", source="skill-countdown", contentId=f"sha256:{digest}",
          prefix='<skill-context name="countdown">\n', suffix="\n</skill-context>")  # fmt: skip
    s.events.append(turn_end)
    s.add("system.notification", content="<system_notification>Shell 3 finished</system_notification>",
          kind={"type": "shell_completed", "shellId": "3"})  # fmt: skip
    s.add("session.mode_notice_delivered", mode="plan", content="Plan mode is on.")
    s.add("tool.user_requested", toolCallId="u1", toolName="bash", arguments={"command": "ls"})
    s.add("tool.execution_start", toolCallId="u1", toolName="bash", arguments={"command": "ls"})
    s.add("tool.execution_complete", toolCallId="u1", success=True, isUserRequested=True, result={"content": "a.py"})
    s.call(1, "counting")
    records = read(s.write(tmp_path / "events.jsonl"))
    items = of(records, Item)
    extra = [(i.kind, i.role, i.tool_name, i.text, i.step) for i in items if i.kind == "attachment"]
    assert extra == [
        ("attachment", "user", "skill.context_delivered",
         f'<skill-context name="countdown">\n{body}\n</skill-context>', 1),
        ("attachment", "user", "system.notification",
         "<system_notification>Shell 3 finished</system_notification>", 1),
        ("attachment", "user", "session.mode_notice_delivered", "Plan mode is on.", 1),
    ]  # fmt: skip
    assert not [i for i in items if i.call_id == "u1"] and len(of(records, Request)) == 2


def test_unresolved_skill_reference_warns(tmp_path: Path) -> None:
    s = Session()
    s.prompt("count down")
    s.add("skill.context_delivered_ref", contentId="sha256:" + "0" * 64, prefix="<s>", suffix="</s>")
    s.call(0, "ok")
    records = read(s.write(tmp_path / "events.jsonl"))
    (run,) = of(records, Run)
    (warning,) = run.metadata["warnings"]
    assert warning["line"] == 4 and "no earlier skill event" in warning["message"]


def test_cleared_context_is_a_manual_compaction_without_summary(tmp_path: Path) -> None:
    s = Session()
    s.prompt("first task")
    s.call(0, "first done")
    s.add("session.context_cleared", messagesCleared=2)
    s.prompt("second task")
    s.call(1, "second done")
    records = read(s.write(tmp_path / "events.jsonl"))
    (run,) = of(records, Run)
    (event,) = run.metadata["context_events"]
    assert (event["step"], event["drop"], event["trigger"], event["summary_seq"]) == (1, [[1, 3]], "manual", None)


def test_fidelity_takes_the_window_the_log_records() -> None:
    """1.0.102 logs each call's ``maxPromptTokens``: the preset's window is that, not the 1.0.34 table's; the
    version is the log's ``copilotVersion``."""
    preset = harness_preset("copilot-cli", {"prompt_limit": 64_000}, "gpt-5.2")
    assert preset is not None and preset[1].window == 64_000
    table = harness_preset("copilot-cli", {}, "gpt-5.2")
    assert table is not None and table[1].window == 272_000
    assert harness_version({"copilot_version": "1.0.102"}) == "1.0.102"


def test_a_changed_system_message_replaces_the_old_one(tmp_path: Path) -> None:
    """1.0.102 re-renders its system message with the next user message (after a compaction it lists the saved
    checkpoints): the CLI sends the new one instead of the old, so the old item leaves every later prompt."""
    from replay.tokens.usage_metadata import rollback_drops

    s = Session()
    s.prompt("first task")
    s.call(0, "first done")
    s.prompt("second task")  # the same system text: nothing added
    s.call(1, "second done")
    s.prompt("third task", system=SYSTEM + "\n- checkpoints/: 1 prior checkpoints")
    s.call(2, "third done")
    records = read(s.write(tmp_path / "events.jsonl"))
    (run,) = of(records, Run)
    systems = [i for i in of(records, Item) if i.kind == "system"]
    assert [(i.seq, i.step) for i in systems] == [(0, 0), (5, 2)]
    assert run.metadata["rollbacks"] == [{"step": 2, "line": 15, "drop": [[0, 1]], "replaced": "system.message"}]
    ((step, seqs),) = rollback_drops(run.metadata)  # the simulator's reading: gone from request 2, any policy
    assert step == 2 and seqs.tolist() == [0]


def test_attachment_content_is_noted_as_unlogged(tmp_path: Path) -> None:
    """A user message's attached files reach the model read from disk, not from the log: after the first request
    that is content the prompt model must be told about (``unlogged``, a boundary the fit may add to)."""
    s = Session()
    s.prompt("first")
    s.call(0, "ok")
    s.prompt("look at this", attachments=[{"type": "file", "path": "/w/a.py", "displayName": "a.py"}])
    s.call(1, "seen")
    records = read(s.write(tmp_path / "events.jsonl"))
    (run,) = of(records, Run)
    assert run.metadata["unlogged"] == [{"step": 1, "line": 8, "reason": "attachments", "types": ["file"]}]


def test_a_developer_message_is_sent_beside_the_system_message(tmp_path: Path) -> None:
    """The CLI replaces a system context message by role and name: a developer message is another one."""
    s = Session()
    s.prompt("first")
    s.call(0, "ok")
    s.add("system.message", role="developer", content="Follow the repository's conventions.")
    s.call(1, "ok again")
    records = read(s.write(tmp_path / "events.jsonl"))
    (run,) = of(records, Run)
    assert [i.text for i in of(records, Item) if i.kind == "system"][1] == "Follow the repository's conventions."
    assert "rollbacks" not in run.metadata


def test_truncation_is_said_with_its_request(tmp_path: Path) -> None:
    """``session.truncation`` (1.0.102 writes it after the turn starts, before the call) names the request whose prompt
    the CLI cut; the reader cannot tell which messages went, and says so."""
    s = Session()
    s.prompt("go")
    s.call(0, "ok")
    turn_start = len(s.events)
    s.call(1, "again")
    cut = {"tokenLimit": 24_000, "preTruncationTokensInMessages": 24_632, "preTruncationMessagesLength": 12,
           "postTruncationTokensInMessages": 21_059, "postTruncationMessagesLength": 8,
           "tokensRemovedDuringTruncation": 3_573, "messagesRemovedDuringTruncation": 4,
           "performedBy": "BasicTruncator"}  # fmt: skip
    s.events.insert(turn_start + 1, {**s.events[turn_start], "type": "session.truncation", "data": cut})
    records = read(s.write(tmp_path / "events.jsonl"))
    (run,) = of(records, Run)
    (cut,) = run.metadata["truncations"]
    assert (cut["step"], cut["line"], cut["messagesRemovedDuringTruncation"]) == (1, 9, 4)
    (warning,) = run.metadata["warnings"]
    assert warning["line"] == 9 and "cut 4 message(s) from request 1's prompt" in warning["message"]


def test_a_truncation_pass_that_removed_nothing_is_not_warned_of(tmp_path: Path) -> None:
    """The CLI of 2025-12 logs a truncation pass before every request of a resumed session, most removing nothing
    (0 messages, 0 tokens: a real log's three passes read as three false warnings on main)."""
    s = Session()
    s.prompt("go")
    s.call(0, "ok")
    turn_start = len(s.events)
    s.call(1, "again")
    kept = {"tokenLimit": 128_000, "preTruncationTokensInMessages": 20_856, "preTruncationMessagesLength": 21,
            "postTruncationTokensInMessages": 20_856, "postTruncationMessagesLength": 21,
            "tokensRemovedDuringTruncation": 0, "messagesRemovedDuringTruncation": 0,
            "performedBy": "BasicTruncator"}  # fmt: skip
    s.events.insert(turn_start + 1, {**s.events[turn_start], "type": "session.truncation", "data": kept})
    (run,) = of(read(s.write(tmp_path / "events.jsonl")), Run)
    assert run.metadata["truncations"][0]["preTruncationTokensInMessages"] == 20_856  # the CLI's count, kept
    assert "warnings" not in run.metadata


def test_a_compaction_the_threshold_did_not_cause_is_not_scored(tmp_path: Path) -> None:
    """1.0.102 logs why it compacted: one made for a switch to a smaller window is no threshold preset's to
    reproduce; fidelity replays it as recorded and says why."""
    from replay.ingest import ingest
    from replay.simulator.fidelity import fidelity_frame
    from replay.store import open_store

    s = compaction_session(wait=True)
    for ev in s.events:
        if ev["type"].startswith("session.compaction_"):
            ev["data"]["trigger"] = "model_switch"
    con = open_store(tmp_path / "f.duckdb")
    ingest(con, [s.write(tmp_path / "events.jsonl")])
    (row,) = fidelity_frame(con, None).filter(kind="compaction").to_dicts()
    assert row["preset"] == "copilot-cli@168000" and row["harness_version"] == "1.0.102"
    assert row["reason"] == "model_switch, not the threshold: replayed as recorded" and row["within"] is None


def test_a_side_call_is_billed_at_its_own_model(tmp_path: Path) -> None:
    """A call beside the conversation (an MCP sampling call) is no request, but the provider bills it: `replay runs`
    carries it as a ``side`` row at its own model, priced as genai-prices prices its counts."""
    s = Session()
    s.prompt("fix the tests")
    s.call(0, "reading", usage={"inputTokens": 2_000, "outputTokens": 10, "cacheReadTokens": 0,
                                "cacheWriteTokens": 0})  # fmt: skip
    sampling = {"model": "gpt-5-mini", "inputTokens": 5_000, "outputTokens": 200, "cacheReadTokens": 1_000}
    s.add("session.usage_record", usage={**sampling, "interactionType": "conversation-sampling"})
    path = s.write(tmp_path / "events.jsonl")
    con = open_store(tmp_path / "s.duckdb")
    ingest(con, [path])
    bill = request_bill(con)
    rows = bill.filter(pl.col("call") == "side")
    assert rows.height == 1 and rows["model"][0] == "gpt-5-mini"
    want = calc_price(
        Usage(input_tokens=5_000, cache_read_tokens=1_000, output_tokens=200), "gpt-5-mini", provider_id="openai"
    )
    assert rows["cost_usd"][0] == pytest.approx(float(want.total_price))
    assert runs_bill(bill)["server_calls"].to_list() == [1]
