"""Cline reader: ui_messages.json alone (corpus), a task folder with api_conversation_history.json, truncation."""

from __future__ import annotations

import json
from pathlib import Path

from replay.model import BadRecord, Item, Request, Run
from replay.readers import detect, folder_reader
from replay.readers.base import ReadContext
from replay.readers.cline import READER


def read(path: Path) -> list:
    return list(READER.read(ReadContext(path=path, file_hash="0" * 32)))


def of(records: list, cls: type) -> list:
    return [r for r in records if isinstance(r, cls)]


def test_ui_messages_usage_calls_and_results(corpus: Path) -> None:
    path = corpus / "cline" / "cline-xray-opus46-task_sample.ui_messages.json"
    assert detect(path) is READER
    records = read(path)
    assert not of(records, BadRecord)
    (run,) = of(records, Run)
    assert run.model == "claude-opus-4-6" and run.started_at.startswith("2026-02-08")
    reqs = of(records, Request)
    assert len(reqs) == 53
    assert (reqs[1].input_tokens, reqs[1].cache_read, reqs[1].cache_write, reqs[1].output_tokens) == (
        10,
        21050,
        43988,
        534,
    )  # tokensIn excludes cache reads and writes
    assert reqs[1].prompt_tokens == 10 + 21050 + 43988
    items = of(records, Item)
    calls = [i for i in items if i.kind == "tool_call"]
    assert len(calls) == 67
    first_batch = [c for c in calls if c.step == 1]
    assert [c.tool_name for c in first_batch] == ["read_file"] * 8 and first_batch[0].access == "read"
    results = [i for i in items if i.kind == "tool_result" and i.step == 1]  # sent before request 1
    assert [r.call_id for r in results] == [c.call_id for c in first_batch]
    assert results[0].text.startswith("[read_file for 'src-tauri/src/conversation_history/types.rs'] Result:")
    env = [i for i in items if i.kind == "attachment" and i.step == 1]
    assert len(env) == 1 and env[0].text.startswith("<environment_details>")


def test_truncation_is_a_recorded_context_event(corpus: Path) -> None:
    records = read(corpus / "cline" / "cline-xray-opus46-task_sample.ui_messages.json")
    events = of(records, Run)[0].metadata["context_events"]
    assert [e["api_range"] for e in events] == [[2, 17], [2, 39], [2, 57], [2, 79]]
    items = of(records, Item)
    first = events[0]
    assert first["kind"] == "condensation" and first["summary_seq"] is None and first["step"] == 17
    ((lo, hi),) = first["drop"]
    dropped = [i for i in items if lo <= i.seq < hi]
    assert {i.step for i in dropped} == set(range(1, 10))  # API messages 2..17: requests 1-8 and their replies
    assert dropped[0].kind == "tool_result" and items[hi].step == 9 and items[hi - 1].step == 9


def test_cancelled_request_has_no_usage(corpus: Path) -> None:
    reqs = of(read(corpus / "cline" / "cline-jeehunter-mcp-root.ui_messages.json"), Request)
    assert len(reqs) == 61 and reqs[-1].prompt_tokens is None and reqs[-2].cache_write == 80784


def _task(folder: Path, with_api: bool = True) -> Path:
    folder.mkdir()
    usage = {"tokensIn": 5, "tokensOut": 7, "cacheWrites": 100, "cacheReads": 0, "cost": 0.01}
    ui = [
        {"ts": 1_700_000_000_000, "type": "say", "say": "task", "text": "read a.py"},
        {
            "ts": 1_700_000_000_001,
            "type": "say",
            "say": "api_req_started",
            "text": json.dumps({"request": "<task>read a.py</task>", **usage}),
        },
        {
            "ts": 1_700_000_000_002,
            "type": "say",
            "say": "tool",
            "text": json.dumps({"tool": "readFile", "path": "a.py"}),
        },
        {
            "ts": 1_700_000_000_003,
            "type": "say",
            "say": "api_req_started",
            "text": json.dumps({"request": "[read_file for 'a.py'] Result:\nprint(1)", **usage, "cacheReads": 100}),
        },
        {"ts": 1_700_000_000_004, "type": "say", "say": "completion_result", "text": "done"},
    ]
    (folder / "ui_messages.json").write_text(json.dumps(ui))
    if with_api:
        api = [
            {"role": "user", "content": [{"type": "text", "text": "<task>read a.py</task>"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "reading"},
                    {"type": "tool_use", "id": "tu1", "name": "read_file", "input": {"path": "a.py"}},
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu1", "content": "print(1)"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        ]
        (folder / "api_conversation_history.json").write_text(json.dumps(api))
    return folder


def test_task_folder_prefers_the_api_history(tmp_path: Path) -> None:
    folder = _task(tmp_path / "1700000000000")
    reader, members = folder_reader(folder)
    assert reader is READER and [m.name for m in members] == ["api_conversation_history.json", "ui_messages.json"]
    records = read(folder)
    reqs = of(records, Request)
    assert [(q.step, q.cache_read, q.cache_write) for q in reqs] == [(0, 0, 100), (1, 100, 100)]
    items = of(records, Item)
    assert [(i.kind, i.step) for i in items] == [
        ("user_text", 0),
        ("assistant_text", 1),
        ("tool_call", 1),
        ("tool_result", 1),
        ("assistant_text", 2),
    ]
    assert items[2].call_id == items[3].call_id == "tu1" and items[2].access == "read"


def test_task_folder_without_api_history_reads_the_ui(tmp_path: Path) -> None:
    records = read(_task(tmp_path / "t", with_api=False))
    items = of(records, Item)
    assert [(i.kind, i.step) for i in items] == [
        ("user_text", 0),
        ("tool_call", 1),
        ("tool_result", 1),
        ("assistant_text", 2),
    ]
    assert items[1].call_id == items[2].call_id


def test_broken_api_history_falls_back_and_says_so(tmp_path: Path) -> None:
    folder = _task(tmp_path / "t")
    (folder / "api_conversation_history.json").write_text("[{")
    records = read(folder)
    (bad,) = of(records, BadRecord)
    assert "api_conversation_history.json" in bad.reason and "ui_messages.json instead" in bad.reason
    assert len(of(records, Request)) == 2


def test_api_history_with_xml_tool_calls(tmp_path: Path) -> None:
    folder = _task(tmp_path / "t")
    api = [
        {"role": "user", "content": [{"type": "text", "text": "<task>read a.py</task>"}]},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "reading\n<read_file>\n<path>a.py</path>\n</read_file>"}],
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "[read_file for 'a.py'] Result:\nprint(1)"},
                {"type": "text", "text": "<environment_details>x</environment_details>"},
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "<attempt_completion>\n<result>done</result>\n</attempt_completion>"}],
        },
    ]
    (folder / "api_conversation_history.json").write_text(json.dumps(api))
    items = of(read(folder), Item)
    assert [(i.kind, i.step) for i in items] == [
        ("user_text", 0),
        ("assistant_text", 1),
        ("tool_call", 1),
        ("tool_result", 1),
        ("attachment", 1),
        ("assistant_text", 2),
    ]
    call, result = items[2], items[3]
    assert (call.tool_name, json.loads(call.args), call.access) == ("read_file", {"path": "a.py"}, "read")
    assert result.call_id == call.call_id and result.text.endswith("print(1)")


def test_duplicate_file_reads_are_derived_rewrites(corpus: Path) -> None:
    """Cline rewrites all but the newest copy of a file before it manages the context; the log does not record it.
    Usage past 160,000 (Claude's 200k window) before requests 17, 26, 32, 38 and 51: the pass ran there, and at 26
    alone (175.8k, no new deleted range) it saved enough that Cline did not truncate."""
    records = read(corpus / "cline" / "cline-xray-opus46-task_sample.ui_messages.json")
    run = of(records, Run)[0]
    items = {i.seq: i for i in of(records, Item)}
    rewrites = run.metadata["context_rewrites"]
    assert [r["step"] for r in rewrites] == [17, 26, 32, 38, 51]
    assert "duplicate file reads" not in {e.get("harness_kind") for e in run.metadata["context_events"]}
    at17 = {items[seq].step: (items[seq], chars) for seq, chars in rewrites[0]["cleared"]}
    # request 16's replace_in_file result holds TaskDetailView.svelte in full; request 17's is the newest copy
    result, chars = at17[16]
    assert result.tool_name == "replace_in_file" and result.resource.endswith("TaskDetailView.svelte")
    assert len(result.text) > 60_000 and chars < 1_500  # the file's content gives way to Cline's 153-character notice
    rewritten = [seq for r in rewrites for seq, _ in r["cleared"]]
    assert len(rewritten) == len(set(rewritten))  # a message rewritten once is never rewritten again


def test_duplicate_pass_keys_by_the_header_path() -> None:
    from replay.readers.cline_dedup import NOTICE_CHARS, duplicate_pass, first_result

    body = "x" * 1000
    read_a = first_result(1, f"[read_file for 'a.py'] Result:\n{body}")
    change_a = first_result(
        2,
        f"[replace_in_file for '/abs/a.py'] Result:\nok\n<final_file_content path=\"a.py\">{body}</final_file_content>",
    )
    read_a2 = first_result(3, f"[read_file for 'a.py'] Result:\n{body}")
    rejected = first_result(4, "[replace_in_file for '/abs/a.py'] Result:\nThe user denied this operation.")
    assert rejected is None and read_a and change_a and read_a2
    done: set[int] = set()
    cleared = duplicate_pass({2: read_a, 4: change_a, 6: read_a2}, 2, 8, done)
    assert cleared == [[1, len("[read_file for 'a.py'] Result:") + 1 + NOTICE_CHARS]]  # the change is another path
    assert duplicate_pass({2: read_a, 4: change_a, 6: read_a2}, 2, 8, done) == []  # rewritten once only
    assert duplicate_pass({2: read_a, 4: change_a, 6: read_a2}, 4, 8, set()) == []  # before the range: not seen


def test_tool_call_format_from_the_request_texts(corpus: Path, tmp_path: Path) -> None:
    """Cline's request text writes a native tool_result block as ``[Tool]`` (formatContentBlockToMarkdown) and a
    text result as it is: both corpus logs used the XML format, the API history's tool_use blocks are native."""
    for name in ("cline-xray-opus46-task_sample.ui_messages.json", "cline-jeehunter-mcp-root.ui_messages.json"):
        run = of(read(corpus / "cline" / name), Run)[0]
        assert run.metadata["tool_calls"] == "text", name
    assert of(read(_task(tmp_path / "api")), Run)[0].metadata["tool_calls"] == "native"


def test_duplicate_candidates_keep_the_header_spelling(corpus: Path) -> None:
    """A policy replaying Cline's pass gets each candidate's key (the header's path, not the normalised resource:
    this log reads src/... and writes c:\\Users\\...\\src\\..., two keys for Cline) and its exact size after."""
    records = read(corpus / "cline" / "cline-xray-opus46-task_sample.ui_messages.json")
    run = of(records, Run)[0]
    items = {i.seq: i for i in of(records, Item)}
    cands = run.metadata["duplicate_candidates"]
    assert len(cands) == 39
    keys_of: dict[str, set[int]] = {}
    for seq, key, chars in cands:
        assert items[seq].kind == "tool_result" and chars <= len(items[seq].text)
        keys_of.setdefault(items[seq].resource, set()).add(key)
    assert sum(len(k) > 1 for k in keys_of.values()) == 6  # 6 of these files under two spellings
    rewritten = {seq: chars for r in run.metadata["context_rewrites"] for seq, chars in r["cleared"]}
    sizes = {seq: chars for seq, _, chars in cands}
    assert all(sizes[seq] == chars for seq, chars in rewritten.items())  # the same sizes the reader's pass used


def test_a_tool_message_whose_text_is_json_but_not_an_object_is_kept_as_text(tmp_path: Path) -> None:
    """A UI 'tool' message carrying a JSON string or list (not an object) was read with .get() and stopped the
    reader with AttributeError; it is a call with the raw text as its arguments, like unparseable text."""
    folder = _task(tmp_path / "t", with_api=False)
    ui = json.loads((folder / "ui_messages.json").read_text())
    ui[2]["text"] = json.dumps(["not", "an", "object"])
    (folder / "ui_messages.json").write_text(json.dumps(ui))
    calls = [i for i in of(read(folder), Item) if i.kind == "tool_call"]
    assert len(calls) == 1 and calls[0].tool_name == "tool" and json.loads(calls[0].args or "")["raw"] == ui[2]["text"]


def test_images_carry_the_base64_size_cline_weighs(corpus: Path, tmp_path: Path) -> None:
    """Cline weighs an image block by the length of its base64 data when it decides whether its duplicate-read
    pass saved enough (OptimizationMetrics). The corpus task's user feedback before request 51 has a screenshot
    of 128,482 characters as a data URL, 128,460 of them the data; it goes with that request's user message."""
    records = read(corpus / "cline" / "cline-xray-opus46-task_sample.ui_messages.json")
    (run,) = of(records, Run)
    items = {i.seq: i for i in of(records, Item)}
    sizes = run.metadata["media_chars"]
    assert [(items[seq].kind, items[seq].step, chars) for seq, chars in sizes] == [("image", 51, 128_460)]
    # the API history's image block: the data's own length
    folder = tmp_path / "task"
    folder.mkdir()
    (folder / "ui_messages.json").write_text(json.dumps([{"ts": 1, "type": "say", "say": "task", "text": "look"}]))
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QUJD" * 10}}
    api = [{"role": "user", "content": [{"type": "text", "text": "look"}, image]}]
    (folder / "api_conversation_history.json").write_text(json.dumps(api))
    records = read(folder)
    (run,) = of(records, Run)
    (img,) = [i for i in of(records, Item) if i.kind == "image"]
    assert run.metadata["media_chars"] == [[img.seq, 40]]


def test_duplicate_pass_runs_at_the_current_models_limit(tmp_path: Path) -> None:
    """Cline manages the context past the max allowed size of the task's current API handler (getContextWindowInfo
    of ``this.api``, rebuilt when the model is changed): 165k of usage is under claude-sonnet-4-5:1m's 960,000 but
    past claude-sonnet-4-5's 160,000, so the duplicate-read pass runs before the first request on the latter."""
    body = "".join(f"line {n}\n" for n in range(2_000))
    ui: list[dict] = [{"ts": 1_700_000_000_000, "type": "say", "say": "task", "text": "start"}]
    for k in range(7):
        model = "claude-sonnet-4-5:1m" if k < 5 else "claude-sonnet-4-5"
        request = "<task>start</task>" if k == 0 else f"[read_file for 'a.py'] Result:\n{body}" if k < 3 else "go on"
        usage = {"tokensIn": 10, "tokensOut": 20, "cacheWrites": 0, "cacheReads": 33_000 * (k + 1), "cost": 0.01}
        ui.append(
            {
                "ts": 1_700_000_000_000 + 3 * k + 1,
                "type": "say",
                "say": "api_req_started",
                "text": json.dumps({"request": request, **usage}),
                "modelInfo": {"modelId": model, "providerId": "anthropic", "mode": "act"},
            }
        )
        if k < 2:
            tool = json.dumps({"tool": "readFile", "path": "a.py", "content": "/w/a.py"})
            ui.append({"ts": 1_700_000_000_000 + 3 * k + 2, "type": "say", "say": "tool", "text": tool})
        else:
            ui.append({"ts": 1_700_000_000_000 + 3 * k + 2, "type": "say", "say": "text", "text": f"done {k}"})
    path = tmp_path / "ui_messages.json"
    path.write_text(json.dumps(ui))
    run = of(read(path), Run)[0]
    assert [r["step"] for r in run.metadata["context_rewrites"]] == [5]


def test_claude_dev_1_x_task_folder(tmp_path: Path) -> None:
    """Claude Dev 1.2.2 to 1.9.7 (``src/core/ClaudeDev.ts``, ``recursivelyMakeClaudeRequests``) keep the UI
    messages in ``claude_messages.json`` (renamed ``ui_messages.json`` in 2.0, ``Cline.getSavedClineMessages``) and
    write the usage in a ``say: "api_req_finished"`` message after the ``api_req_started``, whose text holds only
    ``request``; ``cache_creation_input_tokens || undefined`` leaves out a zero cache figure. Synthetic content.
    Main: the folder is no task (each file read alone) and every request has no usage."""
    folder = tmp_path / "1724000000000"
    folder.mkdir()
    finished = [
        {"tokensIn": 1200, "tokensOut": 80, "cacheWrites": 900, "cost": 0.01},
        {"tokensIn": 40, "tokensOut": 20, "cacheReads": 900, "cacheWrites": 300, "cost": 0.002},
    ]
    ui = [
        {"ts": 1_724_000_000_000, "type": "say", "say": "text", "text": "read a.py"},
        {"ts": 1_724_000_000_001, "type": "say", "say": "api_req_started", "text": json.dumps({"request": "read"})},
        {"ts": 1_724_000_000_002, "type": "say", "say": "api_req_finished", "text": json.dumps(finished[0])},
        {"ts": 1_724_000_000_003, "type": "ask", "ask": "tool", "text": json.dumps({"tool": "readFile", "path": "a"})},
        {"ts": 1_724_000_000_004, "type": "say", "say": "api_req_started", "text": json.dumps({"request": "[r]"})},
        {"ts": 1_724_000_000_005, "type": "say", "say": "api_req_finished", "text": json.dumps(finished[1])},
        {"ts": 1_724_000_000_006, "type": "say", "say": "text", "text": "done"},
    ]
    (folder / "claude_messages.json").write_text(json.dumps(ui))
    api = [
        {"role": "user", "content": [{"type": "text", "text": "<task>\nread a.py\n</task>"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "print(1)"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
    ]
    (folder / "api_conversation_history.json").write_text(json.dumps(api))
    reader, members = folder_reader(folder)
    assert reader is READER and [m.name for m in members] == ["api_conversation_history.json", "claude_messages.json"]
    for records in (read(folder), read(folder / "claude_messages.json")):  # the task folder, and the ui file alone
        assert not of(records, BadRecord)
        reqs = of(records, Request)
        assert [(q.prompt_tokens, q.input_tokens, q.cache_read, q.cache_write, q.output_tokens) for q in reqs] == [
            (2100, 1200, None, 900, 80),
            (1240, 40, 900, 300, 20),
        ]
        assert of(records, Run)[0].metadata["api_req_finished"] == 2


def test_cline_2_history_cut_in_place_reads_the_ui(tmp_path: Path) -> None:
    """Cline 2.0.0 to 3.0.12 (``src/core/sliding-window/index.ts`` ``truncateHalfConversation``, called from
    ``Cline.attemptApiRequest`` then ``overwriteApiConversationHistory``) rewrite the API history as its first
    message plus the newest half, stamping no range (``conversationHistoryDeletedRange`` is 3.1's). Synthetic
    content: 3 answered requests, the history cut before the third ([u0, a1, u2, a2, u3] -> [u0, a2, u3], then a3).
    Main paired a2 with request 1's usage and a3 with request 2's, and lost a1's call and u2's result."""
    folder = tmp_path / "1730000000000"
    folder.mkdir()
    usage = [{"tokensIn": 10 * k, "tokensOut": k, "cacheWrites": 0, "cacheReads": 0, "cost": 0.001} for k in (1, 2, 3)]
    ui = [{"ts": 1_730_000_000_000, "type": "say", "say": "task", "text": "list files"}]
    requests = ["<task>\nlist files\n</task>", "[list_files for '.'] Result:\na.py", "[list_files for '.'] Result:\nb"]
    for k, (request, use) in enumerate(zip(requests, usage, strict=True)):
        started = {"ts": 1_730_000_000_001 + 2 * k, "type": "say", "say": "api_req_started"}
        ui.append({**started, "text": json.dumps({"request": request, **use})})
        tool = json.dumps({"tool": "listFilesTopLevel", "path": "."})
        ui.append({"ts": 1_730_000_000_002 + 2 * k, "type": "say", "say": "tool", "text": tool})
    (folder / "ui_messages.json").write_text(json.dumps(ui))
    call = "<list_files>\n<path>.</path>\n</list_files>"
    api = [
        {"role": "user", "content": [{"type": "text", "text": requests[0]}]},
        {"role": "assistant", "content": [{"type": "text", "text": call}]},
        {"role": "user", "content": [{"type": "text", "text": requests[2]}]},
        {"role": "assistant", "content": [{"type": "text", "text": call}]},
    ]
    (folder / "api_conversation_history.json").write_text(json.dumps(api))
    records = read(folder)
    reqs = of(records, Request)
    assert [(q.step, q.input_tokens, q.output_tokens) for q in reqs] == [(0, 10, 1), (1, 20, 2), (2, 30, 3)]
    kinds = [(i.kind, i.step) for i in of(records, Item)]
    # every reply's call is there (main lost the cut one: 2 calls) and each result is sent with the next request
    assert [k for k in kinds if k[0] in ("tool_call", "tool_result")] == [
        ("tool_call", 1),
        ("tool_result", 1),
        ("tool_call", 2),
        ("tool_result", 2),
        ("tool_call", 3),
    ]
    (warning,) = of(records, Run)[0].metadata["warnings"]
    assert "2 replies for 3 answered requests" in warning["message"] and "ui_messages.json" in warning["message"]


def test_the_task_said_as_text_is_no_model_output(tmp_path: Path) -> None:
    """Claude Dev 1.x to Cline 3.46 open a task with ``this.say("text", task, images)`` (``src/core/task/index.ts``
    ``startTask``; 1.x ``src/core/ClaudeDev.ts``); the webview takes ``messages.at(0)`` as the task whatever its
    type. Its text is the first request's. Synthetic content. Main read it as the model's assistant text too (as it
    did in the corpus's cline-jeehunter-mcp-root file)."""
    ui = [
        {"ts": 1_740_000_000_000, "type": "say", "say": "text", "text": "build a server", "images": ["data:x,QUJD"]},
        {
            "ts": 1_740_000_000_001,
            "type": "say",
            "say": "api_req_started",
            "text": json.dumps({"request": "<task>\nbuild a server\n</task>", "tokensIn": 9, "tokensOut": 2}),
        },
        {"ts": 1_740_000_000_002, "type": "say", "say": "text", "text": "Sure."},
    ]
    path = tmp_path / "ui_messages.json"
    path.write_text(json.dumps(ui))
    items = of(read(path), Item)
    assert [(i.kind, i.role, i.text) for i in items] == [
        ("user_text", "user", "<task>\nbuild a server\n</task>"),
        ("image", "user", "[image]"),
        ("assistant_text", "assistant", "Sure."),
    ]


def test_a_3_1_history_with_fewer_replies_is_still_paired(tmp_path: Path) -> None:
    """From 3.1 (``src/shared/ExtensionMessage.ts``: ``conversationHistoryIndex`` and
    ``conversationHistoryDeletedRange``, 9de7253) Cline never rewrites the API history: a reply missing there (an
    empty response) is no in-place cut, and the API history stays the source of the items."""
    folder = _task(tmp_path / "t")
    ui = json.loads((folder / "ui_messages.json").read_text())
    for n, m in enumerate(ui):
        m["conversationHistoryIndex"] = n // 2
    (folder / "ui_messages.json").write_text(json.dumps(ui))
    api = json.loads((folder / "api_conversation_history.json").read_text())
    (folder / "api_conversation_history.json").write_text(json.dumps(api[:3]))  # the last reply never saved
    records = read(folder)
    assert "warnings" not in of(records, Run)[0].metadata
    assert [i.call_id for i in of(records, Item) if i.kind == "tool_call"] == ["tu1"]  # the API history's own id


def _api_alone(folder: Path) -> Path:
    """A Cline 3.40+ task whose ui_messages.json is gone: replies carry ``modelInfo`` and ``metrics.tokens``
    (``prompt`` = the handler's inputTokens, ``cached`` = cache writes + reads)."""
    folder.mkdir()
    api = [
        {"role": "user", "content": [{"type": "text", "text": "<task>read a.py</task>"}], "ts": 1_777_000_000_000},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "tu1", "name": "read_file", "input": {"path": "a.py"}}],
            "modelInfo": {"modelId": "claude-sonnet-4-5", "providerId": "anthropic", "mode": "act"},
            "metrics": {"tokens": {"prompt": 5, "completion": 7, "cached": 100}, "cost": 0.01},
            "ts": 1_777_000_001_000,
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu1", "content": "print(1)"}]},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "done"}],
            "modelInfo": {"modelId": "gpt-5", "providerId": "openai", "mode": "act"},
            "metrics": {"tokens": {"prompt": 300, "completion": 9, "cached": 40}, "cost": 0.002},
            "ts": 1_777_000_002_000,
        },
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "again"}],
            "modelInfo": {"modelId": "gpt-5", "providerId": "openai", "mode": "act"},
            "metrics": {"tokens": {"prompt": 310, "completion": 2, "cached": 0}},
        },
    ]
    (folder / "api_conversation_history.json").write_text(json.dumps(api))
    return folder


def test_api_history_alone_is_a_run_with_the_usage_of_its_metrics(tmp_path: Path) -> None:
    folder = _api_alone(tmp_path / "1777000000000")
    reader, members = folder_reader(folder)
    assert reader is READER and [m.name for m in members] == ["api_conversation_history.json"]
    assert detect(folder / "api_conversation_history.json") is READER
    records = read(folder)
    assert not of(records, BadRecord)
    (run,) = of(records, Run)
    assert run.model == "claude-sonnet-4-5" and run.started_at.startswith("2026-04-24")
    reqs = of(records, Request)
    assert [(q.prompt_tokens, q.input_tokens, q.output_tokens, q.model) for q in reqs] == [
        (105, 5, 7, "claude-sonnet-4-5"),  # Anthropic: inputTokens leaves out the cached tokens
        (300, 260, 9, "gpt-5"),  # OpenAI-compatible: prompt_tokens already holds them
        (310, 310, 2, "gpt-5"),
    ]
    # cached sums reads and writes: their split is not known, unless nothing was cached
    assert [(q.cache_read, q.cache_write) for q in reqs] == [(None, None), (None, None), (0, 0)]
    items = of(records, Item)
    assert [(i.kind, i.step) for i in items][:3] == [("user_text", 0), ("tool_call", 1), ("tool_result", 1)]


def test_a_lone_api_history_file_is_read_the_same_way(tmp_path: Path) -> None:
    path = _api_alone(tmp_path / "t") / "api_conversation_history.json"
    assert [q.prompt_tokens for q in of(read(path), Request)] == [105, 300, 310]


def test_an_openai_compatible_tokens_in_holds_the_cache_reads(tmp_path: Path) -> None:
    """Cline's OpenAI-compatible handler reports inputTokens = prompt_tokens (cached_tokens included)."""
    folder = _task(tmp_path / "t", with_api=False)
    ui = json.loads((folder / "ui_messages.json").read_text())
    for m in ui:
        m["modelInfo"] = {"modelId": "gpt-5", "providerId": "openai", "mode": "act"}
        if m["say"] == "api_req_started":
            m["text"] = json.dumps({"request": "x", "tokensIn": 1000, "tokensOut": 7, "cacheReads": 800})
    (folder / "ui_messages.json").write_text(json.dumps(ui))
    reqs = of(read(folder), Request)
    assert [(q.prompt_tokens, q.input_tokens, q.cache_read) for q in reqs] == [(1000, 200, 800)] * 2


def _long_api_alone(folder: Path, prompts: list[int]) -> Path:
    """An OpenAI-compatible Cline task (window: Cline's 128,000 default, max allowed 98,000) whose UI messages are
    gone: one text reply per request, its metrics ``prompts[k]``."""
    folder.mkdir()
    api: list[dict] = []
    for k, prompt in enumerate(prompts):
        api.append({"role": "user", "content": [{"type": "text", "text": f"turn {k}"}]})
        api.append(
            {
                "role": "assistant",
                "content": [{"type": "text", "text": f"reply {k}"}],
                "modelInfo": {"modelId": "my-proxy-model", "providerId": "openai", "mode": "act"},
                "metrics": {"tokens": {"prompt": prompt, "completion": 500, "cached": 0}},
            }
        )
    (folder / "api_conversation_history.json").write_text(json.dumps(api))
    return folder


def test_truncations_of_a_task_without_ui_messages_are_derived_as_cline_decides(tmp_path: Path) -> None:
    # the sum at request 4 (97,600 + 500) reaches 98,000: Cline truncates before request 5, keeping half
    prompts = [20_000, 40_000, 60_000, 80_000, 97_600, 50_000, 60_000]
    records = read(_long_api_alone(tmp_path / "t", prompts))
    (run,) = of(records, Run)
    (event,) = run.metadata["context_events"]
    # request 5 is sent with API messages 0..10: half of the 9 after the first pair, in pairs: 4
    assert event["step"] == 5 and event["api_range"] == [2, 5] and event["derived"] is True
    assert event["kind"] == "condensation" and event["harness_kind"] == "truncation"
    items = of(records, Item)
    ((lo, hi),) = event["drop"]
    assert [i.text for i in items[lo:hi]] == ["turn 1", "reply 1", "turn 2", "reply 2"]


def test_a_sum_over_twice_the_limit_keeps_a_quarter(tmp_path: Path) -> None:
    prompts = [20_000, 40_000, 60_000, 80_000, 90_000, 200_000, 30_000]
    (event,) = of(read(_long_api_alone(tmp_path / "t", prompts)), Run)[0].metadata["context_events"]
    # request 6 is sent with API messages 0..12: three quarters of the 11 after the first pair, in pairs: 8
    assert event["step"] == 6 and event["api_range"] == [2, 9]


def test_no_truncation_is_derived_below_the_limit(tmp_path: Path) -> None:
    records = read(_long_api_alone(tmp_path / "t", [20_000, 40_000, 97_000, 50_000]))
    assert "context_events" not in of(records, Run)[0].metadata
