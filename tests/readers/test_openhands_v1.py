"""OpenHands V1 reader: corpus conversation folders, the event stream, eval output lines, condensation, detection."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from replay.metrics.prices import DEFAULT_PRICING
from replay.model import BadRecord, Item, Request, Run
from replay.policies.presets import PRESETS
from replay.readers import detect, folder_reader
from replay.readers.base import ReadContext
from replay.readers.openhands import READER as V0
from replay.readers.openhands_v1 import READER

V1 = "openhands-v1"


def read(path: Path) -> list:
    return list(READER.read(ReadContext(path=path, file_hash="0" * 32)))


def of(records: list, cls: type) -> list:
    return [r for r in records if isinstance(r, cls)]


def test_conversation_folder_joins_base_state_usage(corpus: Path) -> None:
    folder = corpus / V1 / "ohv1-sdk-conv-cd945624-gpt4omini"
    assert folder_reader(folder)[0] is READER and detect(folder) is READER
    records = read(folder)
    assert not of(records, BadRecord)
    (run,) = of(records, Run)
    assert run.model == "openai/gpt-4o-mini" and run.metadata["execution_status"] == "finished"
    reqs = of(records, Request)
    assert [(q.prompt_tokens, q.cache_read, q.input_tokens, q.output_tokens) for q in reqs] == [
        (3778, 0, 3778, 36),
        (3869, 3712, 157, 32),
        (3936, 3840, 96, 26),
    ]
    items = of(records, Item)
    assert [i.kind for i in items] == [
        "system",
        "tool_defs",
        "user_text",
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_result",
        "user_text",
        "assistant_text",
    ]
    call, result = items[3], items[4]
    assert (call.step, result.step, call.call_id) == (1, 1, result.call_id)
    assert (call.tool_name, call.resource, call.access) == ("terminal", "tool_output.txt", "write")
    assert json.loads(call.args)["command"] == "pwd > tool_output.txt"
    assert items[-1].step == 3 and items[-2].turn == 2


def test_cli_trajectories_count_one_request_per_response(corpus: Path) -> None:
    for name, requests, calls in (
        ("ohv1-cli-traj-confirmation_mode", 6, 3),
        ("ohv1-cli-traj-creating_agent_plan", 3, 2),
    ):
        records = read(corpus / V1 / name)
        assert (len(of(records, Request)), sum(i.kind == "tool_call" for i in of(records, Item))) == (requests, calls)
        assert all(q.prompt_tokens is None for q in of(records, Request))  # no base_state.json: no usage
        reasoning = [i for i in of(records, Item) if i.kind == "reasoning"]
        assert reasoning and all(i.role == "assistant" for i in reasoning)


def test_event_stream_cumulative_stats_become_per_request_usage(corpus: Path) -> None:
    path = corpus / V1 / "ohv1-sdk-goal-fixture-minimax-m27.events.jsonl"
    assert detect(path) is READER
    records = read(path)
    reqs = of(records, Request)
    assert [q.prompt_tokens for q in reqs] == [596, 35895 - 596, 71474 - 35895, 107458 - 71474]
    assert reqs[2].cache_read == 34536 - 1115 and reqs[2].input_tokens == reqs[2].prompt_tokens - reqs[2].cache_read
    calls = [i for i in of(records, Item) if i.kind == "tool_call"]
    assert [c.step for c in calls] == [2, 4]  # each action follows the stats change that opened its request
    assert of(records, Run)[0].model == "litellm_proxy/minimax-m2.7"


def _events() -> list[dict]:
    """A small V1 history: system, user, two parallel calls of one response, a condensation, a final message."""
    return [
        {
            "kind": "SystemPromptEvent",
            "id": "s",
            "source": "agent",
            "system_prompt": {"type": "text", "text": "sys"},
            "tools": [{"name": "terminal"}],
        },
        {
            "kind": "MessageEvent",
            "id": "u",
            "source": "user",
            "llm_message": {"role": "user", "content": [{"type": "text", "text": "fix it"}]},
        },
        *[
            {
                "kind": "ActionEvent",
                "id": f"a{n}",
                "source": "agent",
                "tool_name": "file_editor",
                "tool_call_id": f"c{n}",
                "tool_call": {
                    "id": f"c{n}",
                    "name": "file_editor",
                    "arguments": json.dumps({"command": "view", "path": f"/w/f{n}.py"}),
                },
                "llm_response_id": "r1",
                "thought": [{"type": "text", "text": "look"}] if n == 1 else [],
            }
            for n in (1, 2)
        ],
        *[
            {
                "kind": "ObservationEvent",
                "id": f"o{n}",
                "source": "environment",
                "tool_name": "file_editor",
                "tool_call_id": f"c{n}",
                "observation": {"content": [{"type": "text", "text": f"body {n}"}]},
            }
            for n in (1, 2)
        ],
        {
            "kind": "Condensation",
            "id": "k",
            "source": "environment",
            "forgotten_event_ids": ["a1", "o1"],
            "summary": "viewed f1",
            "llm_response_id": "cond-1",
        },
        {
            "kind": "MessageEvent",
            "id": "m",
            "source": "agent",
            "llm_response_id": "r2",
            "llm_message": {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        },
    ]


def test_eval_output_line_is_a_run_and_the_v0_reader_does_not_claim_it(tmp_path: Path) -> None:
    usage = [
        {
            "model": "m",
            "prompt_tokens": 100,
            "completion_tokens": 5,
            "cache_read_tokens": 60,
            "cache_write_tokens": 10,
            "response_id": "r1",
        }
    ]
    line = {
        "instance_id": "repo__1",
        "instruction": "fix it",
        "metadata": {"llm": {"model": "litellm/m"}},
        "history": _events(),
        "metrics": {
            "usage_to_metrics": {
                "agent": {"token_usages": usage},
                "condenser": {"token_usages": [{"prompt_tokens": 50, "completion_tokens": 7, "response_id": "cond-1"}]},
            }
        },
        "test_result": {},
        "error": None,
    }
    path = tmp_path / "output.jsonl"
    others = [{**line, "instance_id": "repo__2", "metrics": None}, {**line, "attempt": 2}, {**line, "attempt": 2}]
    path.write_text("\n".join(json.dumps(x) for x in [line, *others]) + "\n")
    assert detect(path) is READER and READER.format != V0.format
    records = read(path)
    runs = of(records, Run)
    assert [r.run_id.split("/", 1)[1] for r in runs] == [
        "repo__1",
        "repo__2",
        "repo__1/attempt-2",
        "repo__1/attempt-2/line-4",
    ]  # run ids stay unique
    assert runs[0].model == "litellm/m"
    reqs = [q for q in of(records, Request) if q.run_id == runs[0].run_id]
    assert len(reqs) == 2  # parallel calls share response r1; the condenser's call is not an agent request
    assert (reqs[0].prompt_tokens, reqs[0].cache_read, reqs[0].cache_write, reqs[0].input_tokens) == (100, 60, 10, 30)
    items = [i for i in of(records, Item) if i.run_id == runs[0].run_id]
    calls = [i for i in items if i.kind == "tool_call"]
    assert [(c.tool_name, c.resource, c.access, c.step) for c in calls] == [
        ("file_editor", "/w/f1.py", "read", 1),
        ("file_editor", "/w/f2.py", "read", 1),
    ]
    (event,) = runs[0].metadata["context_events"]
    summary = next(i for i in items if i.kind == "summary")
    thought = next(i for i in items if i.text == "look")  # a1's thought goes with a1
    call1, result1 = (i.seq for i in items if i.call_id == "c1")
    assert thought.seq + 1 == call1
    assert event == {
        "kind": "condensation",
        "step": 1,
        "drop": [[thought.seq, call1 + 1], [result1, result1 + 1]],
        "summary_seq": summary.seq,
        "trigger": "auto",
        "pre_tokens": None,
        "line": 1,
        "usage": {"input": 50, "cache_read": 0, "cache_write": 0, "output": 7},
    }
    assert summary.text == "viewed f1" and summary.step == 1


def test_bad_event_line_is_named_and_the_rest_reads(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    lines = [json.dumps(e) for e in _events()]
    lines[3] = lines[3][:40]
    path.write_text("\n".join(lines) + "\n")
    records = read(path)
    assert [b.line for b in of(records, BadRecord)] == [4]
    assert sum(i.kind == "tool_call" for i in of(records, Item)) == 1 and len(of(records, Request)) == 2


def test_folder_with_a_broken_event_file_names_it(tmp_path: Path) -> None:
    events = tmp_path / "conv" / "events"
    events.mkdir(parents=True)
    for n, e in enumerate(_events()):
        (events / f"event-{n:05d}-{e['id']}.json").write_text(json.dumps(e))
    (events / "event-00002-a1.json").write_text("{oops")
    records = read(tmp_path / "conv")
    (bad,) = of(records, BadRecord)
    assert "event-00002-a1.json" in bad.reason
    assert sum(i.kind == "tool_result" for i in of(records, Item)) == 2


BENCH = "ohv1-bench-swe-sonnet4-81f92eeb"  # agent-server layout, SDK of 2025-09, claude-sonnet-4 behind a LiteLLM proxy


def _stats(folder: Path) -> dict:
    return json.loads((folder / "event_service" / "base_state.json").read_text())["stats"]["service_to_metrics"]


def test_agent_server_conversation_is_one_run_named_after_its_folder(corpus: Path) -> None:
    from replay.ingest import expand_paths

    folder = corpus / V1 / BENCH
    assert folder_reader(folder)[0] is READER and detect(folder) is READER
    units = expand_paths([corpus / V1])
    assert folder in units and not any(u.name == "event_service" for u in units)
    (run,) = of(read(folder), Run)
    assert run.run_id.startswith(f"{BENCH}-") and run.model == "litellm_proxy/anthropic/claude-sonnet-4-20250514"


def _state(folder: Path, cid: str, events: list[dict]) -> None:
    (folder / "events").mkdir(parents=True)
    (folder / "base_state.json").write_text(json.dumps({"id": cid, "stats": {}}))
    for n, e in enumerate(events):
        (folder / "events" / f"event-{n:05d}-{e['id']}.json").write_text(json.dumps(e))


def test_conversation_saved_one_level_down_is_found_by_layout_not_by_name(tmp_path: Path) -> None:
    cid = "0123456789abcdef0123456789abcdef"
    _state(tmp_path / "server" / "my-task" / "anything", cid, _events())  # the state folder may have any name
    assert folder_reader(tmp_path / "server" / "my-task")[0] is READER
    (run,) = of(read(tmp_path / "server" / "my-task"), Run)
    assert run.run_id.startswith("my-task-")
    (inner,) = of(read(tmp_path / "server" / "my-task" / "anything"), Run)  # the state folder named directly
    assert inner.run_id == run.run_id
    _state(tmp_path / "sdk" / "conversations" / cid, cid, _events())  # the SDK's layout: named after the id
    assert folder_reader(tmp_path / "sdk" / "conversations") is None  # its parent holds conversations
    assert folder_reader(tmp_path / "sdk" / "conversations" / cid)[0] is READER


def test_agent_server_folder_without_state_is_named_after_its_conversation(tmp_path: Path) -> None:
    """The agent-server writes ``<id hex>/event_service/events/`` before any ``base_state.json`` (OpenHands/
    benchmarks 36cfef5 holds such conversations): the run is still the conversation folder, named after it."""
    from replay.ingest import expand_paths

    cid = "35d7e326fdfb4d51a8f4b07e0d47a93a"
    _state(tmp_path / "conversations" / cid / "event_service", cid, _events())
    (tmp_path / "conversations" / cid / "event_service" / "base_state.json").unlink()
    assert expand_paths([tmp_path / "conversations"]) == [tmp_path / "conversations" / cid]
    (run,) = of(read(tmp_path / "conversations" / cid), Run)
    assert run.run_id.startswith(f"{cid}-")
    _state(tmp_path / "other" / cid / "anything", cid, _events())  # any other name still needs the state
    (tmp_path / "other" / cid / "anything" / "base_state.json").unlink()
    assert folder_reader(tmp_path / "other" / cid) is None


def test_prompt_tokens_without_cache_writes_are_made_canonical(corpus: Path) -> None:
    """LiteLLM before 1.77.3 left cache writes out of an Anthropic prompt_tokens; every request here shows it
    (prompt < reads + writes), and a cache read never exceeds what the previous request sent only once they are
    added back."""
    folder = corpus / V1 / BENCH
    written = _stats(folder)["default"]["token_usages"]
    records = read(folder)
    assert not of(records, BadRecord)
    reqs = of(records, Request)
    assert len(reqs) == len(written) == 108  # the condenser's 4 calls are not agent requests
    assert all(u["prompt_tokens"] < u["cache_read_tokens"] + u["cache_write_tokens"] for u in written)
    for q, u in zip(reqs, written, strict=True):
        assert q.input_tokens == u["prompt_tokens"] - u["cache_read_tokens"] >= 0
        assert q.prompt_tokens == u["prompt_tokens"] + u["cache_write_tokens"]
        assert q.prompt_tokens == q.input_tokens + q.cache_read + q.cache_write
    prices = DEFAULT_PRICING.prices(reqs[0].model)  # the proxy's cost of each call is this split at list prices
    costs = [c["cost"] for c in _stats(folder)["default"]["costs"]]
    assert all(
        abs(
            c
            - (
                q.input_tokens * prices.input
                + q.cache_read * prices.cache_read
                + q.cache_write * prices.cache_write
                + q.output_tokens * prices.output
            )
            / 1e6
        )
        < 1e-9
        for q, c in zip(reqs, costs, strict=True)
    )
    steps = {e["step"] for e in of(records, Run)[0].metadata["context_events"]}
    pairs = [(a, b) for a, b in zip(reqs, reqs[1:], strict=False) if b.step not in steps]
    assert all(b.cache_read <= a.prompt_tokens for a, b in pairs)
    assert not all(b.cache_read <= a.prompt_tokens - a.cache_write for a, b in pairs)  # as written, it would
    rule = of(records, Run)[0].metadata["prompt_tokens_rule"]
    assert rule.startswith("input + cache_read: cache writes are left out")
    reqs = of(read(corpus / V1 / "ohv1-sdk-conv-cd945624-gpt4omini"), Request)  # no cache writes: either rule
    assert all(q.prompt_tokens == q.input_tokens + q.cache_read for q in reqs)


def test_condensations_without_response_ids_get_the_condenser_calls_in_order(corpus: Path) -> None:
    folder = corpus / V1 / BENCH
    condenser = _stats(folder)["condenser"]["token_usages"]
    records = read(folder)
    events = of(records, Run)[0].metadata["context_events"]
    assert [(e["kind"], e["step"], e["trigger"]) for e in events] == [
        ("condensation", k, "auto") for k in (40, 61, 82, 103)
    ]
    assert [e["usage"] for e in events] == [
        {
            "input": u["prompt_tokens"],
            "cache_read": 0,
            "cache_write": u["cache_write_tokens"],
            "output": u["completion_tokens"],
        }
        for u in condenser
    ]
    settings = of(records, Run)[0].metadata["condenser"]  # what the openhands-v1 preset reproduces
    assert settings == {"kind": "LLMSummarizingCondenser", "max_size": 80, "keep_first": 4}
    assert {k: PRESETS["openhands-v1"].params[k] for k in ("max_size", "keep_first")} == {
        k: settings[k] for k in ("max_size", "keep_first")
    }
    summaries = [i for i in of(records, Item) if i.kind == "summary"]
    assert [s.seq for s in summaries] == [e["summary_seq"] for e in events]
    for before, event in zip(events, events[1:], strict=False):  # the view shows the newest summary only
        assert any(lo <= before["summary_seq"] < hi for lo, hi in event["drop"])
    calls = {i.seq: i for i in of(records, Item) if i.kind == "tool_call"}
    first = calls[min(calls)]  # LiteLLM's tool call form: name and arguments under "function"
    assert first.tool_name == "think" and json.loads(first.args)["thought"].startswith("Let me analyze the issue")


def test_condensation_usage_is_paired_only_when_the_counts_agree(tmp_path: Path) -> None:
    events = [
        {k: v for k, v in e.items() if k != "llm_response_id"} if e["kind"] == "Condensation" else e for e in _events()
    ]
    use = {"prompt_tokens": 3, "cache_read_tokens": 0, "cache_write_tokens": 900, "completion_tokens": 40}
    for calls in (1, 2):
        folder = tmp_path / f"c{calls}"
        _state(folder, "f" * 32, events)
        state = {
            "id": "f" * 32,
            "stats": {
                "usage_to_metrics": {
                    "condenser": {"token_usages": [{**use, "response_id": f"x{n}"} for n in range(calls)]}
                }
            },
        }
        (folder / "base_state.json").write_text(json.dumps(state))
        run = of(read(folder), Run)[0]
        (event,) = run.metadata["context_events"]
        if calls == 1:
            assert event["usage"] == {"input": 3, "cache_read": 0, "cache_write": 900, "output": 40}
        else:
            assert (
                "usage" not in event
                and "2 condenser calls and 1 condensations" in run.metadata["condenser_usage_unpaired"]
            )


def test_usage_no_litellm_rule_gives_is_quarantined(tmp_path: Path) -> None:
    folder = tmp_path / "conv"
    _state(folder, "e" * 32, _events())
    bad = {
        "prompt_tokens": 10,
        "cache_read_tokens": 50,
        "cache_write_tokens": 0,
        "completion_tokens": 5,
        "response_id": "r1",
    }
    (folder / "base_state.json").write_text(
        json.dumps({"id": "e" * 32, "stats": {"usage_to_metrics": {"agent": {"token_usages": [bad]}}}})
    )
    records = read(folder)
    (quarantined,) = of(records, BadRecord)
    assert "prompt_tokens=10 < cache_read=50" in quarantined.reason
    assert [q.prompt_tokens for q in of(records, Request)] == [None, None]


def test_observations_read_as_the_sdk_renders_them_for_the_model(corpus: Path) -> None:
    """Terminal output framed by its metadata lines, the editor's error instead of its output, the finish message."""
    folder = corpus / V1 / BENCH
    logged = {
        e["tool_call_id"]: e["observation"]
        for f in (folder / "event_service" / "events").iterdir()
        if (e := json.loads(f.read_text()))["kind"] == "ObservationEvent"
    }
    results = {i.call_id: i for i in of(read(folder), Item) if i.kind == "tool_result"}
    assert set(results) == set(logged)
    for call_id, obs in logged.items():
        text = results[call_id].text
        if obs["kind"] == "ExecuteBashObservation":
            m = obs["metadata"]
            assert text.startswith(m["prefix"] + obs["output"] + m["suffix"])
            assert text.endswith(
                f"\n[Current working directory: {m['working_dir']}]\n[Python interpreter: "
                f"{m['py_interpreter_path']}]\n[Command finished with exit code {m['exit_code']}]"
            )
        elif obs.get("error"):
            assert text == obs["error"] and results[call_id].is_error
        elif obs["kind"] == "FinishObservation":
            assert text == obs["message"] and text
    (empty,) = [
        i
        for i in of(read(corpus / V1 / "ohv1-sdk-conv-cd945624-gpt4omini"), Item)
        if i.kind == "tool_result" and i.tool_name == "terminal"
    ]  # newer SDK: content, same framing
    assert empty.text.startswith("\n[The command completed with exit code 0.]\n[Current working directory: ")


def test_stream_condensation_takes_the_condenser_usage_change(tmp_path: Path) -> None:
    """In an event stream the condenser's usage is cumulative too: its change is the condensation's usage."""

    def stats(agent: int, condenser: int) -> dict:
        summariser = {"prompt_tokens": condenser, "completion_tokens": condenser // 10}
        use = {
            "agent": {"accumulated_token_usage": {"prompt_tokens": agent, "cache_read_tokens": 0}},
            "condenser": {"accumulated_token_usage": summariser},
        }
        return {"kind": "ConversationStateUpdateEvent", "key": "stats", "value": {"usage_to_metrics": use}}

    events = _events()
    at = next(n for n, e in enumerate(events) if e["kind"] == "Condensation")
    stream = [*events[:2], stats(100, 0), *events[2:at], stats(100, 500), *events[at:], stats(250, 500)]
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in stream) + "\n")
    records = read(path)
    assert [q.prompt_tokens for q in of(records, Request)] == [100, 150]  # the condenser's call is no request
    (event,) = of(records, Run)[0].metadata["context_events"]
    assert event["usage"] == {"input": 500, "cache_read": 0, "cache_write": 0, "output": 50}


def test_rejections_and_extended_content_read_as_sent(tmp_path: Path) -> None:
    events = _events()
    at = next(n for n, e in enumerate(events) if e["id"] == "o2")
    events[at] = {
        "kind": "UserRejectObservation",
        "id": "o2",
        "source": "user",
        "tool_name": "file_editor",
        "tool_call_id": "c2",
        "rejection_reason": "not that file",
    }
    events[at - 1] = {**events[at - 1], "extended_content": [{"type": "text", "text": "<hint>"}]}
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    results = {i.call_id: i for i in of(read(path), Item) if i.kind == "tool_result"}
    assert results["c1"].text == "body 1\n<hint>"
    assert results["c2"].text == "Action rejected: not that file" and results["c2"].is_error


def test_multi_summary_views_keep_a_summary_until_it_is_forgotten_by_id(tmp_path: Path) -> None:
    """Multi-summary views (openhands-sdk d616ab07, 2026-01-22): a condensation's summary event has its id plus
    ``-summary`` and stays in the view until a later condensation forgets that id; before them the newest summary
    replaced the previous one. Condensations written as the SDK's Condensation model serialises them."""

    def condensation(cid: str, forgotten: list[str], summary: str | None, rid: str) -> dict:
        return {
            "kind": "Condensation",
            "id": cid,
            "source": "environment",
            "forgotten_event_ids": forgotten,
            "summary": summary,
            "summary_offset": 1,
            "llm_response_id": rid,
        }

    def message(mid: str, text: str, rid: str) -> dict:
        return {
            "kind": "MessageEvent",
            "id": mid,
            "source": "agent",
            "llm_response_id": rid,
            "llm_message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
        }

    base = _events()[:6]
    summaries = {}
    for name, second in (
        ("kept", condensation("k2", ["a2", "o2"], "viewed f2", "cond-2")),  # names no summary: new semantics
        ("forgot", condensation("k2", ["a2", "o2", "k1-summary"], None, "cond-2")),  # summary-less (empty reply)
    ):
        events = [*base, condensation("k1", ["a1", "o1"], "viewed f1", "cond-1"), message("m1", "next", "r2")]
        events += [second, message("m2", "done", "r3")]
        path = tmp_path / f"{name}.jsonl"
        path.write_text("\n".join(json.dumps(e) for e in events) + "\n")
        records = read(path)
        first, later = of(records, Run)[0].metadata["context_events"]
        summaries[name] = (first["summary_seq"], later)
    k1, later = summaries["forgot"]
    assert k1 in {q for lo, hi in later["drop"] for q in range(lo, hi)}  # forgotten by its id
    k1, later = summaries["kept"]
    assert k1 in {q for lo, hi in later["drop"] for q in range(lo, hi)}  # no -summary id: the older SDK's rule


def test_view_leaves_out_unanswered_calls_and_duplicate_observations(tmp_path: Path) -> None:
    """The SDK's view (context/view/properties): an action no observation-like event answers is not sent, nor
    are the other actions of its response and their observations (ToolCallMatching, BatchAtomicity); a second
    observation-like event for one tool call (crash recovery's AgentErrorEvent, then the late observation) is not
    sent (ObservationUniqueness, 0feb33b0). Events as the SDK serialises them."""

    def action(n: int, rid: str) -> dict:
        return {
            "kind": "ActionEvent",
            "id": f"a{n}",
            "source": "agent",
            "tool_name": "terminal",
            "tool_call_id": f"c{n}",
            "tool_call": {"id": f"c{n}", "name": "terminal", "arguments": json.dumps({"command": f"cmd {n}"})},
            "llm_response_id": rid,
            "thought": [{"type": "text", "text": f"thinking {n}"}],
        }

    def observation(n: int, text: str) -> dict:
        return {
            "kind": "ObservationEvent",
            "id": f"o{n}-{text}",
            "source": "environment",
            "tool_name": "terminal",
            "tool_call_id": f"c{n}",
            "action_id": f"a{n}",
            "observation": {"content": [{"type": "text", "text": text}]},
        }

    system, user = _events()[:2]
    error = {
        "kind": "AgentErrorEvent",
        "id": "e3",
        "source": "agent",
        "tool_name": "terminal",
        "tool_call_id": "c3",
        "error": "server restarted while the tool ran",
    }
    events = [
        system,
        user,
        action(1, "r1"),
        action(2, "r1"),  # c1 is answered, c2 never (interrupted): the whole batch is out
        observation(1, "out 1"),
        {**user, "id": "u2", "llm_message": {"role": "user", "content": [{"type": "text", "text": "go on"}]}},
        action(3, "r2"),
        error,
        observation(3, "late out 3"),
        {
            "kind": "MessageEvent",
            "id": "m",
            "source": "agent",
            "llm_response_id": "r3",
            "llm_message": {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        },
    ]
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    records = read(path)
    items = of(records, Item)
    assert [i.call_id for i in items if i.kind == "tool_call"] == ["c3"]
    assert [i.text for i in items if i.kind == "tool_result"] == ["server restarted while the tool ran"]
    assert "thinking 1" not in {i.text for i in items}
    assert len(of(records, Request)) == 3  # the left-out batch was still a model call
    meta = of(records, Run)[0].metadata
    assert (meta["unmatched_tool_calls"], meta["duplicate_observations"]) == (2, 1)


def test_conversation_tree_reads_the_active_branch(tmp_path: Path) -> None:
    """The SDK's conversation tree (657553455, 2026-07-02): every event is stamped with ``parent_id`` (the HEAD
    when it was appended); after ``navigate_to`` a new event is a sibling, and the abandoned branch drops out of
    every later view. Its events and requests are left out and counted, as Gemini CLI's ``$rewindTo``."""
    system, user, a1, _, o1 = _events()[:5]
    tree = [
        {**system, "parent_id": None},
        {**user, "parent_id": "s"},
        {**a1, "parent_id": "u"},
        {**o1, "parent_id": "a1"},
        {
            "kind": "ConversationStateUpdateEvent",
            "id": "st",
            "key": "execution_status",
            "value": "idle",
            "parent_id": "o1",
        },
        {
            "kind": "MessageEvent",
            "id": "m1",
            "source": "agent",
            "llm_response_id": "r2",
            "parent_id": "o1",
            "llm_message": {"role": "assistant", "content": [{"type": "text", "text": "old answer"}]},
        },
        {  # navigate_to("u") then a new message: a sibling of a1
            **user,
            "id": "u2",
            "parent_id": "u",
            "llm_message": {"role": "user", "content": [{"type": "text", "text": "no, do this"}]},
        },
        {
            "kind": "MessageEvent",
            "id": "m2",
            "source": "agent",
            "llm_response_id": "r3",
            "parent_id": "u2",
            "llm_message": {"role": "assistant", "content": [{"type": "text", "text": "new answer"}]},
        },
    ]
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in tree) + "\n")
    records = read(path)
    items = of(records, Item)
    assert [i.text for i in items if i.kind in ("user_text", "assistant_text")] == [
        "fix it",
        "no, do this",
        "new answer",
    ]
    assert not [i for i in items if i.kind in ("tool_call", "tool_result")]
    assert len(of(records, Request)) == 1
    assert of(records, Run)[0].metadata["abandoned"] == {"events": 3, "requests": 2}
    # without parent ids (SDK before the tree) the same events are one linear history
    path.write_text("\n".join(json.dumps({k: v for k, v in e.items() if k != "parent_id"}) for e in tree) + "\n")
    assert len(of(read(path), Request)) == 3


@pytest.mark.parametrize("damage", ["cut short", "no kind", "no kind in an array"])
def test_a_damaged_line_may_hold_an_observation(tmp_path: Path, damage: str) -> None:
    """An action whose observation is on a line that cannot be read, or reads as no event (an object without a
    kind), is not taken as unanswered: the damaged line costs only itself (a JSONL line is quarantined), not its
    action and the rest of that response."""
    events = _events()[:6]  # system, user, two actions of response r1, their two observations
    lines = [json.dumps(e) for e in events]
    lines[4] = lines[4][: len(lines[4]) // 2] if damage == "cut short" else "{}"  # o1's line
    if damage == "no kind in an array":
        path = tmp_path / "events.json"
        path.write_text(json.dumps([*events[:4], {}, events[5]]))
    else:
        path = tmp_path / "events.jsonl"
        path.write_text("\n".join(lines) + "\n")
    records = read(path)
    assert len(of(records, BadRecord)) == (damage != "no kind in an array")
    items = of(records, Item)
    assert [i.call_id for i in items if i.kind == "tool_call"] == ["c1", "c2"]
    assert [i.text for i in items if i.kind == "tool_result"] == ["body 2"]
    assert "unmatched_tool_calls" not in of(records, Run)[0].metadata


def test_condenser_token_limit_is_kept_and_a_bad_one_is_named(tmp_path: Path) -> None:
    """``max_tokens`` (SDK 3bd0250ab, 2025-12-23, ``int | None``) goes to the run's condenser settings with the
    rest; a value the SDK cannot have written is left out with a record naming base_state.json."""
    settings = {"kind": "LLMSummarizingCondenser", "llm": {"model": "m"}, "max_size": 240, "keep_first": 2}
    for limit, kept, bad in ((32_000, 32_000, False), (None, None, False), ("32k", "absent", True)):
        folder = tmp_path / f"c-{limit}"
        _state(folder, "0123456789abcdef0123456789abcdef", _events())
        state = {"id": "x", "stats": {}, "agent": {"condenser": {**settings, "max_tokens": limit}}}
        (folder / "base_state.json").write_text(json.dumps(state))
        records = read(folder)
        (run,) = of(records, Run)
        assert run.metadata["condenser"].get("max_tokens", "absent") == kept
        assert run.metadata["condenser"]["max_size"] == 240 and "llm" not in run.metadata["condenser"]
        named = [
            b for b in of(records, BadRecord) if b.reason.startswith("base_state.json: agent.condenser.max_tokens")
        ]
        assert len(named) == bad


def test_reset_condensation_named_after_the_agents_response_takes_no_usage(tmp_path: Path) -> None:
    """The SDK's AgentResetCondenser (sources newer than 611629e6, 2026) answers the agent's ``new_context`` call with a
    Condensation that names that call's ``llm_response_id`` and makes no LLM call of its own: the agent request's
    usage is not the condensation's (it would be billed twice), and the forgotten events leave the view."""
    call = {"kind": "ActionEvent", "source": "agent", "tool_name": "new_context", "llm_response_id": "r1"}
    events = [
        *_events()[:2],
        {
            **call,
            "id": "a1",
            "tool_call_id": "c1",
            "tool_call": {"id": "c1", "name": "new_context", "arguments": json.dumps({"handoff": "fix f.py"})},
            "thought": [],
        },
        {
            "kind": "ObservationEvent",
            "id": "o1",
            "source": "environment",
            "tool_name": "new_context",
            "tool_call_id": "c1",
            "action_id": "a1",
            "observation": {"content": [{"type": "text", "text": "Reset after this batch."}], "input_event_id": "u"},
        },
        {"kind": "CondensationRequest", "id": "q", "source": "environment"},
        {"kind": "Condensation", "id": "k", "source": "environment", "forgotten_event_ids": ["u"], "summary": None}
        | {"summary_offset": None, "llm_response_id": "r1"},
        _events()[-1],
    ]
    folder = tmp_path / "reset"
    _state(folder, "a" * 32, events)
    use = {"prompt_tokens": 900, "cache_read_tokens": 0, "cache_write_tokens": 0, "completion_tokens": 30}
    usages = [{**use, "response_id": rid} for rid in ("r1", "r2")]
    state = {"id": "a" * 32, "stats": {"usage_to_metrics": {"agent": {"token_usages": usages}}}}
    (folder / "base_state.json").write_text(json.dumps(state))
    records = read(folder)
    run = of(records, Run)[0]
    (event,) = run.metadata["context_events"]
    assert "usage" not in event and event["trigger"] == "manual" and event["summary_seq"] is None
    assert [r.prompt_tokens for r in of(records, Request)] == [900, 900]


def test_an_event_of_another_kind_that_forgets_events_is_named(tmp_path: Path) -> None:
    """Sources newer than 611629e6 have a condenser (NotesRetrievalCondenser) that writes a ``HistoryIndexEvent``
    forgetting events, with its ids, offset and the first and last forgotten ids; how the view renders it is not
    in them. The reader names that event rather than reading on as if nothing was forgotten."""
    index = {
        "kind": "HistoryIndexEvent",
        "id": "h",
        "source": "environment",
        "forgotten_event_ids": ["a1", "o1"],
        "index_offset": 2,
        "previous_window_id": None,
        "notes_event_id": None,
        "first_forgotten_event_id": "a1",
        "last_forgotten_event_id": "o1",
    }
    events = [e for e in _events() if e["kind"] != "Condensation"]
    folder = tmp_path / "notes"
    _state(folder, "b" * 32, [*events[:-1], index, events[-1]])
    records = read(folder)
    (bad,) = of(records, BadRecord)
    assert bad.line == 6 and "'HistoryIndexEvent' forgets 2 events" in bad.reason
    assert len(of(records, Request)) == 2
