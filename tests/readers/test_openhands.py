"""OpenHands reader against the real corpus: counts vs MANIFEST.md, usage, linking, resources, sniffing."""

from __future__ import annotations

import json
import re
from pathlib import Path

from replay.model import BadRecord, Item, Request, Run
from replay.readers import detect, folder_reader
from replay.readers.base import HEAD_BYTES, ReadContext
from replay.readers.openhands import READER
from tests.readers.test_swe_agent import manifest_rows


def read(path: Path) -> list:
    return list(READER.read(ReadContext(path=path, file_hash="0" * 32)))


# MANIFEST's "requests" cell for OpenHands counts *events* carrying usage / llm_metrics, not model calls.
# In the runtime trajectories each observation repeats its action's tool_call_metadata (same
# model_response.id), so events-with-usage ≈ 2x the calls; we count distinct responses, plus agent
# actions with no metadata (gui-mode's final message). The resolver output records no llm_metrics but
# has one metrics.costs entry per agent action (4 and 22), which is what we count.
REQUESTS = {
    "oh-eval-multiswebench-llama4-3inst.jsonl": 105,
    "oh-resolver-mock-output-2inst.jsonl": 26,
    "oh-runtime-traj-basic-gui-mode.json": 5,
    "oh-runtime-traj-basic.json": 2,
    "oh-runtime-traj-wrong-initial-state.json": 4,
}
RUNS = {"oh-eval-multiswebench-llama4-3inst.jsonl": 3, "oh-resolver-mock-output-2inst.jsonl": 2}


def test_counts_vs_manifest(corpus: Path) -> None:
    rows = manifest_rows(corpus, "openhands")
    assert set(rows) == {f.name for f in (corpus / "openhands").iterdir()} == set(REQUESTS)
    for name, (requests, calls) in rows.items():
        records = read(corpus / "openhands" / name)
        assert not [r for r in records if isinstance(r, BadRecord)], name
        assert sum(isinstance(r, Run) for r in records) == RUNS.get(name, 1), name
        reqs = [r for r in records if isinstance(r, Request)]
        assert len(reqs) == REQUESTS[name], name
        assert sum(isinstance(r, Item) and r.kind == "tool_call" for r in records) == int(calls), name
        events_with_usage = int(re.match(r"\d+", requests).group())
        with_usage = sum(r.prompt_tokens is not None for r in reqs)
        if "llm_metrics" in requests:  # eval output: one llm_metrics event per model call
            assert with_usage == events_with_usage, name
        else:  # runtime trajectories: the manifest counts actions and the observations repeating their usage
            raw = json.loads((corpus / "openhands" / name).read_text())
            carrying = [e for e in raw if (e.get("tool_call_metadata") or {}).get("model_response")]
            assert events_with_usage == len(carrying)
            assert with_usage == len(
                {e["tool_call_metadata"]["model_response"]["id"] for e in raw if e.get("tool_call_metadata")}
            ), name


def test_usage_linking_and_resources(corpus: Path) -> None:
    records = read(corpus / "openhands" / "oh-runtime-traj-wrong-initial-state.json")
    reqs = [r for r in records if isinstance(r, Request)]
    assert reqs[0].model == "claude-3-5-sonnet-20241022" and reqs[0].cache_write == 3471
    assert reqs[0].prompt_tokens == reqs[0].input_tokens + reqs[0].cache_read + reqs[0].cache_write
    items = [r for r in records if isinstance(r, Item)]
    calls = [i for i in items if i.kind == "tool_call"]
    assert (calls[0].tool_name, calls[0].resource, calls[0].access) == ("read", "/workspace", "read")
    assert calls[1].tool_name == "run" and (calls[1].resource, calls[1].access) == ("/workspace/2048.py", "write")
    results = {i.call_id: i for i in items if i.kind == "tool_result"}
    for call in calls:
        assert results[call.call_id].resource == call.resource and results[call.call_id].step == call.step


def test_eval_runs(corpus: Path) -> None:
    records = read(corpus / "openhands" / "oh-eval-multiswebench-llama4-3inst.jsonl")
    runs = [r for r in records if isinstance(r, Run)]
    assert runs[0].run_id.endswith("/ponylang__ponyc-4595") and runs[0].model == "meta-llama/llama-4-maverick"
    first = [r for r in records if isinstance(r, Item) and r.run_id == runs[0].run_id]
    assert [i.kind for i in first[:3]] == ["system", "tool_defs", "user_text"]
    runs_cmds = [i for i in first if i.tool_name == "run"]
    assert {i.access for i in runs_cmds} >= {"exec", "search"}
    assert any(i.kind == "reasoning" for i in first)  # the think action


def test_sniff(corpus: Path) -> None:
    for f in sorted(corpus.rglob("*")):
        if not f.is_file() or f.name == "MANIFEST.md":
            continue
        head = f.open("rb").read(HEAD_BYTES).decode("utf-8", "replace")
        assert READER.sniff(head, f) == (f.parent.name == "openhands"), f.name
    assert detect(corpus / "openhands" / "oh-resolver-mock-output-2inst.jsonl") is READER


def test_bad_line_quarantined(corpus: Path, tmp_path: Path) -> None:
    lines = (corpus / "openhands" / "oh-resolver-mock-output-2inst.jsonl").read_bytes().splitlines(keepends=True)
    damaged = tmp_path / "out.jsonl"
    damaged.write_bytes(lines[0][:500] + b"\n" + lines[1])
    records = read(damaged)
    bad = [r for r in records if isinstance(r, BadRecord)]
    assert len(bad) == 1 and bad[0].line == 1
    assert sum(isinstance(r, Run) for r in records) == 1


def test_clipped_observations_are_placeholder_events(corpus: Path) -> None:
    """The editor clips long files at the source: "<response clipped><NOTE>..." is noted on that observation."""
    records = read(corpus / "openhands" / "oh-eval-multiswebench-llama4-3inst.jsonl")
    runs = [r for r in records if isinstance(r, Run)]
    items = {(i.run_id, i.seq): i for i in records if isinstance(i, Item)}
    events = [
        (run.run_id, e, run.metadata["placeholders"]["wordings"][e[2]])
        for run in runs
        for e in run.metadata.get("placeholders", {}).get("events", [])
    ]
    assert len(events) == 4
    for run_id, (step, seq, _, chars, origin), wording in events:
        item = items[(run_id, seq)]
        assert origin == 1 and item.kind == "tool_result" and step == item.step and chars == len(item.text)
        assert wording.startswith("<response clipped><NOTE>Due to the max output limit")
        assert "<response clipped>" in item.text


def condensed_stream(tmp_path: Path, condensation_args: list[dict]) -> Path:
    def call(i: int, rid: str) -> dict:
        meta = {"tool_call_id": f"t{i}", "model_response": {"id": rid, "usage": {"prompt_tokens": 100 * i}}}
        return {
            "id": i,
            "source": "agent",
            "action": "run",
            "args": {"command": f"ls {i}", "thought": ""},
            "tool_call_metadata": meta,
        }

    def obs(i: int) -> dict:
        return {
            "id": i,
            "source": "agent",
            "observation": "run",
            "cause": i - 1,
            "content": f"out {i}",
            "tool_call_metadata": {"tool_call_id": f"t{i - 1}"},
        }

    events = [
        {"id": 0, "source": "agent", "action": "system", "args": {"content": "sys"}},
        {"id": 1, "source": "user", "action": "message", "args": {"content": "task"}},
        call(2, "r1"),
        obs(3),
        call(4, "r2"),
        obs(5),
        {"id": 6, "source": "agent", "action": "condensation", "args": condensation_args[0]},
        call(7, "r3"),
        obs(8),
        {"id": 9, "source": "agent", "action": "condensation", "args": condensation_args[1]},
        {"id": 10, "source": "agent", "action": "finish", "args": {"final_thought": "done"}},
    ]
    path = tmp_path / "stream.json"
    path.write_text(json.dumps(events))
    return path


def test_condensation_is_an_event_not_a_call(tmp_path: Path) -> None:
    path = condensed_stream(
        tmp_path,
        [
            {
                "forgotten_event_ids": None,
                "forgotten_events_start_id": 2,
                "forgotten_events_end_id": 3,
                "summary": "S1",
                "summary_offset": 2,
            },
            {"forgotten_event_ids": [4, 5, 7, 8], "summary": "S2", "summary_offset": 2},
        ],
    )
    records = read(path)
    assert len([r for r in records if isinstance(r, Request)]) == 4  # r1, r2, r3 and the finish: no condenser calls
    items = [r for r in records if isinstance(r, Item)]
    assert [(i.seq, i.kind, i.step) for i in items] == [
        (0, "system", 0),
        (1, "user_text", 0),
        (2, "tool_call", 1),
        (3, "tool_result", 1),
        (4, "tool_call", 2),
        (5, "tool_result", 2),
        (6, "summary", 2),
        (7, "tool_call", 3),
        (8, "tool_result", 3),
        (9, "summary", 3),
        (10, "assistant_text", 4),
    ]
    assert not [i for i in items if i.tool_name == "condensation"]
    events = [r for r in records if isinstance(r, Run)][0].metadata["context_events"]
    assert events == [
        {
            "kind": "condensation",
            "step": 2,
            "drop": [[2, 4]],
            "summary_seq": 6,
            "trigger": None,
            "pre_tokens": None,
            "line": 6,
            "summary_offset": 2,
        },
        # the new summary replaces the old one (OpenHands shows only the latest)
        {
            "kind": "condensation",
            "step": 3,
            "drop": [[4, 9]],
            "summary_seq": 9,
            "trigger": None,
            "pre_tokens": None,
            "line": 9,
            "summary_offset": 2,
        },
    ]


def test_condensation_without_summary_or_range(tmp_path: Path) -> None:
    path = condensed_stream(tmp_path, [{"forgotten_event_ids": [2, 3]}, {"summary": "lost"}])
    records = read(path)
    bad = [r for r in records if isinstance(r, BadRecord)]
    assert len(bad) == 1 and bad[0].line == 9 and "forgotten" in bad[0].reason
    events = [r for r in records if isinstance(r, Run)][0].metadata["context_events"]
    assert events == [
        {
            "kind": "condensation",
            "step": 2,
            "drop": [[2, 4]],
            "summary_seq": None,
            "trigger": None,
            "pre_tokens": None,
            "line": 6,
        }
    ]
    assert not [r for r in records if isinstance(r, Item) and r.kind == "summary"]


def test_corpus_has_no_condensation(corpus: Path) -> None:
    # none of the corpus's V0 streams records a CondensationAction: their runs carry no context events
    for path in (corpus / "openhands").iterdir():
        assert '"condensation"' not in path.read_text(), path.name
        assert all("context_events" not in r.metadata for r in read(path) if isinstance(r, Run)), path.name


def test_items_are_what_codeact_sends(corpus: Path) -> None:
    """An ACI edit's observation reaches the model as ``formatted_output_and_error`` (the diff in ``content`` is
    for display) and the call as the model wrote it: the items grow between the two requests of
    oh-runtime-traj-basic by what the server's cache write there records (1,158 Claude tokens; o200k counts code
    ~15% smaller), not by the diff as well (2,083 o200k tokens when the diff was read as the result)."""
    from replay.tokens import load_tokenizer

    records = read(corpus / "openhands" / "oh-runtime-traj-basic.json")
    items = [r for r in records if isinstance(r, Item)]
    result = next(i for i in items if i.kind == "tool_result")
    assert result.text == "File created successfully at: /workspace/game_2048.py"
    call = next(i for i in items if i.kind == "tool_call")
    assert json.loads(call.args)["command"] == "create" and "file_text" in json.loads(call.args)
    reqs = [r for r in records if isinstance(r, Request)]
    tok = load_tokenizer("o200k")
    grew = sum(tok.count(i.text or "") + tok.count(i.args or "") for i in items if i.step == 1)
    assert reqs[1].cache_write == 1158
    assert 0.8 * reqs[1].cache_write <= grew <= reqs[1].cache_write, grew


def test_eval_output_history_pairs_of_0_9(tmp_path: Path) -> None:
    """OpenHands 0.9.x eval output (``evaluation/swe_bench/run_infer.py``: ``history=histories`` from
    ``state.history.compatibility_for_eval_history_pairs()``, ``openhands/memory/history.py``) writes ``history``
    as ``[action, observation]`` pairs of ``event_to_dict`` dicts; an action with no observation gets a ``null``
    one. Synthetic content in that shape. Main quarantined every pair ("event 0 is not an object"): 0 items,
    0 requests."""
    null_obs = {"message": "No observation", "observation": "null", "content": "", "extras": {}}
    history = [
        [
            {"id": 0, "source": "user", "action": "message", "args": {"content": "Fix foo.py", "images_urls": None}},
            null_obs,
        ],
        [
            {"id": 3, "source": "agent", "action": "run", "args": {"command": "ls", "thought": "Look first."}},
            {"id": 4, "source": "agent", "cause": 3, "observation": "run", "content": "foo.py\n", "extras": {}},
        ],
        [{"id": 5, "source": "agent", "action": "finish", "args": {"outputs": {}, "thought": "Done."}}, null_obs],
    ]
    path = tmp_path / "output.jsonl"
    path.write_text(json.dumps({"instance_id": "x__y-1", "history": history, "metrics": {"costs": [0.1, 0.2]}}) + "\n")
    assert detect(path) is READER
    records = read(path)
    assert not [r for r in records if isinstance(r, BadRecord)]
    items = [r for r in records if isinstance(r, Item)]
    assert [(i.kind, i.text) for i in items] == [
        ("user_text", "Fix foo.py"),
        ("assistant_text", "Look first."),
        ("tool_call", ""),
        ("tool_result", "foo.py\n"),
        ("assistant_text", "Done."),
    ]
    assert items[3].call_id == items[2].call_id and json.loads(items[2].args or "")["command"] == "ls"
    assert len([r for r in records if isinstance(r, Request)]) == 2  # one per agent action, as metrics.costs
    run = next(r for r in records if isinstance(r, Run))
    assert run.metadata["history_pairs"] is True


def test_v0_session_folder_of_event_files(tmp_path: Path) -> None:
    """OpenHands V0 from 0.9 stores a conversation as ``sessions/<id>/events/<n>.json``, one ``event_to_dict``
    per file (``openhands/events/stream.py`` ``EventStream._get_filename_for_id``; 0.20 on
    ``openhands/storage/locations.py``), later beside ``event_cache/<start>-<end>.json`` pages copying the same
    events. Synthetic content. Main: every event file "unknown format"."""
    folder = tmp_path / "sessions" / "5f1c0d"
    (folder / "events").mkdir(parents=True)
    usage = {"prompt_tokens": 900, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 800}}
    call = {"id": "toolu_1", "type": "function", "function": {"name": "execute_bash", "arguments": '{"command": "ls"}'}}
    response = {"id": "r1", "model": "claude-3-5-sonnet-20241022", "usage": usage}
    response["choices"] = [{"message": {"role": "assistant", "content": "Look.", "tool_calls": [call]}}]
    tcm = {"function_name": "execute_bash", "tool_call_id": "toolu_1", "model_response": response}
    events = [
        {"id": 0, "source": "user", "action": "message", "args": {"content": "Fix foo.py"}},
        {"id": 1, "source": "agent", "action": "run", "args": {"command": "ls"}, "tool_call_metadata": tcm},
        {
            "id": 2,
            "source": "agent",
            "cause": 1,
            "observation": "run",
            "content": "foo.py\n",
            "tool_call_metadata": tcm,
        },
        {"id": 3, "source": "agent", "action": "finish", "args": {"thought": "Done.", "outputs": {}}},
    ]
    for event in events:
        (folder / "events" / f"{event['id']}.json").write_text(json.dumps(event))
    (folder / "event_cache").mkdir()
    (folder / "event_cache" / "0-25.json").write_text(json.dumps(events))
    (folder / "metadata.json").write_text(json.dumps({"conversation_id": "5f1c0d", "title": "t"}))
    reader, members = folder_reader(folder)
    assert reader is READER and [m.name for m in members] == ["0.json", "1.json", "2.json", "3.json"]
    assert folder_reader(folder / "events") is not None
    records = read(folder)
    assert not [r for r in records if isinstance(r, BadRecord)]
    run = next(r for r in records if isinstance(r, Run))
    assert run.run_id.startswith("5f1c0d-") and run.model == "claude-3-5-sonnet-20241022"
    reqs = [r for r in records if isinstance(r, Request)]
    assert [(q.prompt_tokens, q.cache_read, q.output_tokens) for q in reqs] == [(900, 800, 20), (None, None, None)]
    kinds = [i.kind for i in records if isinstance(i, Item)]
    assert kinds == ["user_text", "tool_call", "tool_result", "assistant_text"]


def test_agent_message_usage_from_llm_metrics_of_0_29(tmp_path: Path) -> None:
    """OpenHands 0.29 to 0.32 (``openhands/controller/agent_controller.py`` ``_prepare_metrics_for_frontend``,
    #7082) put the agent LLM's latest ``TokenUsage`` in each agent action's ``llm_metrics.token_usages``; a reply
    with no tool call (a ``MessageAction``) has no ``tool_call_metadata``. Synthetic content. Main: that request
    had no usage."""
    tcm = {
        "tool_call_id": "t1",
        "model_response": {"id": "r1", "usage": {"prompt_tokens": 1000, "completion_tokens": 10}},
    }
    latest = {"prompt_tokens": 1200, "completion_tokens": 30, "cache_read_tokens": 900, "cache_write_tokens": 250}
    events = [
        {"id": 0, "source": "user", "action": "message", "args": {"content": "hi"}},
        {"id": 1, "source": "agent", "action": "run", "args": {"command": "ls"}, "tool_call_metadata": tcm},
        {"id": 2, "source": "agent", "cause": 1, "observation": "run", "content": "a", "tool_call_metadata": tcm},
        {
            "id": 3,
            "source": "agent",
            "action": "message",
            "args": {"content": "Which file?", "wait_for_response": True},
            "llm_metrics": {"accumulated_cost": 0.02, "token_usages": [{**latest, "model": "m", "response_id": "r2"}]},
        },
    ]
    path = tmp_path / "events.json"
    path.write_text(json.dumps(events))
    reqs = [r for r in read(path) if isinstance(r, Request)]
    assert [(q.prompt_tokens, q.input_tokens, q.cache_read, q.cache_write, q.output_tokens) for q in reqs] == [
        (1000, 1000, 0, 0, 10),
        (1200, 50, 900, 250, 30),
    ]
