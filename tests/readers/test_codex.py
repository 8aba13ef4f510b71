"""Codex rollout and Codex TUI readers against the real corpus: counts vs MANIFEST.md, usage, compaction, sniffing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay.model import BadRecord, Item, Request, Run
from replay.readers import detect
from replay.readers.base import HEAD_BYTES, ReadContext
from replay.readers.codex_rollout import READER as ROLLOUT
from replay.readers.codex_tui import READER as TUI


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


def read(reader, path: Path) -> list:
    return list(reader.read(ReadContext(path=path, file_hash="0" * 32)))


def of(records: list, cls: type) -> list:
    return [r for r in records if isinstance(r, cls)]


def leading_int(cell: str) -> int:
    return int(cell.lstrip("~").split()[0])


# Where the reader deliberately differs from the manifest (which counts raw events):
# - pharma requests: the manifest's "~714 (token_count events)" counts every non-null token_count event, but Codex
#   logs each one twice (after the model output and again after the tool output, identical total_token_usage),
#   two more after the compactions carry a zero last_token_usage with an unchanged total, and two are the
#   compactions' own summariser calls, which are not agent requests (their usage is in the context events):
#   714 - 364 - 2 - 2 = 346.
# - fixture tool calls: the manifest's 6 are function_call + custom_tool_call + tool_search_call; the reader also
#   counts the hosted web_search_call (it is a call in the model's context), 7.
# - TUI tool calls: the manifest's 31 are exec commands; the reader also counts the one apply_patch, 32.
EXPECTED = {
    "codex-fixture-agentsessions-small-compacted.jsonl": (2, 7),
    "codex-pharma-platform-019d20aa.jsonl": (346, 411),
    "codex-tui-sessionlog-binary-size-gpt5.jsonl": (34, 32),
}


def test_counts_match_manifest(corpus: Path) -> None:
    rows = manifest_rows(corpus, "codex-rollout")
    assert set(rows) == set(EXPECTED) == {f.name for f in (corpus / "codex-rollout").glob("*.jsonl")}
    manifest = {name: (leading_int(r), leading_int(c)) for name, (r, c) in rows.items()}
    assert manifest == {
        "codex-fixture-agentsessions-small-compacted.jsonl": (2, 6),
        "codex-pharma-platform-019d20aa.jsonl": (714, 411),
        "codex-tui-sessionlog-binary-size-gpt5.jsonl": (34, 31),
    }, "MANIFEST changed: re-check"
    for name, (requests, calls) in EXPECTED.items():
        path = corpus / "codex-rollout" / name
        reader = TUI if "tui" in name else ROLLOUT
        assert detect(path) is reader, name
        records = read(reader, path)
        n_calls = sum(1 for i in of(records, Item) if i.kind == "tool_call")
        assert (len(of(records, Request)), n_calls) == (requests, calls), name
    tui = of(read(TUI, corpus / "codex-rollout" / "codex-tui-sessionlog-binary-size-gpt5.jsonl"), Item)
    assert sum(1 for i in tui if i.kind == "tool_call" and i.tool_name == "exec_command") == 31


def test_rollout_usage_and_request_placement(corpus: Path) -> None:
    path = corpus / "codex-rollout" / "codex-pharma-platform-019d20aa.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    totals = [
        o["payload"]["info"]["total_token_usage"]
        for o in lines
        if o["type"] == "event_msg" and o["payload"]["type"] == "token_count" and o["payload"]["info"]
    ]
    records = read(ROLLOUT, path)
    reqs = of(records, Request)
    events = of(records, Run)[0].metadata["context_events"]
    assert (
        sum(r.output_tokens for r in reqs) + sum(e["usage"]["output"] for e in events) == totals[-1]["output_tokens"]
    ), "each response counted once, the summariser calls in their events"
    assert all(r.prompt_tokens == r.input_tokens + r.cache_read for r in reqs)
    assert all(r.ts and r.model == "gpt-5.3-codex-bak" for r in reqs)
    run = of(records, Run)[0]
    assert run.harness == "codex" and run.model == "gpt-5.3-codex-bak" and run.started_at
    items = of(records, Item)
    assert items[0].kind == "system" and items[0].text.startswith("You are Codex")
    first_call = next(i for i in items if i.kind == "tool_call")
    assert first_call.step == 1, "the call is output of request 0, so first seen by request 1"
    assert first_call.tool_name == "exec_command" and first_call.access
    patch = next(i for i in items if i.tool_name == "apply_patch")
    assert patch.access == "write" and patch.resource.endswith("backend/go.mod")
    results = {i.call_id for i in items if i.kind == "tool_result"}
    assert len(results) == 410  # one call was interrupted (turn_aborted) before its output


def test_compactions_are_summaries(corpus: Path) -> None:
    # the fixture's first compacted line (26) has an empty message and no compaction item: no summary to show
    cases = (("codex-pharma-platform-019d20aa.jsonl", 2), ("codex-fixture-agentsessions-small-compacted.jsonl", 5))
    for name, n in cases:
        summaries = [i for i in of(read(ROLLOUT, corpus / "codex-rollout" / name), Item) if i.kind == "summary"]
        assert len(summaries) == n, name
    real = [
        i
        for i in of(read(ROLLOUT, corpus / "codex-rollout" / "codex-pharma-platform-019d20aa.jsonl"), Item)
        if i.kind == "summary"
    ]
    assert all("summary" in s.text for s in real)


def test_tui_log(corpus: Path) -> None:
    records = read(TUI, corpus / "codex-rollout" / "codex-tui-sessionlog-binary-size-gpt5.jsonl")
    runs = of(records, Run)
    assert len(runs) == 2 and all(r.model == "gpt-5" for r in runs)  # /new starts a second session
    reqs = of(records, Request)
    assert reqs[0].prompt_tokens == 6034 and reqs[0].cache_read == 5537 and reqs[0].input_tokens == 497
    items = of(records, Item)
    reads = [i for i in items if i.kind == "tool_call" and i.access == "search"]
    assert reads and all(i.resource for i in reads)
    assert all(i.kind != "reasoning" or len(i.text) > 20 for i in items), "full reasoning texts, not deltas"


def test_sniff_rejects_other_formats(corpus: Path) -> None:
    for f in corpus.rglob("*"):
        if not f.is_file() or f.name == "MANIFEST.md":
            continue
        with f.open("rb") as fh:
            head = fh.read(HEAD_BYTES).decode("utf-8", "replace")
        is_tui = f.name.startswith("codex-tui")
        assert ROLLOUT.sniff(head, f) == (f.parent.name == "codex-rollout" and not is_tui), f.name
        assert TUI.sniff(head, f) == is_tui, f.name


def test_encrypted_reasoning_sized_by_its_request(corpus: Path) -> None:
    # Reasoning is logged encrypted (empty summary); the request that produced it reports reasoning_output_tokens,
    # which the server then counts in the prompt for the rest of the turn. The first reasoning item of a response
    # takes them; items flushed by a user turn with no request after them (aborted turns) have no size.
    path = corpus / "codex-rollout" / "codex-pharma-platform-019d20aa.jsonl"
    records = read(ROLLOUT, path)
    sizes = dict(of(records, Run)[0].metadata["reasoning_tokens"])
    items = {i.seq: i for i in of(records, Item)}
    reasoning = [i for i in items.values() if i.kind == "reasoning"]
    assert len(reasoning) == 343 and len(sizes) == 340 and all(items[s].kind == "reasoning" for s in sizes)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    first = next(
        o["payload"]["info"]["last_token_usage"]
        for o in lines
        if o["payload"].get("type") == "token_count" and o["payload"].get("info")
    )
    assert sizes[min(sizes)] == first["reasoning_output_tokens"] == 311
    assert sum(sizes.values()) <= sum(r.output_tokens for r in of(records, Request))


def test_codex_rs_estimate_of_encrypted_reasoning(corpus: Path) -> None:
    # codex-rs counts an encrypted reasoning item as (3/4 of its encrypted text's bytes - 650) / 4 tokens, rounded
    # up; the reader records that per item (runs.metadata.harness_estimates) for the codex-rs trigger.
    path = corpus / "codex-rollout" / "codex-pharma-platform-019d20aa.jsonl"
    records = read(ROLLOUT, path)
    estimates = dict(of(records, Run)[0].metadata["harness_estimates"])
    items = {i.seq: i for i in of(records, Item)}
    assert len(estimates) == 343 and all(items[s].kind == "reasoning" for s in estimates)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    encrypted = [
        o["payload"]["encrypted_content"]
        for o in lines
        if o["type"] == "response_item" and o["payload"].get("type") == "reasoning"
    ]
    first = len(encrypted[0])
    assert estimates[min(estimates)] == (max(first * 3 // 4 - 650, 0) + 3) // 4 == 416


def test_compaction_events_on_the_corpus(corpus: Path) -> None:
    # codex-pharma: the summariser calls (token_count lines 782 and 1694, then `compacted` 783 and 1695) are not
    # requests; the first agent requests after them (lines 792, 1702) recorded 15,784 and 14,900 prompt tokens.
    # (With the summariser calls counted as requests, as before, these were requests 137 and 288.)
    records = read(ROLLOUT, corpus / "codex-rollout" / "codex-pharma-platform-019d20aa.jsonl")
    run = of(records, Run)[0]
    reqs = {r.step: r for r in of(records, Request)}
    items = {i.seq: i for i in of(records, Item)}
    events = run.metadata["context_events"]
    assert [(e["step"], e["line"], e["usage"]) for e in events] == [
        (136, 783, {"input": 211015, "cache_read": 0, "output": 1536, "prompt": 211015}),
        (286, 1695, {"input": 210138, "cache_read": 0, "output": 1764, "prompt": 210138}),
    ]
    assert [(reqs[e["step"]].line, reqs[e["step"]].prompt_tokens) for e in events] == [(792, 15784), (1702, 14900)]
    assert [reqs[e["step"] - 1].prompt_tokens for e in events] == [216116, 214827]
    assert all(r.line not in (782, 1694) for r in reqs.values())
    for e in events:
        summary = items[e["summary_seq"]]
        assert summary.kind == "summary" and summary.step == e["step"]
        assert summary.text.startswith("Another language model started to solve this problem")
        assert e["drop"] == [[1, e["summary_seq"]]], "everything but the base instructions (seq 0) is replaced"
        assert e["trigger"] is None and e["pre_tokens"] is None
    assert items[0].kind == "system" and items[0].text.startswith("You are Codex")
    # replacement_history after the summary: the kept user messages with the re-injected developer message and
    # environment context between them (3 + 2 + 1 in the first compaction, 9 + 2 + 1 in the second)
    kept = [
        [
            (i.kind, i.text[:20])
            for i in items.values()
            if i.step == e["step"] and i.seq > e["summary_seq"] and i.line == e["line"]
        ]
        for e in events
    ]
    assert [len(k) for k in kept] == [6, 12]
    assert kept[0][3] == ("system", "<permissions instruc") and kept[0][4] == ("user_text", "<environment_context")
    assert sum(1 for kind, _ in kept[1] if kind == "user_text") == 11
    fixture = read(ROLLOUT, corpus / "codex-rollout" / "codex-fixture-agentsessions-small-compacted.jsonl")
    fx = of(fixture, Run)[0].metadata["context_events"]
    assert [(e["step"], e["line"], e["summary_seq"] is None) for e in fx] == [
        (1, 26, True),
        (1, 47, False),
        (1, 69, False),
        (1, 81, False),
        (2, 89, False),
        (2, 111, False),
    ]
    assert all("usage" not in e for e in fx), "no summariser call is logged before the fixture's compactions"


def test_zeroed_token_count_is_a_request_of_unknown_usage(corpus: Path) -> None:
    """The fixture's line 87 token_count counts 0 input and 0 output tokens (its total fell from 16,422 to 0, its
    window is 0, its timestamp "[trimmed for fixture]"): a call whose counts were zeroed, not a call of $0. Read as
    $0 usage, simulate priced the replayed prompt against a $0 bill (+222%); its window no longer replaces 258,400."""
    path = corpus / "codex-rollout" / "codex-fixture-agentsessions-small-compacted.jsonl"
    line = path.read_text(encoding="utf-8").splitlines()[86]
    zeroed = json.loads(line)["payload"]["info"]
    assert zeroed["last_token_usage"]["input_tokens"] == 0 and zeroed["model_context_window"] == 0
    records = read(ROLLOUT, path)
    requests = of(records, Request)
    assert [(r.line, r.prompt_tokens, r.cache_read, r.output_tokens) for r in requests] == [
        (22, 16341, 3584, 81),
        (87, None, None, None),
    ]
    assert of(records, Run)[0].metadata["model_context_window"] == 258400


def rollout(tmp_path: Path, lines: list[tuple[str, dict]]) -> Path:
    path = tmp_path / "rollout.jsonl"
    path.write_text(
        "\n".join(
            json.dumps({"timestamp": f"2026-01-01T00:00:{k:02d}Z", "type": t, "payload": p})
            for k, (t, p) in enumerate(lines)
        )
        + "\n"
    )
    return path


def tokens(total: int, prompt: int, output: int = 10) -> tuple[str, dict]:
    last = {"input_tokens": prompt, "cached_input_tokens": 0, "output_tokens": output, "total_tokens": prompt + output}
    return "event_msg", {
        "type": "token_count",
        "info": {"total_token_usage": {"total_tokens": total}, "last_token_usage": last},
    }


def message(role: str, text: str) -> dict:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def test_hand_made_compaction(tmp_path: Path) -> None:
    summary = "PREFIX summary of the work"
    path = rollout(
        tmp_path,
        [
            ("session_meta", {"id": "s", "base_instructions": {"text": "You are Codex"}}),
            ("response_item", message("developer", "<permissions>")),
            ("response_item", message("user", "build it")),
            ("response_item", {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"}),
            tokens(100, 90),
            ("response_item", {"type": "function_call_output", "call_id": "c1", "output": "ok"}),
            tokens(100, 90),
            tokens(300, 180, 20),  # the summariser's call
            (
                "compacted",
                {
                    "message": summary,
                    "replacement_history": [
                        message("user", "build it"),
                        message("developer", "<permissions>"),
                        message("user", summary),
                        {"type": "ghost_snapshot", "ghost_commit": {"id": "g"}},
                    ],
                },
            ),
            tokens(300, 0, 0),
            ("response_item", message("assistant", "resuming")),
            tokens(400, 40),
        ],
    )
    records = read(ROLLOUT, path)
    reqs = of(records, Request)
    assert [(r.step, r.prompt_tokens) for r in reqs] == [(0, 90), (1, 40)]
    items = of(records, Item)
    assert [(i.seq, i.kind, i.text, i.step) for i in items] == [
        (0, "system", "You are Codex", 0),
        (1, "system", "<permissions>", 0),
        (2, "user_text", "build it", 0),
        (3, "tool_call", "", 1),
        (4, "tool_result", "ok", 1),
        (5, "summary", summary, 1),
        (6, "user_text", "build it", 1),
        (7, "system", "<permissions>", 1),
        (8, "assistant_text", "resuming", 2),
    ]
    assert of(records, Run)[0].metadata["context_events"] == [
        {
            "kind": "compaction",
            "step": 1,
            "drop": [[1, 5]],
            "summary_seq": 5,
            "trigger": None,
            "pre_tokens": None,
            "line": 9,
            "usage": {"input": 180, "cache_read": 0, "output": 20, "prompt": 180},
            "resent": [[6, 8]],
        }
    ]


def test_compaction_without_a_logged_summariser_call(tmp_path: Path) -> None:
    # the turn's last request, then the turn ends and a compaction follows with no token_count of its own: the
    # request stays a request, and the event has no usage
    path = rollout(
        tmp_path,
        [
            ("session_meta", {"id": "s", "base_instructions": {"text": "You are Codex"}}),
            ("response_item", message("user", "hi")),
            ("response_item", message("assistant", "hello")),
            tokens(100, 90),
            ("event_msg", {"type": "task_complete"}),
            ("compacted", {"message": "S", "replacement_history": [message("user", "hi"), message("user", "S")]}),
        ],
    )
    records = read(ROLLOUT, path)
    assert [r.prompt_tokens for r in of(records, Request)] == [90]
    assert of(records, Run)[0].metadata["context_events"] == [
        {
            "kind": "compaction",
            "step": 1,
            "drop": [[1, 3]],
            "summary_seq": 3,
            "trigger": None,
            "pre_tokens": None,
            "line": 6,
            "resent": [[4, 5]],
        }
    ]


def test_tui_command_result_is_what_the_model_was_sent(corpus: Path) -> None:
    """codex-rs of the TUI-log era sent stdout when a command exited 0 and stderr otherwise: the successful
    ``just fix`` (cargo clippy; log line 4903, 5,120 characters of stderr) reached the model as no output, which is
    why the recorded prompt grew by 205 tokens at request 10 where the log shows 5 kB."""
    records = read(TUI, corpus / "codex-rollout" / "codex-tui-sessionlog-binary-size-gpt5.jsonl")
    items = of(records, Item)
    (clippy,) = [i for i in items if i.kind == "tool_result" and i.line == 4903]
    assert clippy.resource == "just fix" and not clippy.is_error
    sent = json.loads(clippy.text)  # format_exec_output's JSON: the output and the metadata
    assert sent["output"] == "" and sent["metadata"]["exit_code"] == 0 and sent["metadata"]["duration_seconds"] > 0
    failed = [json.loads(i.text) for i in items if i.kind == "tool_result" and i.is_error and i.line > 0]
    assert failed and all(f["output"] and f["metadata"]["exit_code"] != 0 for f in failed)  # failures: stderr


# Later codex-rs rollout schema (openai/codex protocol/src/models.rs ResponseItem, protocol.rs TokenUsageInfo and
# TurnStartedEvent, the rollout crate's RolloutItemWire); each test writes the lines as that writer serialises them.


def usage(input_tokens: int, output_tokens: int, total: int) -> dict:
    return {
        "input_tokens": input_tokens,
        "cached_input_tokens": 0,
        "output_tokens": output_tokens,
        "reasoning_output_tokens": 0,
        "total_tokens": total,
    }


def test_window_filled_token_count_is_not_a_request(tmp_path: Path) -> None:
    """A request refused with ContextWindowExceeded makes codex-rs send a token_count filled to the window
    (TokenUsageInfo::fill_to_context_window: total_tokens = the window, every other count 0; last = the rest). It
    was read as a request of unknown usage: one request too many, and an unbilled one."""
    window = 258_400
    filled = {
        "type": "token_count",
        "info": {
            "total_token_usage": usage(0, 0, window),
            "last_token_usage": usage(0, 0, window - 250_010),
            "model_context_window": window,
        },
        "rate_limits": None,
    }
    after = {
        "type": "token_count",
        "info": {
            "total_token_usage": usage(9_000, 40, window + 9_040),
            "last_token_usage": usage(9_000, 40, 9_040),
            "model_context_window": window,
        },
        "rate_limits": None,
    }
    path = rollout(
        tmp_path,
        [
            ("session_meta", {"id": "s", "base_instructions": {"text": "You are Codex"}}),
            ("response_item", message("user", "read everything")),
            tokens(250_010, 250_000),
            ("event_msg", filled),
            ("event_msg", {"type": "turn_aborted", "turn_id": "t1", "reason": "interrupted"}),
            ("response_item", message("user", "try again")),
            ("event_msg", after),
        ],
    )
    records = read(ROLLOUT, path)
    assert [(r.line, r.prompt_tokens) for r in of(records, Request)] == [(3, 250_000), (7, 9_000)]
    assert of(records, Run)[0].metadata["window_exceeded"] == [4]


def test_inter_agent_messages_are_model_input(tmp_path: Path) -> None:
    """codex-rs records another agent's message into history as an ``agent_message`` item but logs only the
    ``inter_agent_communication`` line; an encrypted one is sent as a header and the encrypted payload
    (InterAgentCommunication::to_model_input_item). Both were skipped: text the model read, missing."""
    plain = {
        "author": "/root",
        "recipient": "/root/worker",
        "other_recipients": [],
        "content": "review the diff",
        "trigger_turn": True,
    }
    encrypted = {
        "author": "/root/worker",
        "recipient": "/root",
        "other_recipients": [],
        "content": "",
        "encrypted_content": "gAAAA-opaque",
        "trigger_turn": False,
    }
    agent_item = {
        "type": "agent_message",
        "author": "/root/reviewer",
        "recipient": "/root",
        "content": [
            {"type": "input_text", "text": "found two bugs"},
            {"type": "encrypted_content", "encrypted_content": "gAAAA-more"},
        ],
    }
    path = rollout(
        tmp_path,
        [
            ("session_meta", {"id": "s", "base_instructions": {"text": "You are Codex"}}),
            ("inter_agent_communication", plain),
            tokens(100, 90),
            ("inter_agent_communication", encrypted),
            ("response_item", agent_item),
            tokens(200, 150),
        ],
    )
    records = read(ROLLOUT, path)
    agent = [(i.seq, i.kind, i.text, i.step, i.turn) for i in of(records, Item) if i.seq > 0]
    assert agent == [  # another agent's message is a user-turn boundary in codex-rs
        (1, "user_text", "review the diff", 0, 1),
        (2, "user_text", "Message Type: MESSAGE\nTask name: /root\nSender: /root/worker\nPayload:\n", 1, 2),
        (3, "user_text", "found two bugs", 1, 3),
    ]
    assert of(records, Run)[0].metadata["encrypted_inputs"] == [2, 3]
    assert ROLLOUT.sniff(path.read_text().split("\n", 2)[1], path), "a new line type alone is a rollout line"


def test_additional_tools_and_tool_output_images(tmp_path: Path) -> None:
    """``additional_tools`` puts tool definitions in the history (they are sent); a tool output given as content
    items sends its ``input_image`` parts as images (view_image). Both were missed: the definitions not read at
    all, the image neither counted as one nor its base64 kept out of the text."""
    tools = [{"type": "function", "name": "lookup_ticket", "description": "Look up a ticket", "parameters": {}}]
    image = "data:image/png;base64," + "A" * 400
    path = rollout(
        tmp_path,
        [
            ("session_meta", {"id": "s", "base_instructions": {"text": "You are Codex"}}),
            ("response_item", message("user", "look at the screenshot")),
            ("response_item", {"type": "additional_tools", "role": "developer", "tools": tools}),
            ("response_item", {"type": "function_call", "name": "view_image", "arguments": "{}", "call_id": "c1"}),
            tokens(100, 90),
            (
                "response_item",
                {
                    "type": "function_call_output",
                    "call_id": "c1",
                    "output": [
                        {"type": "input_text", "text": "screenshot.png"},
                        {"type": "input_image", "image_url": image},
                    ],
                },
            ),
            ("response_item", {"type": "function_call", "name": "view_image", "arguments": "{}", "call_id": "c2"}),
            tokens(300, 190),
            (
                "response_item",
                {
                    "type": "custom_tool_call_output",
                    "call_id": "c2",
                    "output": [{"type": "input_image", "image_url": image}],
                },
            ),
            tokens(500, 260),
        ],
    )
    items = [(i.kind, i.text) for i in of(read(ROLLOUT, path), Item)]
    assert items[2] == ("tool_defs", json.dumps(tools))
    assert items[3:] == [
        ("tool_call", ""),
        ("tool_result", "screenshot.png"),
        ("image", "[image]"),
        ("tool_call", ""),
        ("tool_result", ""),
        ("image", "[image]"),
    ]


def test_remote_compaction_v2_replacement_history(tmp_path: Path) -> None:
    """Remote compaction v2 (codex-rs build_v2_compacted_history) keeps user and agent messages and appends the
    server's encrypted ``context_compaction`` item last; ``message`` is empty. The summary was not found (only a
    ``compaction`` item was), so the event had no summary and the kept agent message was dropped."""
    history = [
        message("user", "build it"),
        {
            "type": "agent_message",
            "author": "/root/worker",
            "recipient": "/root",
            "content": [{"type": "input_text", "text": "done: 3 files"}],
        },
        {"type": "context_compaction", "encrypted_content": "gAAAA-summary"},
    ]
    path = rollout(
        tmp_path,
        [
            ("session_meta", {"id": "s", "base_instructions": {"text": "You are Codex"}}),
            ("response_item", message("user", "build it")),
            tokens(100, 90),
            ("compacted", {"message": "", "replacement_history": history, "window_number": 2}),
            tokens(200, 60),
        ],
    )
    records = read(ROLLOUT, path)
    (event,) = of(records, Run)[0].metadata["context_events"]
    assert event["summary_encrypted"] is True and event["summary_seq"] == 2
    items = {i.seq: (i.kind, i.text) for i in of(records, Item)}
    assert [items[s] for s in range(2, 5)] == [
        ("summary", ""),
        ("user_text", "build it"),
        ("user_text", "done: 3 files"),
    ]
    assert event["resent"] == [[3, 5]] and event["drop"] == [[1, 2]]


def test_context_compaction_outside_compacted_line_is_flagged(tmp_path: Path) -> None:
    path = rollout(
        tmp_path,
        [
            ("session_meta", {"id": "s", "base_instructions": {"text": "You are Codex"}}),
            ("response_item", message("user", "hi")),
            ("response_item", {"type": "context_compaction", "encrypted_content": "gAAAA"}),
            tokens(100, 90),
        ],
    )
    warnings = of(read(ROLLOUT, path), Run)[0].metadata["warnings"]
    assert any("context_compaction" in str(w) and "not read" in str(w) for w in warnings)


def test_turn_started_gives_the_window(tmp_path: Path) -> None:
    """TurnStartedEvent (``task_started``) carries the turn's model_context_window; a run whose token_counts carry
    none (or were zeroed) still gets the window the codex-rs trigger is measured on."""
    path = rollout(
        tmp_path,
        [
            ("session_meta", {"id": "s", "base_instructions": {"text": "You are Codex"}}),
            ("event_msg", {"type": "task_started", "turn_id": "t1", "model_context_window": 258_400}),
            ("response_item", message("user", "hi")),
            tokens(100, 90),
        ],
    )
    assert of(read(ROLLOUT, path), Run)[0].metadata["model_context_window"] == 258_400


def tui(tmp_path: Path, records: list[dict]) -> Path:
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return path


def test_tui_token_count_event_shape(tmp_path: Path) -> None:
    """codex-rs later wraps token_count as TokenCountEvent (``info`` with the cumulative total and the call's
    ``last_token_usage``; ``rate_limits``) and sends it again unchanged on rate-limit updates. Read flat, every one
    was a request with no usage."""

    def event(msg: dict) -> dict:
        return {
            "ts": "2026-01-01T00:00:01Z",
            "dir": "to_tui",
            "kind": "codex_event",
            "payload": {"id": "1", "msg": msg},
        }

    first = {"total_token_usage": usage(6_000, 50, 6_050), "last_token_usage": usage(6_000, 50, 6_050)}
    second = {"total_token_usage": usage(13_000, 80, 13_080), "last_token_usage": usage(7_000, 30, 7_030)}
    path = tui(
        tmp_path,
        [
            {"ts": "2026-01-01T00:00:00Z", "dir": "meta", "kind": "session_start", "model": "gpt-5"},
            event({"type": "session_configured", "session_id": "s", "model": "gpt-5"}),
            event({"type": "token_count", "info": None, "rate_limits": {"primary": None}}),
            event({"type": "token_count", "info": {**first, "model_context_window": 258_400}, "rate_limits": None}),
            event({"type": "agent_message", "message": "hello"}),
            event({"type": "token_count", "info": {**first, "model_context_window": 258_400}, "rate_limits": {}}),
            event({"type": "token_count", "info": {**second, "model_context_window": 258_400}, "rate_limits": None}),
        ],
    )
    records = read(TUI, path)
    assert [(r.prompt_tokens, r.output_tokens) for r in of(records, Request)] == [(6_000, 50), (7_000, 30)]
    assert of(records, Run)[0].metadata["model_context_window"] == 258_400


def test_tui_log_without_protocol_events_says_so(tmp_path: Path) -> None:
    """Later codex-rs TUI session logs (tui/src/session_log.rs) hold only UI events and ops: no model call. The
    reader yielded nothing at all; it now says why and where the calls are."""
    path = tui(
        tmp_path,
        [
            {"ts": "2026-01-01T00:00:00Z", "dir": "meta", "kind": "session_start", "model": "gpt-5.4"},
            {"ts": "2026-01-01T00:00:01Z", "dir": "to_tui", "kind": "insert_history_cell", "lines": 3},
            {"ts": "2026-01-01T00:00:02Z", "dir": "from_tui", "kind": "op", "payload": {"type": "interrupt"}},
            {"ts": "2026-01-01T00:00:03Z", "dir": "meta", "kind": "session_end"},
        ],
    )
    assert detect(path) is TUI
    (bad,) = read(TUI, path)
    assert isinstance(bad, BadRecord) and bad.line == 1 and "rollout" in bad.reason


def test_pruned_replacement_image_is_still_an_image(tmp_path: Path) -> None:
    """From the second compaction on (``window_number`` > 1) codex-rs persists a kept user message's inline base64
    image as a fixed text (rollout_payload.rs PRUNED_INLINE_IMAGE_TEXT); the model was still sent the image. It was
    read as a ~70-character text."""
    pruned = "[inline base64 image payload pruned after repeated context compaction]"
    kept = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "what is on this screen?"}, {"type": "input_text", "text": pruned}],
    }
    path = rollout(
        tmp_path,
        [
            ("session_meta", {"id": "s", "base_instructions": {"text": "You are Codex"}}),
            ("response_item", message("user", "hi")),
            tokens(100, 90),
            ("compacted", {"message": "S", "replacement_history": [kept, message("user", "S")], "window_number": 2}),
            tokens(200, 60),
        ],
    )
    items = [(i.kind, i.text) for i in of(read(ROLLOUT, path), Item) if i.line == 4]
    assert items == [("summary", "S"), ("user_text", "what is on this screen?"), ("image", "[image]")]


def test_inherited_history_base_is_flagged(tmp_path: Path) -> None:
    """A paginated thread (SessionMeta ``history_mode`` "paginated") may inherit another rollout's prefix
    (``history_base``: that rollout's id, ordinal and byte offset); the prompts then hold context this file lacks."""
    base = {"thread_id": "019f-parent", "end_ordinal_exclusive": 42, "end_byte_offset": 9000}
    meta = {"id": "s", "history_mode": "paginated", "history_base": base, "forked_from_id": "019f-parent"}
    path = rollout(tmp_path, [("session_meta", meta), ("response_item", message("user", "go on")), tokens(100, 90)])
    run = of(read(ROLLOUT, path), Run)[0]
    assert run.metadata["history_base"] == base and run.metadata["forked_from_id"] == "019f-parent"
    assert any("019f-parent" in str(w) and "ordinal 42" in str(w) for w in run.metadata["warnings"])


def test_cache_writes_are_inside_the_prompt(tmp_path: Path) -> None:
    """codex-rs's TokenUsage takes ``cache_write_input_tokens`` from ``input_tokens_details.cache_write_tokens``:
    like the cached part, inside ``input_tokens`` (codex-api's test: 100 input = 40 cached + 60 written, total 110
    with 10 output). The uncached input was read as 60, not 0: the written tokens billed twice."""
    last = {
        "input_tokens": 100,
        "cached_input_tokens": 40,
        "cache_write_input_tokens": 60,
        "output_tokens": 10,
        "reasoning_output_tokens": 5,
        "total_tokens": 110,
    }
    count = {"type": "token_count", "info": {"total_token_usage": last, "last_token_usage": last}}
    path = rollout(
        tmp_path,
        [
            ("session_meta", {"id": "s", "base_instructions": {"text": "You are Codex"}}),
            ("response_item", message("user", "hi")),
            ("event_msg", count),
        ],
    )
    (req,) = of(read(ROLLOUT, path), Request)
    assert (req.prompt_tokens, req.cache_read, req.cache_write, req.input_tokens) == (100, 40, 60, 0)
    assert req.input_tokens + req.cache_read + req.cache_write == req.prompt_tokens


def test_replacement_history_by_reference(tmp_path: Path) -> None:
    """codex-rs's CompactedHistoryEntry (``inline`` with the item, or ``reference`` / ``reference_v2`` naming an
    earlier logged item by id) can stand for the replacement history; with no ``replacement_history`` the kept
    messages were lost. A reference to nothing logged is warned about."""
    kept = {**message("user", "build it"), "id": "msg_1"}
    entries = [
        {"type": "reference_v2", "item_id": "msg_1", "source_digest": "sha256-response-item-envelope-v1:" + "0" * 64},
        {"type": "inline", "item": message("user", "S")},
        {"type": "reference", "item_id": "msg_gone"},
    ]
    path = rollout(
        tmp_path,
        [
            ("session_meta", {"id": "s", "base_instructions": {"text": "You are Codex"}}),
            ("response_item", kept),
            tokens(100, 90),
            ("compacted", {"message": "S", "replacement_history_entries": entries}),
            tokens(200, 60),
        ],
    )
    records = read(ROLLOUT, path)
    run = of(records, Run)[0]
    assert [(i.kind, i.text) for i in of(records, Item) if i.line == 4] == [("summary", "S"), ("user_text", "build it")]
    assert run.metadata["context_events"][0]["resent"] == [[3, 4]]
    assert any("msg_gone" in str(w) for w in run.metadata["warnings"])


def test_tool_output_cut_to_the_turns_truncation_policy(tmp_path: Path) -> None:
    """codex-rs records a tool output into the model's history cut to the turn's ``truncation_policy`` x 1.2
    (ContextManager::process_item), while the rollout keeps it whole: 4 bytes a token, half the budget from each
    end, a ``…N tokens truncated…`` marker between. Read whole, a long MCP output was counted in full."""
    long = "x" * 30 + "y" * 40 + "z" * 30  # 100 bytes against 10 x 1.2 = 12 tokens = 48 bytes
    items = [
        {"type": "input_text", "text": "a" * 20},  # 5 tokens of 12
        {"type": "input_text", "text": "b" * 40},  # 10 tokens: cut to the 7 left (28 bytes)
        {"type": "input_text", "text": "c" * 8},  # nothing left: omitted
        {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
    ]
    path = rollout(
        tmp_path,
        [
            ("session_meta", {"id": "s", "base_instructions": {"text": "You are Codex"}}),
            ("turn_context", {"model": "gpt-5.2-codex", "truncation_policy": {"mode": "tokens", "limit": 10}}),
            ("response_item", message("user", "call the tools")),
            ("response_item", {"type": "function_call", "name": "mcp__db__dump", "arguments": "{}", "call_id": "c1"}),
            ("response_item", {"type": "custom_tool_call", "name": "apply_patch", "input": "x", "call_id": "c2"}),
            ("response_item", {"type": "tool_search_call", "call_id": "c3", "execution": "client", "arguments": {}}),
            tokens(100, 90),
            ("response_item", {"type": "function_call_output", "call_id": "c1", "output": long}),
            ("response_item", {"type": "custom_tool_call_output", "call_id": "c2", "output": items}),
            (
                "response_item",
                {
                    "type": "tool_search_output",
                    "call_id": "c3",
                    "status": "completed",
                    "execution": "client",
                    "tools": [{"name": long}],
                },
            ),
            tokens(300, 190),
        ],
    )
    results = [i.text for i in of(read(ROLLOUT, path), Item) if i.kind == "tool_result"]
    assert results[0] == "x" * 24 + "…13 tokens truncated…" + "z" * 24
    assert results[1] == "\n".join(
        ["a" * 20, "b" * 14 + "…3 tokens truncated…" + "b" * 14, "[omitted 1 text items ...]"]
    )
    assert long in results[2], "process_item cuts function and custom tool outputs only"


def test_byte_truncation_policy_keeps_whole_characters(tmp_path: Path) -> None:
    path = rollout(
        tmp_path,
        [
            ("session_meta", {"id": "s", "base_instructions": {"text": "You are Codex"}}),
            ("turn_context", {"model": "gpt-4.1", "truncation_policy": {"mode": "bytes", "limit": 10}}),
            ("response_item", {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"}),
            tokens(100, 90),
            ("response_item", {"type": "function_call_output", "call_id": "c1", "output": "é" * 30}),
            tokens(200, 150),
        ],
    )
    (result,) = [i.text for i in of(read(ROLLOUT, path), Item) if i.kind == "tool_result"]
    assert result == "é" * 3 + "…24 chars truncated…" + "é" * 3  # 12 bytes kept: 6 from each end


@pytest.mark.parametrize(("model", "cut"), [("gpt-5.5", True), ("gpt-5.6-sol", True), ("gpt-4.1", False)])
def test_a_turn_without_truncation_policy_is_cut_to_the_models_catalog_policy(
    tmp_path: Path, model: str, cut: bool
) -> None:
    """Codex Desktop 0.142-0.144 logs ``turn_context`` without ``truncation_policy``; codex-rs still cuts each output
    to the model's catalog policy (gpt-5.5 and gpt-5.6-sol: 10,000 tokens, x 1.2 = 48,000 bytes). Read whole, a
    208 kB read_thread output counted 56k tokens where the recorded prompt grew by 13.5k. A model the catalog
    table does not list keeps its output whole."""
    body = "".join(f"{n:07d}\n" for n in range(25_000))  # 200,000 bytes
    path = rollout(
        tmp_path,
        [
            ("session_meta", {"id": "s", "cli_version": "0.142.5", "originator": "Codex Desktop"}),
            ("turn_context", {"model": model, "cwd": "/w"}),
            ("response_item", message("user", "read the other thread")),
            ("response_item", {"type": "function_call", "name": "read_thread", "arguments": "{}", "call_id": "c1"}),
            tokens(100, 90),
            ("response_item", {"type": "function_call_output", "call_id": "c1", "output": body}),
            tokens(12_200, 190),
        ],
    )
    (result,) = [i.text for i in of(read(ROLLOUT, path), Item) if i.kind == "tool_result"]
    if cut:
        assert len(result.encode()) < 48_100 and "tokens truncated…" in result
        assert result.startswith(body[:24_000]) and result.endswith(body[-24_000:])
    else:
        assert result == body


def test_usage_logged_before_its_output(tmp_path: Path) -> None:
    """codex-rs 0.39 records a turn's response items (each call with its output) only after the response completed,
    so the token_count comes first: the output after a request is that request's, in the prompt from the next one
    on. Read the later way round, every output landed one request late and the prompt fit was 5% off."""
    call = {"type": "function_call", "name": "shell", "arguments": '{"command":["ls"]}', "call_id": "c1"}
    path = rollout(
        tmp_path,
        [
            ("session_meta", {"id": "s", "cli_version": "0.39.0", "instructions": None}),
            ("response_item", message("user", "<environment_context>")),
            ("response_item", message("user", "list the files")),
            tokens(110, 100),
            ("response_item", {"type": "reasoning", "summary": [], "content": None, "encrypted_content": None}),
            ("response_item", message("assistant", "listing")),
            ("response_item", call),
            ("response_item", {"type": "function_call_output", "call_id": "c1", "output": "a.txt"}),
            tokens(250, 130),
            ("response_item", message("assistant", "one file")),
        ],
    )
    records = read(ROLLOUT, path)
    assert [(r.step, r.line, r.prompt_tokens) for r in of(records, Request)] == [(0, 4, 100), (1, 9, 130)]
    assert [(i.kind, i.step) for i in of(records, Item)] == [
        ("user_text", 0),
        ("user_text", 0),
        ("reasoning", 1),
        ("assistant_text", 1),
        ("tool_call", 1),
        ("tool_result", 1),
        ("assistant_text", 2),
    ]
    assert of(records, Run)[0].metadata["usage_before_output"] is True


def test_usage_after_its_output_is_not_read_as_before(tmp_path: Path) -> None:
    """Later codex-rs logs the output first and its token_count after it (and again after the tool output): the
    output is held for the request it follows, and the rollout is not marked ``usage_before_output``."""
    call = {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"}
    path = rollout(
        tmp_path,
        [
            ("session_meta", {"id": "s", "cli_version": "0.116.0"}),
            ("response_item", message("user", "list the files")),
            ("response_item", call),
            tokens(110, 100),
            ("response_item", {"type": "function_call_output", "call_id": "c1", "output": "a.txt"}),
            tokens(110, 100),
            ("response_item", message("assistant", "one file")),
            tokens(250, 130),
        ],
    )
    records = read(ROLLOUT, path)
    assert [(r.step, r.prompt_tokens) for r in of(records, Request)] == [(0, 100), (1, 130)]
    assert [(i.kind, i.step) for i in of(records, Item)] == [
        ("user_text", 0),
        ("tool_call", 1),
        ("tool_result", 1),
        ("assistant_text", 2),
    ]
    assert "usage_before_output" not in of(records, Run)[0].metadata
