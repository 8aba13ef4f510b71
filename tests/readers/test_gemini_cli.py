"""Gemini CLI reader: the JSON object and the >=0.40 JSONL (last copy wins, $set, $rewindTo), per-message usage."""

from __future__ import annotations

import json
from pathlib import Path

from replay.model import BadRecord, Item, Request, Run
from replay.readers import detect
from replay.readers.base import ReadContext
from replay.readers.gemini_cli import READER

GEMINI = "gemini-cli"


def read(path: Path) -> list:
    return list(READER.read(ReadContext(path=path, file_hash="0" * 32)))


def of(records: list, cls: type) -> list:
    return [r for r in records if isinstance(r, cls)]


def test_json_object_session(corpus: Path) -> None:
    path = corpus / GEMINI / "gemini-vct-readme-update-20260327.json"
    assert detect(path) is READER
    records = read(path)
    assert not of(records, BadRecord)
    reqs = of(records, Request)
    assert len(reqs) == 3 and of(records, Run)[0].model == "gemini-3.1-pro-preview-customtools"
    assert (reqs[0].prompt_tokens, reqs[0].cache_read, reqs[0].input_tokens, reqs[0].output_tokens) == (
        11894,
        7900,
        11894 - 7900,
        68 + 344,
    )  # input includes cached; output counts thoughts as billed
    items = of(records, Item)
    calls = [i for i in items if i.kind == "tool_call"]
    assert [(c.tool_name, c.access) for c in calls] == [("read_file", "read")] * 3 + [("write_file", "write")] * 4
    results = {i.call_id: i for i in items if i.kind == "tool_result"}
    assert set(results) == {c.call_id for c in calls} and all(results[c.call_id].step == c.step for c in calls)
    assert "Vibe Coding Tracker" in results[calls[0].call_id].text
    assert items[0].kind == "user_text" and items[1].kind == "reasoning" and items[1].step == 1


def test_jsonl_last_copy_wins(corpus: Path) -> None:
    path = corpus / GEMINI / "gemini-vct-init-v040-20260423.jsonl"
    assert detect(path) is READER
    records = read(path)
    reqs = of(records, Request)
    assert [q.model for q in reqs] == ["gemini-3-flash-preview"] * 5 + ["gemini-3.1-pro-preview"]
    calls = [i for i in of(records, Item) if i.kind == "tool_call"]
    assert len(calls) == 12 and calls[0].line == 8  # the copy with the finished calls, not line 6
    (run,) = of(records, Run)
    assert run.metadata["lastUpdated"] == "2026-04-23T12:58:35.591Z"  # the last $set patch
    assert [n["text"] for n in run.metadata["notes"]][-1] == "Request cancelled."
    user = [i for i in of(records, Item) if i.kind == "user_text"]
    assert "/init" not in user[0].text and "analyze" in user[0].text  # content sent, not displayContent


def test_rewind_and_bad_lines(tmp_path: Path) -> None:
    meta = {"sessionId": "s", "projectHash": "p", "startTime": "t0"}

    def msg(mid: str, kind: str, **kw) -> str:
        return json.dumps({"id": mid, "timestamp": "t", "type": kind, "content": kw.pop("content", mid), **kw})

    tokens = {"input": 10, "output": 1, "cached": 4, "thoughts": 0}
    lines = [
        json.dumps(meta),
        msg("u1", "user"),
        msg("g1", "gemini", tokens=tokens),
        msg("u2", "user"),
        msg("g2", "gemini", tokens=tokens),
        "{broken",
        json.dumps({"$rewindTo": "u2"}),
        msg("u3", "user"),
        msg("g3", "gemini", tokens=tokens),
    ]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(lines) + "\n")
    records = read(path)
    assert [b.line for b in of(records, BadRecord)] == [6]
    assert [i.text for i in of(records, Item) if i.kind == "user_text"] == ["u1", "u3"]
    assert len(of(records, Request)) == 2


def rewritten_session(tmp_path: Path, summary: str, note: dict | None = None) -> Path:
    """A JSONL session of two requests whose history a ``$set`` rewrites to a summary, its acknowledgement and the
    second exchange (then ``note``, if given), and a third request."""

    def msg(mid: str, kind: str, text: str, **kw) -> dict:
        return {"id": mid, "timestamp": "t", "type": kind, "content": [{"text": text}], **kw}

    tokens = {"input": 10, "output": 1, "cached": 0, "thoughts": 0}
    old = [
        msg("u1", "user", "task"),
        msg("g1", "gemini", "step 1", tokens=tokens),
        msg("u2", "user", "more"),
        msg("g2", "gemini", "step 2", tokens=tokens),
    ]
    rewrite = {"$set": {"messages": [msg("s1", "user", summary), msg("s2", "gemini", "Got it."), old[2], old[3]]}}
    lines = [
        {"sessionId": "s", "projectHash": "p"},
        *old,
        rewrite,
        *([note] if note else []),
        msg("u3", "user", "next"),
        msg("g3", "gemini", "step 3", tokens=tokens),
    ]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


def test_history_rewrite_is_a_recorded_compaction(tmp_path: Path) -> None:
    records = read(rewritten_session(tmp_path, "<state_snapshot>did steps 1 and 2</state_snapshot>"))
    items = of(records, Item)
    (event,) = of(records, Run)[0].metadata["context_events"]
    by_text = {i.text: i for i in items}
    assert event["kind"] == "compaction" and event["step"] == 2 and event["line"] == 6
    assert event["drop"] == [[by_text["task"].seq, by_text["step 1"].seq + 1]]
    assert by_text["<state_snapshot>did steps 1 and 2</state_snapshot>"].kind == "summary"
    assert event["summary_seq"] == by_text["<state_snapshot>did steps 1 and 2</state_snapshot>"].seq
    assert by_text["Got it."].kind == "assistant_text" and len(of(records, Request)) == 3  # no request for the ack
    assert [i.text for i in items if i.kind == "user_text"] == ["task", "more", "next"]


def test_compression_note_is_a_compaction_at_the_next_request(tmp_path: Path) -> None:
    """Before 0.44 chat compression leaves only an ``info`` note; the event drops what the compression service's
    split summarised (the oldest 70% of the characters, up to a user message) from the next request on."""
    from readers.gemini_fixture import PREFIX, write_json, write_jsonl

    for write in (write_json, write_jsonl):
        path, prompts, facts = write(tmp_path / f"session-{write.__name__}.json{'l' * (write is write_jsonl)}")
        records = read(path)
        (run,) = of(records, Run)
        (event,) = run.metadata["context_events"]
        users = [i for i in of(records, Item) if i.kind == "user_text"]
        kept = next(u for u in users if u.step == facts["kept_from_request"])
        assert event["kind"] == "compaction" and event["step"] == facts["compressed_at"]
        assert event["drop"] == [[0, kept.seq]] and event["summary_seq"] is None
        assert event["pre_tokens"] == prompts[facts["compressed_at"] - 1] > PREFIX  # the CLI's originalTokenCount
        assert (event["pct_before"], event["pct_after"]) == (2, 1)


def test_compression_note_after_a_history_rewrite_adds_nothing(tmp_path: Path) -> None:
    """0.44 on writes the compressed history as a ``$set`` and then the note: one event."""
    note = {"id": "n1", "timestamp": "t", "type": "info", "content": "Context compressed from 61% to 4%."}
    path = rewritten_session(tmp_path, "<state_snapshot>1 and 2</state_snapshot>", note)
    (event,) = of(read(path), Run)[0].metadata["context_events"]
    assert event["line"] == 6 and event["note_line"] == 7 and event["summary_seq"] is not None


def test_calibrate_splits_the_fit_at_the_compression(tmp_path: Path) -> None:
    """The recorded prompt falls at the compression; read as an event it splits the fit instead of pulling the
    token scale down (0.41 on this session when the note was ignored)."""
    from readers.gemini_fixture import write_jsonl

    from replay.ingest import ingest
    from replay.store import open_store
    from replay.tokens.calibrate import fit_usage
    from replay.tokens.template import DEFAULT_OVERHEAD

    path, prompts, facts = write_jsonl(tmp_path / "session-c.jsonl")
    con = open_store(tmp_path / "store.duckdb")
    ingest(con, [path])
    _, runs, _ = fit_usage(con, None, DEFAULT_OVERHEAD)
    (row,) = runs.to_dicts()
    assert 0.95 < row["scale"] < 1.05 and row["median_err"] < 0.01
    assert row["boundaries"] == f"{facts['compressed_at']}:compaction"


def test_compression_cuts_old_large_function_responses(tmp_path: Path) -> None:
    """Past the newest 50,000 estimated tokens of function responses, a response over 40,000 characters is cut to
    its first 8,000 and last 32,000 (truncateHistoryToBudget): the kept original goes, its cut copy is re-sent."""
    from tests.readers.gemini_fixture import message as msg
    from tests.readers.gemini_fixture import read_call

    tokens = {"input": 1000, "output": 10, "cached": 0, "thoughts": 0}
    lines = [
        {"sessionId": "s", "projectHash": "p", "startTime": "2026-04-01T00:00:00.000Z"},
        msg("u0", "user", [{"text": "look around"}]),
        msg("g0", "gemini", "", toolCalls=[read_call("a", 800)], tokens=tokens, model="gemini-2.5-pro"),
        msg("u1", "user", [{"text": "now the big files"}]),
        msg("g1", "gemini", "", toolCalls=[read_call("b", 120_000)], tokens=tokens, model="gemini-2.5-pro"),
        msg("g2", "gemini", "", toolCalls=[read_call("c", 120_000)], tokens=tokens, model="gemini-2.5-pro"),
        msg("n", "info", "Context compressed from 51% to 9%."),
        msg("g3", "gemini", "done", tokens=tokens, model="gemini-2.5-pro"),
    ]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    records = read(path)
    (event,) = of(records, Run)[0].metadata["context_events"]
    items = of(records, Item)
    results = {i.call_id: i for i in items if i.kind == "tool_result" and i.call_id}
    u1 = next(i for i in items if i.text == "now the big files")
    # kept from the last user message (no split after the 70% mark); b's response is cut, c's (newest) stays
    assert event["drop"] == [[0, u1.seq], [results["b"].seq, results["b"].seq + 1]]
    ((lo, hi),) = event["resent"]
    (copy,) = [i for i in items if lo <= i.seq < hi]
    assert copy.kind == "tool_result" and copy.step == event["step"] == 3
    assert abs(len(copy.text) - 40_000) < 100 and copy.text[:100] == results["b"].text[:100]
    assert copy.text.endswith(results["b"].text[-1000:])


def test_empty_info_note_is_a_manual_compression_when_the_prompt_falls(tmp_path: Path) -> None:
    """``/compress`` records its result item as an ``info`` message without text (useHistoryManager, 0.18 on): a
    manual compression, split as the automatic one, when the next recorded prompt is below the last; an empty note
    the prompt does not follow down (nothing to compress) is no event."""
    from readers.gemini_fixture import write_jsonl

    path, prompts, facts = write_jsonl(tmp_path / "session-auto.jsonl")
    (auto,) = of(read(path), Run)[0].metadata["context_events"]
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    for rec in lines:
        if rec.get("type") == "info":
            rec["content"] = ""
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    (event,) = of(read(path), Run)[0].metadata["context_events"]
    assert event["trigger"] == "manual" and event["drop"] == auto["drop"] and event["step"] == auto["step"]
    at = facts["compressed_at"]
    for rec in lines:  # the request after the note as large as the one before: /compress had nothing to do
        if rec.get("type") == "gemini" and rec["tokens"]["input"] == prompts[at]:
            rec["tokens"]["input"] = prompts[at - 1] + 50
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    assert "context_events" not in of(read(path), Run)[0].metadata
