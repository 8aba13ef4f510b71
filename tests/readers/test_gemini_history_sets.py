"""Gemini CLI 0.39 on: what the recording's later forms change in what the model was sent.

Records are written as ChatRecordingService writes them (google-gemini/gemini-cli, packages/core/src/services/
chatRecordingService.ts): 0.44 on records the function responses it sends as a user message, opens every
history with the environment context in a ``$set`` of ``messages`` (updateMessagesFromHistory), persists tool
output masking and compression the same way, and (0.54 on) rolls a cancelled request back with a ``$set`` that
cuts the history's tail; 0.39 to 0.43 persisted masking by appending each gemini message with tool calls again.
"""

from __future__ import annotations

import json
from pathlib import Path

from replay.model import Item, Request, Run
from replay.readers.base import ReadContext
from replay.readers.gemini_cli import READER

TOKENS = {"input": 5000, "output": 20, "cached": 0, "thoughts": 0, "tool": 0, "total": 5020}
ENV = {
    "id": "env-ctx",
    "timestamp": "2026-06-01T00:00:00.000Z",
    "type": "user",
    "content": [{"text": "<session_context>cwd /w</session_context>"}],
}
BODY = "x" * 9_000
MASKED = (
    "<tool_output_masked>\nxxx\n... [TRUNCATED] ...\nxxx\n\n"
    "Output too large. Full output available at: /t/a.txt\n</tool_output_masked>"
)


def msg(mid: str, kind: str, content, **extra) -> dict:
    return {"id": mid, "timestamp": "2026-06-01T00:00:01.000Z", "type": kind, "content": content, **extra}


def response(cid: str, output: str) -> dict:
    return {"functionResponse": {"id": cid, "name": "read_file", "response": {"output": output}}}


def call(cid: str, output: str) -> dict:
    return {
        "id": cid,
        "name": "read_file",
        "args": {"file_path": "/a"},
        "status": "success",
        "timestamp": "2026-06-01T00:00:02.000Z",
        "result": [response(cid, output)],
    }


def write(tmp_path: Path, lines: list[dict]) -> list:
    path = tmp_path / "session-2026-06-01T00-00-abcd1234.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return list(READER.read(ReadContext(path=path, file_hash="0" * 32)))


def items(records: list) -> list[Item]:
    return [r for r in records if isinstance(r, Item)]


def opening() -> list[dict]:
    """Session start (0.44 on): metadata, the environment context's ``$set``, a task whose gemini message is
    appended, then again with its finished call, then with its tokens; the function response as a user message."""
    g1 = msg("g1", "gemini", "", model="gemini-3-pro-preview", thoughts=[], tokens=None)
    return [
        {"sessionId": "s", "projectHash": "p", "startTime": "2026-06-01T00:00:00.000Z", "kind": "main"},
        {"$set": {"messages": [ENV], "lastUpdated": "2026-06-01T00:00:00.000Z"}},
        msg("u1", "user", [{"text": "read /a"}]),
        g1,
        {**g1, "toolCalls": [call("c1", BODY)]},
        {**g1, "toolCalls": [call("c1", BODY)], "tokens": TOKENS},
        msg("r1", "user", [response("c1", BODY)]),
        msg("g2", "gemini", "read it", model="gemini-3-pro-preview", tokens=TOKENS),
    ]


def test_function_response_message_is_not_sent_twice(tmp_path: Path) -> None:
    records = write(tmp_path, opening())
    its = items(records)
    assert [i.kind for i in its] == ["user_text", "user_text", "tool_call", "tool_result", "assistant_text"]
    assert its[0].text.startswith("<session_context>") and its[0].turn == 0  # no turn of its own
    assert its[1].text == "read /a" and its[1].turn == 1
    assert len([r for r in records if isinstance(r, Request)]) == 2
    assert "context_events" not in next(r for r in records if isinstance(r, Run)).metadata  # no compaction


def test_masking_set_rewrites_results_from_the_next_request(tmp_path: Path) -> None:
    """Tool output masking (0.44 on): the ``$set`` holds the same messages, the response now the masked
    snippet, in the function-response message and the gemini message's call alike: one rewrite, no event."""
    lines = opening()
    g1_masked = {**lines[5], "toolCalls": [call("c1", MASKED)]}
    lines += [
        {"$set": {"messages": [ENV, lines[2], g1_masked, msg("r1", "user", [response("c1", MASKED)]), lines[7]]}},
        msg("u2", "user", [{"text": "go on"}]),
        msg("g3", "gemini", "ok", model="gemini-3-pro-preview", tokens=TOKENS),
    ]
    records = write(tmp_path, lines)
    meta = next(r for r in records if isinstance(r, Run)).metadata
    (result,) = [i for i in items(records) if i.kind == "tool_result"]
    assert result.text == BODY  # what requests 0 and 1 were sent
    assert "context_events" not in meta
    assert meta["context_rewrites"] == [
        {"step": 2, "harness_kind": "tool output masking", "cleared": [[result.seq, len(MASKED)]], "line": 9}
    ]


def test_masking_reappended_before_044_keeps_the_first_result(tmp_path: Path) -> None:
    """0.39 to 0.43 persisted masking by appending each gemini message with tool calls again: the last copy
    holds the masked result, which the requests before it were not sent."""
    g1 = msg("g1", "gemini", "", model="gemini-2.5-pro", toolCalls=[call("c1", BODY)], tokens=TOKENS)
    lines = [
        {"sessionId": "s", "projectHash": "p", "startTime": "2026-05-01T00:00:00.000Z"},
        msg("u1", "user", [{"text": "read /a"}]),
        g1,
        msg("g2", "gemini", "read it", model="gemini-2.5-pro", tokens=TOKENS),
        msg("u2", "user", [{"text": "go on"}]),
        {**g1, "toolCalls": [call("c1", MASKED)]},
        msg("g3", "gemini", "ok", model="gemini-2.5-pro", tokens=TOKENS),
    ]
    records = write(tmp_path, lines)
    (result,) = [i for i in items(records) if i.kind == "tool_result"]
    assert result.text == BODY
    (rewrite,) = next(r for r in records if isinstance(r, Run)).metadata["context_rewrites"]
    assert (rewrite["step"], rewrite["cleared"], rewrite["line"]) == (2, [[result.seq, len(MASKED)]], 6)


def test_compression_set_keeps_the_environment_and_cuts_kept_responses(tmp_path: Path) -> None:
    """Compression (0.44 on): the new history keeps the environment context (its stable id), adds the
    snapshot and the acknowledgement, and holds kept function responses cut to the budget: one compaction
    whose summary is the snapshot, the cut responses ``cleared``."""
    lines = opening()
    cut = "head ... [cut] ... tail"
    snapshot = msg("s1", "user", [{"text": "<state_snapshot>read /a</state_snapshot>"}])
    ack = msg("s2", "gemini", [{"text": "Got it. Thanks for the additional context!"}])
    lines += [
        msg("u2", "user", [{"text": "next"}]),
        msg("g3", "gemini", "", model="gemini-3-pro-preview", toolCalls=[call("c2", BODY)], tokens=TOKENS),
        msg("r2", "user", [response("c2", BODY)]),
        msg("g4", "gemini", "done", model="gemini-3-pro-preview", tokens=TOKENS),
    ]
    kept_g3 = {**lines[9], "toolCalls": [call("c2", cut)]}
    lines += [
        {
            "$set": {
                "messages": [ENV, snapshot, ack, lines[8], kept_g3, msg("r2", "user", [response("c2", cut)]), lines[11]]
            }
        },
        msg("u3", "user", [{"text": "more"}]),
        msg("g5", "gemini", "ok", model="gemini-3-pro-preview", tokens=TOKENS),
    ]
    records = write(tmp_path, lines)
    its = items(records)
    by_text = {i.text: i for i in its}
    (event,) = next(r for r in records if isinstance(r, Run)).metadata["context_events"]
    c2 = next(i for i in its if i.kind == "tool_result" and i.call_id == "c2")
    assert event["summary_seq"] == by_text["<state_snapshot>read /a</state_snapshot>"].seq
    assert by_text["<state_snapshot>read /a</state_snapshot>"].kind == "summary"
    assert event["drop"] == [[by_text["read /a"].seq, by_text["read it"].seq + 1]]  # not the environment
    assert event["cleared"] == [[c2.seq, len(cut)]] and event["step"] == 4
    assert len([r for r in records if isinstance(r, Request)]) == 5  # no request for the acknowledgement


def test_rollback_set_is_no_compaction(tmp_path: Path) -> None:
    """0.54 on: a cancelled request rolls the history back to before its user message (``$set`` of the
    history's head; notes are never in it): that message was not sent again; no event."""
    lines = opening()
    lines += [
        msg("u2", "user", [{"text": "cancelled ask"}]),
        msg("i1", "info", "Request cancelled."),
        {"$set": {"messages": [ENV, *lines[2:3], lines[5], lines[6], lines[7]]}},
        msg("u3", "user", [{"text": "other ask"}]),
        msg("g3", "gemini", "ok", model="gemini-3-pro-preview", tokens=TOKENS),
    ]
    records = write(tmp_path, lines)
    meta = next(r for r in records if isinstance(r, Run)).metadata
    assert "context_events" not in meta
    assert [i.text for i in items(records) if i.kind == "user_text"][1:] == ["read /a", "other ask"]
    assert meta["rewound"] == {"messages": 1, "requests": 0}


def test_set_storing_the_whole_turn_as_each_result_is_no_rewrite(tmp_path: Path) -> None:
    """updateMessagesFromHistory stores the whole function-response turn as the result of a call whose result
    differs from it: each call of a parallel batch then holds both responses. Each call still sent its own."""
    both = [response("c1", "out 1"), response("c2", "out 2")]
    g1 = msg("g1", "gemini", "", model="gemini-3-pro-preview", tokens=TOKENS)
    g1 = {**g1, "toolCalls": [call("c1", "out 1"), call("c2", "out 2")]}
    stored = {**g1, "toolCalls": [{**c, "result": both} for c in g1["toolCalls"]]}
    u1, r1 = msg("u1", "user", [{"text": "read two"}]), msg("r1", "user", both)
    g2 = msg("g2", "gemini", "read them", model="gemini-3-pro-preview", tokens=TOKENS)
    lines = [
        {"sessionId": "s", "projectHash": "p"},
        {"$set": {"messages": [ENV]}},
        u1,
        g1,
        r1,
        g2,
        {"$set": {"messages": [ENV, u1, stored, r1, g2]}},
    ]
    records = write(tmp_path, lines)
    meta = next(r for r in records if isinstance(r, Run)).metadata
    assert "context_rewrites" not in meta and "context_events" not in meta
    assert [i.text for i in items(records) if i.kind == "tool_result"] == ["out 1", "out 2"]


def test_result_logged_only_masked_is_flagged(tmp_path: Path) -> None:
    """0.30 to 0.38 rewrote the whole JSON file when masking: a result's only copy is the masked snippet, which the
    requests before the masking were not sent. The run says so (a warning naming the line, a count)."""
    doc = {
        "sessionId": "s",
        "projectHash": "p",
        "startTime": "2026-03-01T00:00:00.000Z",
        "lastUpdated": "2026-03-01T00:10:00.000Z",
        "messages": [
            msg("u1", "user", [{"text": "read /a"}]),
            msg("g1", "gemini", "", model="gemini-2.5-pro", toolCalls=[call("c1", MASKED)], tokens=TOKENS),
            msg("g2", "gemini", "read it", model="gemini-2.5-pro", tokens=TOKENS),
        ],
    }
    path = tmp_path / "session-2026-03-01T00-00-abcd1234.json"
    path.write_text(json.dumps(doc, indent=2))
    meta = next(r for r in READER.read(ReadContext(path=path, file_hash="0" * 32)) if isinstance(r, Run)).metadata
    assert meta["masked_in_log"] == 1
    ((warning),) = meta["warnings"]
    assert warning["line"] == 1 and "<tool_output_masked>" in warning["message"]


def recorded_again(mid: str, kind: str, parts: list) -> list[dict]:
    """setHistory given a history without ids (getHistory's Content[]): recordSyntheticMessage appends each turn
    under a new id (no model, no tokens), then a ``$set`` of lastUpdated."""
    extra = {"thoughts": [], "tokens": None} if kind == "gemini" else {}
    return [msg(mid, kind, parts, **extra), {"$set": {"lastUpdated": "2026-06-01T00:00:09.000Z"}}]


def test_masking_through_set_history_records_the_history_again(tmp_path: Path) -> None:
    """HEAD's tryMaskToolOutputs passes getHistory() (no ids) to setHistory: the whole history is appended again
    under new ids, the masked response among it, then a ``$set`` lists those ids. No request, no turn, no event:
    the one masked result is a rewrite from the next request on."""
    lines = opening()
    call_part = {"functionCall": {"id": "c1", "name": "read_file", "args": {"file_path": "/a"}}}
    copies = [
        ("n0", "user", ENV["content"]),
        ("n1", "user", [{"text": "read /a"}]),
        ("n2", "gemini", [call_part]),
        ("n3", "user", [response("c1", MASKED)]),
        ("n4", "gemini", [{"text": "read it"}]),
    ]
    for mid, kind, parts in copies:
        lines += recorded_again(mid, kind, parts)
    lines.append({"$set": {"messages": [msg(m, k, p) for m, k, p in copies]}})
    lines += [msg("u2", "user", [{"text": "go on"}]), msg("g3", "gemini", "ok", model="gemini-3-pro", tokens=TOKENS)]
    records = write(tmp_path, lines)
    meta = next(r for r in records if isinstance(r, Run)).metadata
    its = items(records)
    (result,) = [i for i in its if i.kind == "tool_result"]
    assert len([r for r in records if isinstance(r, Request)]) == 3
    assert [i.text for i in its if i.kind == "user_text"][1:] == ["read /a", "go on"]
    assert "context_events" not in meta
    ((rewrite),) = meta["context_rewrites"]
    assert (rewrite["step"], rewrite["cleared"]) == (2, [[result.seq, len(MASKED)]])


def test_compression_set_gives_kept_messages_new_ids(tmp_path: Path) -> None:
    """HEAD's compression keeps the newest 30% as Content without ids (truncateHistoryToBudget of getHistory):
    startChat gives them new ids, so the ``$set`` drops every old message but the environment context and adds
    the snapshot, the acknowledgement and the kept messages again: those are ``resent``, their cut responses
    tool results."""
    lines = opening()
    lines += [
        msg("u2", "user", [{"text": "next"}]),
        msg("g3", "gemini", "", model="gemini-3-pro-preview", toolCalls=[call("c2", BODY)], tokens=TOKENS),
        msg("r2", "user", [response("c2", BODY)]),
        msg("g4", "gemini", "done", model="gemini-3-pro-preview", tokens=TOKENS),
    ]
    cut = "Output too large. Showing first 8,000 and last 32,000 characters. [...]"
    new = [
        ENV,
        msg("s1", "user", [{"text": "<state_snapshot>read /a</state_snapshot>"}]),
        msg("s2", "gemini", [{"text": "Got it. Thanks for the additional context!"}]),
        msg("k1", "user", [{"text": "next"}]),
        msg("k2", "gemini", [{"functionCall": {"id": "c2", "name": "read_file", "args": {"file_path": "/a"}}}]),
        msg("k3", "user", [response("c2", cut)]),
        msg("k4", "gemini", [{"text": "done"}]),
    ]
    lines += [{"$set": {"messages": new}}, msg("u3", "user", [{"text": "more"}])]
    lines.append(msg("g5", "gemini", "ok", model="gemini-3-pro-preview", tokens=TOKENS))
    records = write(tmp_path, lines)
    its = items(records)
    (event,) = next(r for r in records if isinstance(r, Run)).metadata["context_events"]
    summary = next(i for i in its if i.kind == "summary")
    dropped = {q for lo, hi in event["drop"] for q in range(lo, hi)}
    resent = {q for lo, hi in event["resent"] for q in range(lo, hi)}
    assert its[0].seq not in dropped and {i.seq for i in its if i.step < 4 and i.seq > 0} <= dropped
    assert event["summary_seq"] == summary.seq and summary.seq not in resent
    assert [i.text for i in its if i.seq in resent and i.kind == "tool_result"] == [cut]
    assert [i.kind for i in its if i.seq in resent] == [
        "assistant_text",
        "user_text",
        "tool_call",
        "tool_result",
        "assistant_text",
    ]
    assert len([r for r in records if isinstance(r, Request)]) == 5


def test_calls_recorded_after_a_cancel_note_are_the_previous_response(tmp_path: Path) -> None:
    """recordToolCalls after an ``info`` note (the user cancelled the call) writes a new gemini message holding only
    the cancelled call: that call is the previous response's, not a request without usage; a gemini message with
    only calls after a user message is a response whose usage is not written yet, a request."""
    cancelled = {**call("c1", "Request cancelled."), "status": "cancelled"}
    records = write(
        tmp_path,
        [
            {"sessionId": "s", "projectHash": "p", "startTime": "2026-06-01T00:00:00.000Z", "kind": "main"},
            msg("u1", "user", [{"text": "run gemini"}]),
            msg("g1", "gemini", "I will run it.", model="gemini-3-flash-preview", thoughts=[], tokens=TOKENS),
            msg("n1", "info", "Request cancelled."),
            msg("g2", "gemini", "", model="gemini-3-flash-preview", thoughts=[], toolCalls=[cancelled]),
            msg("u2", "user", [{"text": "never mind"}]),
            msg("g3", "gemini", "", model="gemini-3-flash-preview", thoughts=[], toolCalls=[call("c2", BODY)]),
        ],
    )
    requests = [r for r in records if isinstance(r, Request)]
    assert [r.prompt_tokens for r in requests] == [5000, None]  # g1, then g3 (usage not written yet)
    calls = [i for i in items(records) if i.kind == "tool_call"]
    assert [(c.call_id, c.step) for c in calls] == [("c1", 1), ("c2", 2)]  # g1's call is seen by g3's request
