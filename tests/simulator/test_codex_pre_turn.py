"""codex-rs checks its auto-compact limit before a turn records its input (``run_pre_sampling_compact`` runs before
``record_context_updates_and_set_reference_context_item`` and the user's message), and again after each request
that needs a follow-up: a turn that ends just under the limit and starts with a long message sends its first
request past the limit (here 0.97 of the 258,400 logged window), and the compaction comes before its second.

Hand-written Codex CLI 0.118 rollout on gpt-5.4 (window 272,000, limit 244,800): a turn reaching 236,000, then a
turn whose 14,000-token message takes the first request to 250,600; the model calls a tool, codex-rs compacts, and
the follow-up request is sent on the summary.
"""

from __future__ import annotations

import json
from pathlib import Path

from replay.ingest import ingest
from replay.simulator.fidelity import fidelity_frame
from replay.simulator.load import load_runs
from replay.store import open_store
from tests.simulator.test_codex_comp_hash import Log, line, message


def rollout() -> list[dict]:
    log = Log()
    meta = {"id": "019d7321-08b9-7972-a543-000000000003", "cwd": "/tmp", "originator": "codex_cli_rs"}
    log.lines.append(line("session_meta", {**meta, "cli_version": "0.118.0", "source": "cli"}))
    log.turn("019d7321-0000-7000-8000-000000000001", "gpt-5.4", None)
    for n, prompt in enumerate((80_000, 158_000, 236_000)):
        log.item("user", f"step {n}")
        log.item("assistant", "x " * 156_000)
        log.count(prompt)
    log.turn("019d7321-0000-7000-8000-000000000002", "gpt-5.4", None)
    log.item("user", "review this log " + "y " * 28_000)
    log.lines.append(
        line("response_item", {"type": "function_call", "name": "shell", "call_id": "c1", "arguments": "{}"})
    )
    log.count(250_600)
    log.lines.append(line("response_item", {"type": "function_call_output", "call_id": "c1", "output": "ok"}))
    summary = "SUMMARY: steps done, log under review"
    log.item("assistant", summary)
    log.count(250_700)  # the summariser's call
    replacement = [message("user", "step 0"), message("user", "review this log"), message("user", summary)]
    log.lines.append(line("compacted", {"message": summary, "replacement_history": replacement}))
    log.item("assistant", "reviewed")
    log.count(16_000)
    return log.lines


def test_the_compaction_follows_the_turns_first_request(tmp_path: Path) -> None:
    path = tmp_path / "rollout-2026-04-09T23-43-58-019d7321-08b9-7972-a543-000000000003.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in rollout()))
    con = open_store(tmp_path / "s.duckdb")
    ingest(con, [path])
    (run,) = load_runs(con, None, own_windows=True)
    assert run.rec_prompt.tolist() == [80_000, 158_000, 236_000, 250_600, 16_000]  # 250,600: 0.97 of 258,400
    (event,) = [r for r in fidelity_frame(con, None).to_dicts() if r["kind"] != "run"]
    # not before request 3 (its count before the turn's message is 236k, under 244,800): before request 4
    assert (event["recorded_request"], event["simulated_request"], event["reason"]) == (4, 4, None)
