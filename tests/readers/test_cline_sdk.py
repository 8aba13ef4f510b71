"""Cline 4.x (SDK) sessions: the session folder, per-request metrics, the compaction sidecar, 4.0.x in-place
compaction and damaged input. The fixture follows the writer's schema (cline/cline 21cb8d2525, sdk/packages/core)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from replay.ingest import ingest
from replay.model import BadRecord, Item, Request, Run
from replay.readers import detect
from replay.readers.base import ReadContext
from replay.readers.cline_sdk import READER
from replay.simulator.fidelity import harness_version
from replay.store import open_store
from tests.readers.cline_sdk_session import session

FIXTURE = Path(__file__).parent / "fixtures" / "cline-sdk" / "1785000000000_ab1cd"
SID = FIXTURE.name


def read(path: Path) -> list:
    return list(READER.read(ReadContext(path=path, file_hash="0" * 32)))


def of(records: list, cls: type) -> list:
    return [r for r in records if isinstance(r, cls)]


def lead(records: list) -> tuple[Run, list[Item], list[Request]]:
    run = of(records, Run)[0]
    items = [i for i in of(records, Item) if i.run_id == run.run_id]
    return run, items, [q for q in of(records, Request) if q.run_id == run.run_id]


def prompt_at(run: Run, items: list[Item], step: int) -> list[Item]:
    """The items the recorded policy sends at ``step``: logged by then, minus the drops of events before it."""
    gone = {
        s
        for e in run.metadata.get("context_events", [])
        if e["step"] <= step
        for lo, hi in e["drop"]
        for s in range(lo, hi)
    }
    return [i for i in items if i.step <= step and i.seq not in gone]


def copy_session(tmp_path: Path) -> Path:
    folder = tmp_path / SID
    shutil.copytree(FIXTURE, folder)
    return folder


def edit(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc, indent=2))


def test_detects_the_folder_and_its_files() -> None:
    assert detect(FIXTURE) is READER
    assert detect(FIXTURE / f"{SID}.messages.json") is READER
    assert detect(FIXTURE / "explorer.messages.json") is READER
    assert detect(FIXTURE / f"{SID}.compaction.json") is READER  # claimed, so no other reader misreads it
    assert READER.members(FIXTURE) == sorted(FIXTURE.iterdir())
    assert READER.members(FIXTURE.parent) is None


def test_takes_no_corpus_file_from_another_reader(corpus: Path) -> None:
    for path in sorted(p for d in corpus.iterdir() if d.is_dir() for p in d.iterdir()):
        found = detect(path)
        assert found is None or found.format != "cline-sdk", path


def test_requests_carry_each_calls_metrics() -> None:
    records = read(FIXTURE)
    assert not of(records, BadRecord)
    run, items, reqs = lead(records)
    assert (run.format, run.harness, run.model, run.started_at) == (
        "cline-sdk",
        "cline",
        "claude-sonnet-4-6",
        "2026-08-20T10:00:00.000Z",
    )
    assert run.metadata["cline_version"] == "4.1.13" and run.metadata["source"] == "vscode"
    assert harness_version(run.metadata) == "4.1.13"  # what fidelity names
    assert [q.prompt_tokens for q in reqs] == [12000, 12600, 12900, 3100, 3200]  # inputTokens: the whole input
    assert [(q.cache_read, q.cache_write, q.input_tokens) for q in reqs[:2]] == [(0, 11990, 10), (11990, 600, 10)]
    assert [q.output_tokens for q in reqs] == [150, 220, 40, 60, 30]
    assert run.metadata["recorded_cost"] == pytest.approx(0.047 + 0.0094 + 0.0054 + 0.0125 + 0.0018)
    assert reqs[0].ts == "2026-08-20T10:00:04Z" and reqs[0].line == 1


def test_items_calls_and_results() -> None:
    run, items, _ = lead(read(FIXTURE))
    assert items[0].kind == "system" and items[0].text.startswith("You are Cline")
    assert [i.kind for i in items[1:5]] == ["user_text", "reasoning", "tool_call", "tool_result"]
    read_result = items[4]
    assert read_result.call_id == "toolu_01" and read_result.tool_name == "read_files"
    assert json.loads(read_result.text)[0]["success"] is True  # structured output is sent as JSON
    edit_call = next(i for i in items if i.tool_name == "editor" and i.kind == "tool_call")
    assert (edit_call.resource, edit_call.access) == ("/home/u/proj/parser.py", "write")
    edit_result = next(i for i in items if i.kind == "tool_result" and i.call_id == edit_call.call_id)
    assert edit_result.step == 2 and edit_result.text.startswith("Edited /home/u/proj/parser.py")


def test_compaction_sidecar_is_a_recorded_event() -> None:
    run, items, reqs = lead(read(FIXTURE))
    (event,) = run.metadata["context_events"]
    assert (event["kind"], event["step"], event["strategy"], event["source_message_count"]) == (
        "compaction",
        3,
        "agentic",
        7,
    )
    assert event["trigger"] is None and event["pre_tokens"] is None and event["tokens_before_estimate"] == 13150
    summary = next(i for i in items if i.seq == event["summary_seq"])
    assert summary.kind == "summary" and summary.text.startswith("Context summary:")
    sent = prompt_at(run, items, 3)  # what Cline sends once compacted: the sidecar's messages, then the tail
    assert [i.kind for i in sent] == ["system", "summary", "assistant_text", "user_text"]
    assert sent[2].text.startswith("Fixed:") and "Now run the tests" in sent[3].text
    assert [[lo, hi] for lo, hi in event["resent"]] == [[sent[2].seq, sent[3].seq + 1]]
    before = prompt_at(run, items, 2)
    assert [i.kind for i in before][:3] == ["system", "user_text", "reasoning"] and len(before) == 8
    later = prompt_at(run, items, 4)
    assert [i.kind for i in later[4:]] == ["tool_call", "tool_result"]
    assert reqs[3].prompt_tokens < reqs[2].prompt_tokens  # the usage agrees: the prompt fell there


def test_sidecar_rewritten_on_restart_keeps_the_compactions_place(tmp_path: Path) -> None:
    """The CLI restarting a session rewrites the sidecar over every message so far (the compacted view plus the
    transcript since, copied): the summary's generatedAt still places the compaction before message 7."""
    folder = copy_session(tmp_path)
    transcript = json.loads((folder / f"{SID}.messages.json").read_text())["messages"]

    def restart(doc: dict) -> None:
        doc["messages"] += [dict(m, id=f"re_{m['id']}") for m in transcript[7:10]]  # ids minted again
        doc["source_message_count"] = 10

    edit(folder / f"{SID}.compaction.json", restart)
    run, items, _ = lead(read(folder))
    (event,) = run.metadata["context_events"]
    assert (event["step"], event["line"], event["source_message_count"]) == (3, 7, 10)
    assert [i.kind for i in prompt_at(run, items, 4)] == [
        *["system", "summary", "assistant_text", "user_text"],
        *["tool_call", "tool_result"],  # read once, from the transcript
    ]

    def diverge(doc: dict) -> None:
        doc["messages"][-1]["content"] = [{"type": "text", "text": "something else"}]

    edit(folder / f"{SID}.compaction.json", diverge)  # not the transcript's tail: only the count places it
    run, _, _ = lead(read(folder))
    (event,) = run.metadata["context_events"]
    assert (event["step"], event["line"]) == (5, 10)


def test_subagent_is_a_child_run() -> None:
    records = read(FIXTURE)
    lead_run, sub = of(records, Run)
    assert sub.parent_run_id == lead_run.run_id and sub.run_id.endswith("/explorer")
    assert sub.metadata["agent"] == "subagent" and sub.model == "claude-haiku-4-5"
    (req,) = [q for q in of(records, Request) if q.run_id == sub.run_id]
    assert (req.prompt_tokens, req.output_tokens) == (900, 12)


def test_lone_messages_file_is_one_run_without_the_sidecar() -> None:
    records = read(FIXTURE / f"{SID}.messages.json")
    (run,) = of(records, Run)
    assert len(of(records, Request)) == 5 and "context_events" not in run.metadata
    assert run.started_at == "2026-08-20T10:00:00Z"  # the first message's ts when no manifest is read


def test_a_time_no_date_holds_is_handed_to_ingest(tmp_path: Path) -> None:
    """A message's ``ts`` past what a date can hold goes on as it is (ingest quarantines the field, naming the
    line), as the classic Cline reader does; a JSON true is no time at all."""
    folder = copy_session(tmp_path)
    messages = folder / f"{SID}.messages.json"
    edit(messages, lambda doc: doc["messages"][1].update(ts=1e300))
    edit(messages, lambda doc: doc["messages"][2].update(ts=True))
    stamps = [i.ts for i in of(read(folder), Item) if i.run_id == of(read(folder), Run)[0].run_id]
    assert 1e300 in stamps and True not in stamps
    con = open_store(tmp_path / "s.duckdb")
    (outcome,) = ingest(con, [folder], workers=1)
    assert outcome.status == "ingested"
    [(line, reason)] = con.execute("SELECT line, reason FROM quarantine").fetchall()
    assert line == 1 and "timestamp 1e+300" in reason and "record kept without it" in reason


def test_in_place_compaction_of_4_0(tmp_path: Path) -> None:
    """4.0.x replaced the transcript by the compacted one: a summary first, earlier requests gone."""
    doc = json.loads((FIXTURE / f"{SID}.messages.json").read_text())
    summary = {
        "id": "msg_sum",
        "role": "user",
        "content": [{"type": "text", "text": "Context summary:\n\n## Goal\nFix parse."}],
        "metadata": {"kind": "compaction_summary", "summary": "## Goal\nFix parse.", "tokensBefore": 9000},
    }
    doc["messages"] = [summary, *doc["messages"][5:]]
    path = tmp_path / f"{SID}.messages.json"
    path.write_text(json.dumps(doc, indent=2))
    records = read(path)
    run, items, reqs = lead(records)
    assert run.metadata["history_compacted"] is True and "context_events" not in run.metadata
    assert "Cline 4.0.x rewrote the transcript" in run.metadata["warnings"][0]["message"]
    assert [i.kind for i in items[:3]] == ["system", "summary", "assistant_text"] and len(reqs) == 3


def test_resumed_3x_task_history_is_not_requests(tmp_path: Path) -> None:
    """VS Code 4.x resuming a 3.x task converts its API history (no metrics) and appends its warning."""
    doc = json.loads((FIXTURE / f"{SID}.messages.json").read_text())
    legacy = [
        {"id": "l1", "role": "user", "content": [{"type": "text", "text": "<task>fix it</task>"}]},
        {"id": "l2", "role": "assistant", "content": [{"type": "text", "text": "On it."}]},
        {
            "id": "l3",
            "role": "user",
            "content": "Warning: this is a legacy conversation, which means tool names may have changed. Please "
            "use the most up-to-date tools you are aware of.",
        },
    ]
    doc["messages"] = legacy + doc["messages"]
    path = tmp_path / f"{SID}.messages.json"
    path.write_text(json.dumps(doc, indent=2))
    run, items, reqs = lead(read(path))
    assert run.metadata["legacy_messages"] == 3 and len(reqs) == 5  # the converted reply is no request
    assert [i.text for i in items[1:4]] == ["<task>fix it</task>", "On it.", legacy[2]["content"]]
    assert all(i.step == 0 for i in items[:4])  # sent with the resumed session's first request


def test_damaged_messages_file_names_the_file(tmp_path: Path) -> None:
    folder = copy_session(tmp_path)
    path = folder / f"{SID}.messages.json"
    path.write_text(path.read_text()[:900])
    records = read(folder)
    bad = [b for b in of(records, BadRecord) if f"{SID}.messages.json" in b.reason]
    assert len(bad) == 1 and "truncated" in bad[0].reason and bad[0].line > 1
    (sub,) = of(records, Run)  # the subagent's own file is still read, without a parent run
    assert sub.run_id.endswith("/explorer") and sub.parent_run_id is None


def test_bad_messages_and_usage_are_quarantined(tmp_path: Path) -> None:
    folder = copy_session(tmp_path)

    def damage(doc: dict) -> None:
        doc["messages"][1]["metrics"]["outputTokens"] = -5
        doc["messages"][3]["metrics"]["inputTokens"] = 100  # below its cache reads and writes
        doc["messages"].insert(4, "junk")

    edit(folder / f"{SID}.messages.json", damage)
    records = read(folder)
    bad = of(records, BadRecord)
    reasons = {b.line: b.reason for b in bad}
    assert "outside 0.." in reasons[1] and "not a user or assistant message" in reasons[4]
    assert "less than its cache reads and writes" in reasons[3] and f"{SID}.messages.json" in reasons[3]
    _, _, reqs = lead(records)
    assert reqs[0].output_tokens is None and reqs[0].prompt_tokens is None  # one bad count: no usage
    assert reqs[1].prompt_tokens is None and reqs[1].cache_read == 11990 and reqs[1].output_tokens == 220


def test_sidecar_that_cannot_apply_is_not_an_event(tmp_path: Path) -> None:
    folder = copy_session(tmp_path)
    edit(folder / f"{SID}.compaction.json", lambda d: d.update(source_message_count=99))
    run, _, _ = lead(read(folder))
    assert "context_events" not in run.metadata
    assert "source_message_count 99" in run.metadata["warnings"][0]["message"]
    (folder / f"{SID}.compaction.json").write_text("{ not json")
    records = read(folder)
    (bad,) = of(records, BadRecord)
    assert bad.reason.startswith(f"{SID}.compaction.json:") and "context_events" not in of(records, Run)[0].metadata


def test_lone_sidecar_is_refused_with_what_to_do() -> None:
    (bad,) = read(FIXTURE / f"{SID}.compaction.json")
    assert isinstance(bad, BadRecord) and "ingest its session folder" in bad.reason


def test_each_message_carries_the_sdks_estimate(tmp_path: Path) -> None:
    """On its first item (replay.readers.cline_sdk_estimate): every message of the transcript, and the sidecar's
    summary but not its copies of the messages kept."""
    session(tmp_path, turns=4)
    run, items, _ = lead(read(next(tmp_path.iterdir())))
    firsts = {min(i.seq for i in items if i.line == n) for n in {i.line for i in items if i.kind != "system"}}
    assert {seq for seq, _ in run.metadata["harness_estimates"]} == firsts and len(firsts) == 9  # task + 4 x 2
    run, items, _ = lead(read(FIXTURE))
    summary = next(i for i in items if i.kind == "summary")
    copies = {s for lo, hi in run.metadata["context_events"][0]["resent"] for s in range(lo, hi)}
    estimated = {seq for seq, _ in run.metadata["harness_estimates"]}
    assert summary.seq in estimated and not estimated & copies


def test_compactions_before_the_latest_are_noted(tmp_path: Path) -> None:
    """Compacted before requests 71 and 132 (tests/readers/cline_sdk_session.py); the sidecar holds the second."""
    found = session(tmp_path, turns=160)
    run, _, reqs = lead(read(next(tmp_path.iterdir())))
    assert found["requests"] == [71, 132]
    assert run.metadata["unrecorded_compactions"] == [71]
    assert reqs[71].prompt_tokens < reqs[70].prompt_tokens / 2
    assert any("request 71 with no compaction on disk" in w["message"] for w in run.metadata["warnings"])
    once = tmp_path / "once"
    session(once)
    assert "unrecorded_compactions" not in lead(read(next(once.iterdir())))[0].metadata
