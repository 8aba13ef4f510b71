"""SWE-agent reader against the real corpus: counts match MANIFEST.md, resources, sniffing."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from replay.model import BadRecord, Item, Request, Run
from replay.readers import detect
from replay.readers.base import HEAD_BYTES, ReadContext, text_of
from replay.readers.swe_agent import READER
from replay.simulator.fidelity import harness_version
from tests.readers.swe_agent_fixture import attempt, ended_without_reply, retry_run


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


def read(path: Path) -> list:
    return list(READER.read(ReadContext(path=path, file_hash="0" * 32)))


# sympy-16792: its last step has an empty action ("Exit due to cost limit", exit_cost) — a model
# call was made (api_calls=76) but no command was issued, so 75 tool calls, not the manifest's 76.
TOOL_CALL_EXCEPTIONS = {"swea-lgetter-sympy__sympy-16792.traj": 75}


def test_counts_match_manifest(corpus: Path) -> None:
    rows = manifest_rows(corpus, "swe-agent")
    assert len(rows) == len(list((corpus / "swe-agent").glob("*.traj"))) == 8
    for name, (requests, calls) in rows.items():
        records = read(corpus / "swe-agent" / name)
        assert not [r for r in records if isinstance(r, BadRecord)], name
        assert sum(isinstance(r, Run) for r in records) == 1
        n_requests = sum(isinstance(r, Request) for r in records)
        n_calls = sum(isinstance(r, Item) and r.kind == "tool_call" for r in records)
        assert n_requests == int(re.match(r"\d+", requests).group()), name
        assert n_calls == TOOL_CALL_EXCEPTIONS.get(name, int(calls)), name


def test_structure_and_metadata(corpus: Path) -> None:
    records = read(corpus / "swe-agent" / "swea-lgetter-psf__requests-2931.traj")
    run = records[0]
    assert run.model == "gpt-4o" and run.metadata["model_stats"]["tokens_sent"] == 59510
    items = [r for r in records if isinstance(r, Item)]
    assert [i.kind for i in items[:4]] == ["system", "user_text", "assistant_text", "tool_call"]
    assert items[4].kind == "tool_result" and items[4].text.startswith("OBSERVATION:")
    reqs = [r for r in records if isinstance(r, Request)]
    assert all(r.input_tokens is None for r in reqs)  # aggregate only
    assert items[3].step == 1 and items[4].step == 1  # the action is first seen by the next request


def test_resources(corpus: Path) -> None:
    calls = [
        r
        for r in read(corpus / "swe-agent" / "swea-testdata-gpt4-test-repo-i1.traj")
        if isinstance(r, Item) and r.kind == "tool_call"
    ]
    got = [(c.tool_name, c.resource, c.access) for c in calls]
    assert got[0] == ("find_file", "missing_colon.py", "search")
    assert got[1][0] == "open" and got[1][1].endswith("missing_colon.py") and got[1][2] == "read"
    # edit names no file: it takes the open file from the previous observation's "(Open file: ...)"
    assert got[2] == ("edit", "/klieret__swe-agent-test-repo/tests/missing_colon.py", "write")
    assert got[4] == ("submit", None, "other")
    editor = [
        r
        for r in read(corpus / "swe-agent" / "swea-lgetter-pydata__xarray-6938.traj")
        if isinstance(r, Item) and r.kind == "tool_call" and r.tool_name == "str_replace_editor"
    ]
    assert any(c.access == "read" and c.resource == "/testbed/xarray/core/dataset.py" for c in editor)
    assert any(c.access == "write" for c in editor)


def test_old_observation_placeholder_kept_as_text(tmp_path: Path) -> None:
    traj = tmp_path / "t.traj"
    traj.write_text(
        '{"trajectory": [{"action": "ls", "observation": "x"}], "info": {}, "history": ['
        '{"role": "system", "content": "sys"}, {"role": "user", "content": "task"},'
        '{"role": "assistant", "content": "look", "thought": "look", "action": "ls"},'
        '{"role": "user", "content": "Old environment output: (12 lines omitted)"}]}'
    )
    items = [r for r in read(traj) if isinstance(r, Item)]
    assert items[-1].kind == "tool_result" and items[-1].text == "Old environment output: (12 lines omitted)"


def test_placeholders_from_sent_messages(corpus: Path) -> None:
    """Each step's ``messages`` is what the next request sent: every "Old environment output" there (except in
    the last step, whose request was never made) is one placeholder event on the replaced observation."""
    for path in sorted((corpus / "swe-agent").glob("*.traj")):
        doc = json.loads(path.read_text())
        steps = [s.get("messages") or [] for s in doc["trajectory"][:-1]]
        expected = sum("Old environment output" in text_of(m.get("content")) for msgs in steps for m in msgs)
        records = read(path)
        items = {r.seq: r for r in records if isinstance(r, Item)}
        ph = records[0].metadata.get("placeholders", {"wordings": [], "events": []})
        old = [e for e in ph["events"] if ph["wordings"][e[2]] == "Old environment output: (N lines omitted)"]
        assert len(old) == expected, path.name
        for step, seq, _, chars, origin in old:
            assert origin == 0 and items[seq].kind == "tool_result" and items[seq].step < step
            assert chars < len(items[seq].text)


def test_assistant_items_are_what_the_model_wrote(corpus: Path) -> None:
    """Per request whose prompt the trajectory records (``trajectory[i].messages``), the visible items add up to
    the sent messages character for character: assistant content (thought + the action as written, or content +
    function-call arguments), observations whole or as the placeholder the request showed."""
    checked = 0
    for path in sorted((corpus / "swe-agent").glob("*.traj")):
        doc = json.loads(path.read_text())
        records = read(path)
        items = [r for r in records if isinstance(r, Item)]
        ph = records[0].metadata.get("placeholders", {"events": []})
        n_requests = sum(isinstance(r, Request) for r in records)
        for k, step in enumerate(doc["trajectory"]):
            if not step.get("messages") or k + 1 >= n_requests:
                continue
            sent = sum(
                len(text_of(m.get("content"))) + sum(len(c["function"]["arguments"]) for c in m.get("tool_calls") or [])
                for m in step["messages"]
            )
            shown = {seq: chars for s, seq, _, chars, _ in ph["events"] if s == k + 1}
            counted = sum(
                shown.get(i.seq, len(i.text) + len(i.args or "") * (i.kind == "tool_call"))
                for i in items
                if i.step <= k + 1
            )
            assert counted == sent, (path.name, k + 1)
            checked += 1
    assert checked == 12 + 29 + 14 + 26 + 75


def test_function_calls_keep_the_models_arguments(corpus: Path) -> None:
    records = read(corpus / "swe-agent" / "swea-demo-marshmallow-1867-fc-replace.traj")
    items = [r for r in records if isinstance(r, Item)]
    calls = [i for i in items if i.kind == "tool_call"]
    assert (calls[1].tool_name, calls[1].args, calls[1].call_id) == (
        "open",
        '{"path":"setup.py"}',
        "call_m6a0mcd6137L21vgVmR0DQaU",
    )
    assert calls[1].access == "read" and calls[1].resource.endswith("setup.py")
    results = [i for i in items if i.kind == "tool_result"]
    assert len(results) == len(calls) and {r.call_id for r in results} == {c.call_id for c in calls}
    lg = [
        i
        for i in read(corpus / "swe-agent" / "swea-lgetter-psf__requests-2931.traj")
        if isinstance(i, Item) and i.kind == "tool_call"
    ]
    assert lg[0].args.lstrip().startswith("<function=") and lg[0].access == "search"


def test_sniff(corpus: Path) -> None:
    for f in sorted(corpus.rglob("*")):
        if not f.is_file() or f.name == "MANIFEST.md":
            continue
        head = f.open("rb").read(HEAD_BYTES).decode("utf-8", "replace")
        assert READER.sniff(head, f) == (f.parent.name == "swe-agent"), f.name
    assert detect(corpus / "swe-agent" / "swea-demo-ctf-i_got_id.traj") is READER


def test_truncated_file_is_quarantined(corpus: Path, tmp_path: Path) -> None:
    cut = tmp_path / "cut.traj"
    cut.write_bytes((corpus / "swe-agent" / "swea-testdata-gpt4-test-repo-i1.traj").read_bytes()[:5000])
    records = read(cut)
    assert len(records) == 1 and isinstance(records[0], BadRecord)


if __name__ == "__main__":
    pytest.main([__file__])


def _placeholder_events(run: Run) -> list[tuple[int, int, str]]:
    ph = run.metadata.get("placeholders", {"wordings": [], "events": []})
    return [(step, seq, ph["wordings"][w]) for step, seq, w, _, _ in ph["events"]]


def test_requeried_calls_and_demonstrations(tmp_path: Path) -> None:
    """SWE-agent 1.1: a response rejected and asked again is a trajectory step with no history entry (a call);
    demonstration entries are prompt, never calls. Requests = api_calls, and each step's query is its own call's."""
    path = tmp_path / "fc.traj"
    path.write_text(json.dumps(attempt()))
    records = read(path)
    run = records[0]
    assert not [r for r in records if isinstance(r, BadRecord)]
    reqs = [r for r in records if isinstance(r, Request)]
    assert len(reqs) == run.metadata["model_stats"]["api_calls"] == 4
    assert run.metadata["requeried_calls"] == 1 and harness_version(run.metadata) == "1.1.0"
    items = [r for r in records if isinstance(r, Item)]
    demo = [i for i in items if i.line in range(1, 6)]  # the demonstration: text in the first call's prompt
    assert [i.kind for i in demo] == ["user_text", *["assistant_text", "assistant_text", "user_text"] * 2]
    assert all(i.step == 0 for i in demo) and demo[2].text == '{"command": "ls"}'
    assert [i.kind for i in items if i.line == 6] == ["user_text"]  # the instance template, not a result
    assert sum(i.kind == "tool_call" for i in items) == 3
    first_output = next(i for i in items if i.kind == "tool_result" and i.call_id == "call_0")
    assert first_output.step == 1  # sent from the rejected call on
    assert _placeholder_events(run) == [(3, first_output.seq, "Old environment output: (N lines omitted)")]


def test_requeried_calls_in_v10_messages(tmp_path: Path) -> None:
    """SWE-agent 1.0 wrote ``messages`` per step: after an accepted step, the next call's prompt; at a rejected
    one, that call's own. The elided output is still noted at the last call (request 3), not one early."""
    path = tmp_path / "v10.traj"
    path.write_text(json.dumps(attempt(messages=True)))
    records = read(path)
    assert sum(isinstance(r, Request) for r in records) == 4
    items = [r for r in records if isinstance(r, Item)]
    first_output = next(i for i in items if i.kind == "tool_result" and i.call_id == "call_0")
    assert _placeholder_events(records[0]) == [(3, first_output.seq, "Old environment output: (N lines omitted)")]


def test_retry_agent_attempts_are_runs(tmp_path: Path) -> None:
    """A RetryAgent file: each attempt is a run of its own (the top-level copy of the chosen one is not read
    twice), with the loop's totals and choice."""
    path = tmp_path / "retry.traj"
    path.write_text(json.dumps(retry_run()))
    records = read(path)
    runs = [r for r in records if isinstance(r, Run)]
    assert [r.run_id.rsplit("/", 1)[-1] for r in runs] == ["attempt-0", "attempt-1"]
    per_run = {r.run_id: 0 for r in runs}
    for r in records:
        if isinstance(r, Request):
            per_run[r.run_id] += 1
    assert list(per_run.values()) == [3, 4]
    loop = runs[1].metadata["retry_loop"]
    assert loop["best_attempt_idx"] == 1 and loop["model_stats"]["api_calls"] == 7 == 3 + 4
    assert loop["rloop_model_stats"]["api_calls"] == 2


def test_attempts_only_while_running(tmp_path: Path) -> None:
    """While it runs, a RetryAgent's file holds only ``attempts``: still read."""
    path = tmp_path / "running.traj"
    path.write_text(json.dumps({"attempts": [attempt(0, False)]}))
    records = read(path)
    assert not [r for r in records if isinstance(r, BadRecord)]
    assert sum(isinstance(r, Request) for r in records) == 3 and detect(path) is READER


def test_v0_requeried_calls_are_counted_not_invented(tmp_path: Path) -> None:
    """SWE-agent 0.1.0 to 0.7.0 (``sweagent/agent/agents.py``: ``save_trajectory`` writes ``{"environment",
    "trajectory", "history", "info"}``; ``check_format_and_requery`` re-asks a malformed reply from a temporary
    history, ``retry_after_format_fail``) log a re-asked call nowhere but in ``info.model_stats.api_calls``
    (``APIStats``). Synthetic content in 0.1's shape. Main: 2 requests, nothing said about the third call."""
    reply = "I'll look.\n```\nls\n```"
    history = [
        {"role": "system", "content": "SETTING: You are an autonomous programmer.", "agent": "primary"},
        {"role": "user", "content": "We're currently solving the following issue: ...", "agent": "primary"},
        {"role": "assistant", "content": reply, "thought": "I'll look.\n", "action": "ls\n", "agent": "primary"},
        {"role": "user", "content": "a.py\n(Open file: n/a)\n(Current directory: /repo)\nbash-$", "agent": "primary"},
        {"role": "assistant", "content": "Done.\n```\nsubmit\n```", "thought": "Done.\n", "action": "submit\n"},
    ]
    trajectory = [
        {"action": "ls\n", "observation": "a.py\n", "response": reply, "state": "{}", "thought": "I'll look.\n"},
        {"action": "submit\n", "observation": "diff", "response": history[4]["content"], "state": "{}", "thought": ""},
    ]
    stats = {"total_cost": 0.2, "instance_cost": 0.2, "tokens_sent": 9000, "tokens_received": 90, "api_calls": 3}
    doc = {"environment": "swe_main", "trajectory": trajectory, "history": history, "info": {"model_stats": stats}}
    path = tmp_path / "x__y-1.traj"
    path.write_text(json.dumps(doc, indent=2))
    records = read(path)
    run = records[0]
    assert sum(isinstance(r, Request) for r in records) == 2 and run.metadata["legacy_format"] is True
    assert run.metadata["unlogged_calls"] == 1
    (warning,) = run.metadata["warnings"]
    assert "api_calls is 3" in warning["message"] and "2 model calls" in warning["message"]


def test_v0_model_from_the_run_folder_name(tmp_path: Path) -> None:
    """SWE-agent 0.x ``run.py`` (``ScriptArguments.run_name``, 0.1.0 to 0.7.0) writes the trajectories of a run to
    ``<model>__<data>__<config>__t-0.00__p-0.95__c-3.00__install-1/``; the model may be a ``SHORTCUTS`` name
    (``sweagent/agent/models.py``: "gpt4" is gpt-4-1106-preview). The ``.traj`` names no model. Synthetic content.
    Main: no model, so the run is priced at nothing and tokenized with no model's tokenizer."""
    doc = {
        "environment": "swe_main",
        "trajectory": [{"action": "submit\n", "observation": "", "response": "x\n```\nsubmit\n```", "thought": "x\n"}],
        "history": [
            {"role": "system", "content": "SETTING", "agent": "primary"},
            {"role": "user", "content": "ISSUE", "agent": "primary"},
            {"role": "assistant", "content": "x\n```\nsubmit\n```", "thought": "x\n", "action": "submit\n"},
        ],
        "info": {"model_stats": {"tokens_sent": 10, "tokens_received": 2, "api_calls": 1}},
    }
    named = {
        "gpt4__swe-bench-dev-easy_first_only__default__t-0.00__p-0.95__c-3.00__install-1": "gpt-4-1106-preview",
        "azure-gpt4__SWE-bench_Lite__default__t-0.00__p-0.95__c-2.00__install-1": "gpt-4-1106-preview",
        "claude-3-5-sonnet-20240620__lite__default__t-0.00__p-0.95__c-4.00__install-1__2": "claude-3-5-sonnet-20240620",
        "my-trajectories": None,
    }
    for folder, model in named.items():
        path = tmp_path / folder / "x__y-1.traj"
        path.parent.mkdir()
        path.write_text(json.dumps(doc))
        run = read(path)[0]
        assert run.model == model and run.metadata.get("model_from") == ("run folder name" if model else None)


def test_exit_after_a_call_with_no_reply_is_no_request(tmp_path: Path) -> None:
    """SWE-agent 1.1 (``forward_with_handling``): a ``ContextWindowExceededError`` (its own count before the call, or
    the server's refusal) or a ``RetryError`` ends the run with an assistant entry it writes itself; ``_update_stats``
    never ran, so ``model_stats.api_calls`` does not count it. A cost-limit exit comes after a counted call: still a
    request. Synthetic content in 1.1's shape (the unseen Claude 4 run sympy-13877 has 24 steps, 23 api_calls)."""
    base = attempt(0, False)
    calls = base["info"]["model_stats"]["api_calls"]
    for status, message, requests in (
        ("exit_context", "Exit due to context window", calls),
        ("exit_api", "Exit due to retry error: RateLimitError", calls),
        ("exit_cost", "Exit due to cost limit", calls + 1),
    ):
        path = tmp_path / f"{status}.traj"
        path.write_text(json.dumps(ended_without_reply(base, status, message)))
        records = read(path)
        assert sum(isinstance(r, Request) for r in records) == requests, status
        assert ("no_reply_exit" in records[0].metadata) is (requests == calls)
    assert sum(isinstance(r, Request) for r in read_doc(tmp_path, base)) == calls


def read_doc(tmp_path: Path, doc: dict) -> list:
    path = tmp_path / "plain.traj"
    path.write_text(json.dumps(doc))
    return read(path)
