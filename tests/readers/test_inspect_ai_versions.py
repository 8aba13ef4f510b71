"""inspect_ai logs as its newest writer (0.3.285) gives them: pooled inputs, .eval archives, compaction events,
usage by version. Fixtures: tests/readers/inspect_fixture.py (hand-made in the writer's shape)."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay.model import Item, Request, Run
from replay.readers import detect
from replay.readers.base import HEAD_BYTES, ReadContext, decode_head
from replay.readers.inspect_ai import READER
from tests.readers import inspect_fixture as F


def read(path: Path) -> list:
    return list(READER.read(ReadContext(path=path, file_hash="0" * 32)))


def run_of(records: list, sid: int) -> tuple[Run, list[Item], list[Request]]:
    run = next(r for r in records if isinstance(r, Run) and r.run_id.endswith(f"/{sid}.1"))
    items = [r for r in records if isinstance(r, Item) and r.run_id == run.run_id]
    reqs = [r for r in records if isinstance(r, Request) and r.run_id == run.run_id]
    return run, items, reqs


def prompt_at(items: list[Item], step: int, run: Run) -> list[str]:
    """What the recorded policy sends at request ``step``: items up to it, less the compactions' drops."""
    gone: set[int] = set()
    for e in run.metadata.get("context_events", []):
        if e["step"] <= step:
            gone |= {s for lo, hi in e["drop"] for s in range(lo, hi)}
    return [f"{i.kind}:{i.text or i.tool_name}"[:40] for i in items if i.step <= step and i.seq not in gone]


@pytest.fixture
def json_log(tmp_path: Path) -> Path:
    return F.write_json(tmp_path / "fix_tests.json", [F.summary_sample(), F.edit_sample()])


def test_pooled_inputs_are_the_prompts(json_log: Path) -> None:
    """0.3.186 on: each model event's input is [] and input_refs point into events_data.messages. Main read every
    prompt as empty (no system or task message at all); two "Please continue." pooled to one entry are both sent."""
    run, items, reqs = run_of(read(json_log), 1)
    assert len(reqs) == 6
    first = prompt_at(items, 0, run)
    assert first[0].startswith("tool_defs:") and first[1:] == [
        f"system:{F.SYS['content']}"[:40],
        f"user_text:{F.TASK['content']}"[:40],
    ]
    last = prompt_at(items, 5, run)
    assert last.count("user_text:Please continue.") == 2 and last[-1] == "user_text:Please continue."
    assert [i.kind for i in items].count("system") == 1


def test_summary_compaction_is_a_recorded_event(json_log: Path) -> None:
    """A CompactionEvent (0.3.170 on) between requests 1 and 2: drop = the messages request 2 no longer sends
    (with the tool result only the summariser saw), the summary item, and the summariser's call is the event's
    usage, not a request (main counted it as request 2 and kept every dropped message in later prompts)."""
    run, items, reqs = run_of(read(json_log), 1)
    [event] = run.metadata["context_events"]
    summary = next(i for i in items if i.kind == "summary")
    assert (event["kind"], event["step"], event["trigger"], event["pre_tokens"]) == ("compaction", 2, "auto", 2400)
    assert event["summary_seq"] == summary.seq and F.COMPLETION in summary.text
    assert event["usage"] == {"prompt": 2403, "input": 3, "cache_read": 1500, "cache_write": 900, "output": 60}
    dropped = [i for i in items if any(lo <= i.seq < hi for lo, hi in event["drop"])]
    assert [i.text or i.tool_name for i in dropped] == [
        F.A1["content"],
        "bash",
        F.T1["content"],
        F.A2["content"],
        "bash",
        F.T2["content"],
    ]
    assert [r.prompt_tokens for r in reqs] == [903, 1503, 453, 493, 523, 543]
    assert prompt_at(items, 2, run)[1:] == [
        f"system:{F.SYS['content']}"[:40],
        f"user_text:{F.TASK['content']}"[:40],
        f"summary:{summary.text}"[:40],
    ]


def test_edit_compaction_resends_rewritten_messages(json_log: Path) -> None:
    """CompactionEdit sends a copy of an old tool result with a new id and cleared content: the copies are resent
    (the recorded policy sends them, others replay without), the tool result new since the last request is not."""
    run, items, reqs = run_of(read(json_log), 2)
    [event] = run.metadata["context_events"]
    by_seq = {i.seq: i for i in items}
    resent = [by_seq[s] for lo, hi in event["resent"] for s in range(lo, hi)]
    assert [i.text or i.tool_name for i in resent] == ["(tool result cleared)", F.A2["content"], "bash"]
    assert [by_seq[s].text for lo, hi in event["drop"] for s in range(lo, hi)][0] == F.T1["content"]
    new = items[-3]
    assert new.kind == "tool_result" and new.text == F.T2["content"] and new.step == 2
    assert event["summary_seq"] is None and event["compaction_type"] == "edit"


def test_usage_summed_over_requests_takes_the_request_size(json_log: Path) -> None:
    """A generate call that made two requests sums their input in usage; input_context_tokens is the request's
    size (main read 993 = the sum)."""
    run, _, reqs = run_of(read(json_log), 1)
    assert (reqs[3].prompt_tokens, reqs[3].cache_read, reqs[3].cache_write, reqs[3].input_tokens) == (493, 450, 40, 3)
    assert "sums several requests" in run.metadata["warnings"][0]["message"]


@pytest.mark.parametrize("zstd", [True, False])
def test_eval_archive_reads_as_the_json_log(tmp_path: Path, json_log: Path, zstd: bool) -> None:
    """The .eval zip (zstd members from 0.3.208, deflated before): found by content and read as the same log."""
    path = F.write_eval(tmp_path / "fix_tests.eval", [F.summary_sample(), F.edit_sample()], zstd=zstd)
    assert detect(path) is READER
    as_json = [repr(r).replace(str(json_log), "X") for r in read(json_log)]
    assert [repr(r).replace(str(path), "X") for r in read(path)] == as_json


def test_eval_archive_without_header_is_a_started_log(tmp_path: Path) -> None:
    """A log whose eval never finished has only _journal/start.json: its samples are read, status "started"."""
    path = F.write_eval(tmp_path / "running.eval", [F.edit_sample()], zstd=False)
    import zipfile

    with zipfile.ZipFile(path) as src, zipfile.ZipFile(tmp_path / "cut.eval", "w") as dst:
        for info in src.infolist():
            if info.filename != "header.json":
                dst.writestr(info, src.read(info))
    run, _, reqs = run_of(read(tmp_path / "cut.eval"), 2)
    assert run.metadata["status"] == "started" and len(reqs) == 3


def test_damaged_member_is_quarantined(tmp_path: Path) -> None:
    path = F.write_eval(tmp_path / "bad.eval", [F.summary_sample(), F.edit_sample()], zstd=True)
    raw = bytearray(path.read_bytes())
    at = raw.index(b"samples/1_epoch_1.json") + len("samples/1_epoch_1.json") + 10
    raw[at : at + 8] = b"\x00" * 8
    path.write_bytes(bytes(raw))
    records = read(path)
    bad = [r for r in records if type(r).__name__ == "BadRecord"]
    assert len(bad) == 1 and "samples/1_epoch_1.json" in bad[0].reason
    assert len(run_of(records, 2)[2]) == 3


def test_sniffs_an_eval_set_log(json_log: Path) -> None:
    """In an eval set EvalSpec starts with eval_set_id (main did not recognise the log at all)."""
    head = decode_head(json_log.read_bytes()[:HEAD_BYTES])
    assert '"eval_set_id"' in head and READER.sniff(head, json_log) and detect(json_log) is READER


@pytest.mark.parametrize("version", ["0.3.240", "0.3.250"])
def test_google_thinking_by_version(tmp_path: Path, version: str) -> None:
    """Before 0.3.245 Gemini's thinking was out of output_tokens but in total_tokens: total - output read the
    thoughts as prompt (main: 1,600 and 1,750, output 30 and 20). From 0.3.245 output_tokens includes them. The same
    calls read the same either way."""
    folded = version >= "0.3.245"
    path = F.write_json(tmp_path / "g.json", [F.google_sample(folded)], model="google/gemini-2.5-pro", version=version)
    _, _, reqs = run_of(read(path), 1)
    assert [r.prompt_tokens for r in reqs] == [1200, 1500] and [r.output_tokens for r in reqs] == [430, 270]
    assert reqs[1].cache_read == 1024


def test_generate_cache_reads_carry_no_usage(tmp_path: Path) -> None:
    """A model event with cache "read" was served from inspect_ai's own generate cache: no provider call, so its
    usage (a copy of the cached call's) is not this request's."""
    s = F.edit_sample()
    s["events"][1]["cache"] = "read"
    run, _, reqs = run_of(read(F.write_json(tmp_path / "c.json", [s])), 2)
    assert reqs[1].prompt_tokens is None and reqs[0].prompt_tokens == 903
    assert run.metadata["generate_cache_reads"] == [1]


def test_transcript_of_older_logs_is_read(tmp_path: Path) -> None:
    """Samples written before EvalSample.events kept them in transcript {events, content}."""
    s = F.edit_sample()
    pool = s.pop("events_data")
    events = [
        {**e, "input": F.resolve(e["input_refs"], pool["messages"])} if e["event"] == "model" else e
        for e in s.pop("events")
    ]
    s["transcript"] = {"events": events, "content": {}}
    _, items, reqs = run_of(read(F.write_json(tmp_path / "t.json", [s])), 2)
    assert len(reqs) == 3 and items[1].kind == "system"


def test_chunked_sample_is_quarantined_with_a_note(tmp_path: Path) -> None:
    import zipfile

    path = F.write_eval(tmp_path / "ch.eval", [F.edit_sample()], zstd=False)
    with zipfile.ZipFile(path, "a") as zf:
        zf.writestr("samples/9_epoch_1/sample.json", "{}")
    bad = [r for r in read(path) if type(r).__name__ == "BadRecord"]
    assert len(bad) == 1 and "convert-chunked" in bad[0].reason


def test_encrypted_reasoning_is_sized_by_the_call(tmp_path: Path) -> None:
    """OpenAI's Responses API with store=false: inspect_ai keeps the encrypted_content in ContentReasoning.reasoning
    (redacted true, the readable summary in summary). Main read the ciphertext as the reasoning's text; it is the
    summary, sized by the call's reasoning_tokens (as Codex's encrypted reasoning)."""
    blob = "gAAAAB" + "Zm9vYmFy" * 500
    reply = {
        **F.A1,
        "model": "gpt-5",
        "content": [
            {"type": "reasoning", "reasoning": blob, "summary": "Look at the files first.", "redacted": True},
            {"type": "text", "text": "Listing files."},
        ],
    }
    usage = {"usage": {"input_tokens": 900, "output_tokens": 300, "total_tokens": 1200, "reasoning_tokens": 256}}
    events = [
        F.model_event(1, [F.SYS, F.TASK], reply, usage, "openai/gpt-5"),
        F.model_event(2, [F.SYS, F.TASK, reply, F.T1], F.A4, usage, "openai/gpt-5"),
    ]
    path = F.write_json(
        tmp_path / "r.json", [F.sample(1, events, [F.SYS, F.TASK, reply, F.T1, F.A4])], model="openai/gpt-5"
    )
    run, items, _ = run_of(read(path), 1)
    [thought] = [i for i in items if i.kind == "reasoning"]
    assert thought.text == "Look at the files first." and run.metadata["reasoning_tokens"] == [[thought.seq, 256]]


def test_failed_attempts_are_runs_of_their_own(tmp_path: Path) -> None:
    """A sample that errored and was retried keeps the failed attempt's events in error_retries: its calls were
    made and billed (main read none of them)."""
    s = F.edit_sample()
    # condense_sample pools only the sample's own events: a retried attempt's keep their input
    first = [F.model_event(1, [F.SYS, F.TASK], F.A1, F.anthropic_usage(0, 900, 3, 20))]
    s["error_retries"] = [{"message": "sandbox died", "traceback": "", "traceback_ansi": "", "events": first}]
    records = read(F.write_json(tmp_path / "r.json", [s]))
    runs = [r for r in records if isinstance(r, Run)]
    main, retry = runs[0], runs[1]
    assert retry.run_id.endswith("/2.1-retry1") and retry.parent_run_id == main.run_id
    assert retry.metadata["retry_error"] == "sandbox died"
    assert [r.prompt_tokens for r in records if isinstance(r, Request) and r.run_id == retry.run_id] == [903]


def test_model_roles_are_conversations_of_their_own(tmp_path: Path) -> None:
    """A model role (ModelEvent.role, e.g. a critic shown the same system prompt) is its own run: main appended
    its prompt and output to the agent's conversation, as their first messages share an id."""
    s = F.edit_sample()
    critique = F.assistant("m-crit", "The plan looks fine.")
    critic = F.model_event(3, [F.SYS, F.user("m-c", "Critique the plan.")], critique, F.anthropic_usage(0, 50, 3, 9))
    agent = F.model_event(1, [F.SYS, F.TASK], F.A1, F.anthropic_usage(0, 900, 3, 20))
    s.pop("events_data")  # as written before pooling (0.3.186), so only the role tells the conversations apart
    s.update(events=[agent, {**critic, "role": "critic"}], messages=[F.SYS, F.TASK, F.A1])
    records = read(F.write_json(tmp_path / "roles.json", [s]))
    runs = [r for r in records if isinstance(r, Run)]
    assert len(runs) == 2 and runs[1].parent_run_id == runs[0].run_id
    main_items = [i.text for i in records if isinstance(i, Item) and i.run_id == runs[0].run_id]
    assert "Critique the plan." not in main_items and "The plan looks fine." not in main_items


def test_a_system_message_from_the_config_keeps_one_conversation(tmp_path: Path) -> None:
    """GenerateConfig.system_message is inserted as a new message, so a new id, at every call: before pooling
    (0.3.186) each request's first message had its own id and main made every request a run of its own."""
    s = F.edit_sample()
    s.pop("events_data")
    events = []
    for n, (prompt, reply) in enumerate([([F.TASK], F.A1), ([F.TASK, F.A1, F.T1], F.A2)], start=1):
        fresh = {**F.SYS, "id": f"m-sys-{n}"}
        events.append(F.model_event(n, [fresh, *prompt], reply, F.anthropic_usage(0, 900, 3, 20)))
    s.update(events=events, messages=[F.TASK, F.A1, F.T1, F.A2])
    records = read(F.write_json(tmp_path / "sys.json", [s]))
    runs = [r for r in records if isinstance(r, Run)]
    assert len(runs) == 1 and sum(isinstance(r, Request) for r in records) == 2
    assert [i.kind for i in records if isinstance(i, Item)].count("system") == 1


def test_a_failed_call_adds_no_reply(tmp_path: Path) -> None:
    """A model event with an error logs an empty placeholder output (ModelOutput.from_content(model, "")): no reply
    the next prompt sends, so that prompt still extends the conversation (main: no warning either, but an empty
    assistant message in every later prompt it was not sent in)."""
    s = F.edit_sample()
    s.pop("events_data")
    failed = F.model_event(1, [F.SYS, F.TASK], F.assistant("m-empty", ""), {})
    failed["error"] = "overloaded"
    events = [failed, F.model_event(2, [F.SYS, F.TASK], F.A1, F.anthropic_usage(0, 900, 3, 20))]
    s.update(events=events, messages=[F.SYS, F.TASK, F.A1])
    run, items, reqs = run_of(read(F.write_json(tmp_path / "err.json", [s])), 2)
    assert len(reqs) == 2 and run.metadata["failed_requests"] == [0] and "warnings" not in run.metadata


@pytest.mark.parametrize("provider", ["anthropic_compact", "openai_compact"])
def test_native_compaction_block_is_the_summary(tmp_path: Path, provider: str) -> None:
    """CompactionNative logs no model call: the next request sends the system messages, the provider's compaction
    block (a data part's compaction_metadata: Anthropic's readable content, OpenAI's encrypted_content) and, for
    Anthropic, a user message asking to continue. The block is the summary; the task message is dropped too."""
    block = {"type": provider}
    block.update({"content": "Summary: listed and read a.py."} if provider == "anthropic_compact" else {})
    block.update({"id": "cmp_1", "encrypted_content": "gAAAA" + "x" * 400} if provider == "openai_compact" else {})
    compacted = F.assistant("m-native", "")
    compacted["content"] = [{"type": "data", "data": {"compaction_metadata": block}}]
    go_on = F.user("m-go", "Please continue working.")
    u = F.anthropic_usage
    events = [
        F.model_event(1, [F.SYS, F.TASK], F.A1, u(0, 900, 3, 20)),
        F.model_event(2, [F.SYS, F.TASK, F.A1, F.T1], F.A2, u(900, 600, 3, 25)),
        F.compaction_event(3, "summary", 2400, 200, "CompactionNative"),
        F.model_event(4, [F.SYS, compacted, go_on, F.T2], F.A3, u(0, 300, 3, 22)),
    ]
    s = F.sample(3, events, [F.SYS, F.TASK, F.A1, F.T1, F.A2, F.T2, compacted, go_on, F.A3])
    run, items, reqs = run_of(read(F.write_json(tmp_path / "native.json", [s])), 3)
    [event] = run.metadata["context_events"]
    by_seq = {i.seq: i for i in items}
    summary = by_seq[event["summary_seq"]]
    assert summary.kind == "summary" and "usage" not in event and len(reqs) == 3
    assert summary.text == block.get("content", "") and event.get("summary_encrypted", False) == ("openai" in provider)
    assert by_seq[event["drop"][0][0]].text == F.TASK["content"]


def test_plan_compaction_argument_is_kept(tmp_path: Path) -> None:
    """The plan's react() step records compaction=CompactionSummary(...) as its _repr_params_() (0.3.209 on): kept in
    the run's metadata without the prompt's text (whether one was given), for the preset (main dropped the plan)."""
    plan = F.react_plan(F.summary_params(0.05))
    path = F.write_json(tmp_path / "a.json", [F.summary_sample()], plan=plan)
    run, _, _ = run_of(read(path), 1)
    assert run.metadata["compaction_plan"] == [
        {"solver": "react", "compaction": {**F.summary_params(0.05), "prompt": True, "instructions": False}}
    ]
    bare = F.write_json(tmp_path / "b.json", [F.summary_sample()])
    assert "compaction_plan" not in run_of(read(bare), 1)[0].metadata


def test_redacted_reasoning_stamp_is_flagged(tmp_path: Path) -> None:
    """An assistant message stamped with redacted_reasoning_tokens (0.3.218 on: inspect_ai's compaction count adds
    them) flags the run, for the preset chooser to leave it unscored."""
    stamped = {**F.A1, "metadata": {"redacted_reasoning_tokens": 812}}
    u = F.anthropic_usage
    events = [F.model_event(1, [F.SYS, F.TASK], stamped, u(0, 900, 3, 20))]
    s = F.sample(4, events, [F.SYS, F.TASK, stamped])
    run, _, _ = run_of(read(F.write_json(tmp_path / "r.json", [s])), 4)
    assert run.metadata["redacted_reasoning_tokens"] is True
    assert (
        "redacted_reasoning_tokens"
        not in run_of(read(F.write_json(tmp_path / "a.json", [F.summary_sample()])), 1)[0].metadata
    )


def test_scorer_call_without_message_ids_is_its_own_run(tmp_path: Path) -> None:
    """Before 0.3.75 ChatMessage had no ``id``: the model-graded scorer's call (one user message holding the grading
    prompt) and the solver's calls all had a first message without an id, so main read the scorer's call as a
    request of the main conversation whose prompt the conversation so far (the unseen 0.3.43 test logs of
    inspect_ai: 69% median error). Messages in 0.3.43's shape (role, content, source; no id, no tools)."""

    def bare(m: dict) -> dict:
        return {k: v for k, v in m.items() if k not in ("id", "model")}

    persona = bare(F.user("-", "Answer in the lingo of a pirate.", "input"))
    question = bare(F.user("-", "What is the average low in February?"))
    answer = bare(F.assistant("-", "Arr, about ten degrees."))
    grading = bare(F.user("-", "Compare the submission with the expert answer. [Submission]: Arr, about ten."))
    verdict = bare(F.assistant("-", "GRADE: C"))
    usage = {"usage": {"input_tokens": 53, "output_tokens": 9, "total_tokens": 62}}
    solver = {**F.model_event(1, [persona, question], answer, usage, "openai/gpt-4o-mini"), "tools": []}
    scorer = {**F.model_event(2, [grading], verdict, usage, "openai/gpt-4o-mini"), "tools": []}
    s = F.sample(1, [], [persona, question, answer])
    s.pop("events_data")
    s["events"] = [solver, scorer]
    records = read(F.write_json(tmp_path / "old.json", [s], model="openai/gpt-4o-mini", version="0.3.43"))
    runs = [r for r in records if isinstance(r, Run)]
    assert len(runs) == 2 and runs[1].parent_run_id == runs[0].run_id
    main = [i.text for i in records if isinstance(i, Item) and i.run_id == runs[0].run_id]
    side = [i.text for i in records if isinstance(i, Item) and i.run_id == runs[1].run_id]
    assert main == [persona["content"], question["content"], answer["content"]]
    assert side == [grading["content"], verdict["content"]]
    assert [sum(isinstance(r, Request) and r.run_id == run.run_id for r in records) for run in runs] == [1, 1]


def test_interim_sample_message_pool_is_the_pool(tmp_path: Path) -> None:
    """inspect_ai 0.3.195 to 0.3.199 with INSPECT_LOG_FORMAT_V3 set pooled inputs into the sample's own
    ``message_pool`` (``log/_log.py`` at e1b3ff7), before #3519 moved the pools into ``events_data``. Main
    quarantined every model event of such a log (inspect_ai's own ``log_message_deduplication.eval``: 6 of 6)."""
    s = F.edit_sample()
    pools = s.pop("events_data")
    s["message_pool"], s["call_pool"] = pools["messages"], pools.get("calls", [])
    interim = read(F.write_json(tmp_path / "interim.json", [s]))
    current = read(F.write_json(tmp_path / "current.json", [F.edit_sample()]))
    assert not [r for r in interim if type(r).__name__ == "BadRecord"]
    texts = [[i.text for i in recs if isinstance(i, Item)] for recs in (interim, current)]
    assert texts[0] == texts[1] and sum(isinstance(r, Request) for r in interim) == 3
