"""check_stalls: content the log holds that the server did not count (Codex Desktop 0.142-0.144 on a custom
provider: a code-mode ``exec`` call applying a patch adds its 1-5k-token script to the log, the recorded prompt ~45),
flagged when it alone forces the per-request targets to be missed."""

from __future__ import annotations

import json

import numpy as np

from replay.ingest import ingest
from replay.store import open_store
from replay.tokens import DEFAULT_OVERHEAD
from replay.tokens.calibrate import fit_usage
from replay.tokens.log_checks import RunCheck, check_stalls
from tests.simulator.test_codex_comp_hash import Log, line

TARGETS = (0.03, 0.10)


def run(stalls: list[int], n: int = 60, start: float = 20_000.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Steps, recorded prompts and the log's prompt: both grow 3,000 a request, but at ``stalls`` the log grows by a
    2,500-token patch script and the recorded prompt by 45."""
    log_growth = np.full(n, 3_000.0)
    rec_growth = np.full(n, 3_000.0)
    log_growth[0] = rec_growth[0] = 0.0
    for k in stalls:
        log_growth[k], rec_growth[k] = 2_500.0, 45.0
    return np.arange(n), start + np.cumsum(rec_growth), start + np.cumsum(log_growth)


def test_early_stalls_that_force_a_miss_flag_the_run() -> None:
    steps, recorded, log = run([2, 3, 4, 5, 6, 7, 8, 9])
    check = RunCheck()
    check_stalls(check, steps, recorded, log, TARGETS)
    (reason,) = check.reasons
    assert reason.startswith("content the server did not count: at 8 of 60 requests")


def test_one_stall_a_fitted_offset_absorbs_is_no_sign() -> None:
    steps, recorded, log = run([30])
    check = RunCheck()
    check_stalls(check, steps, recorded, log, TARGETS)
    assert check.reasons == []


def test_a_boundary_between_is_not_a_stall() -> None:
    steps, recorded, log = run([2, 3, 4, 5, 6, 7, 8, 9])
    check = RunCheck(boundaries={k: "compaction" for k in range(2, 10)})  # each drop explained by the log
    check_stalls(check, steps, recorded, log, TARGETS)
    assert check.reasons == []


def test_the_server_counting_it_is_no_stall() -> None:
    steps, recorded, log = run([])
    check = RunCheck()
    check_stalls(check, steps, recorded, log, TARGETS)
    assert check.reasons == []


def exec_call(log, k: int, script: str, output: str) -> None:
    """A code-mode ``exec`` call and its output as Codex Desktop 0.144 logs them."""
    call = {"type": "custom_tool_call", "status": "completed", "call_id": f"call_{k}", "name": "exec", "input": script}
    log.lines.append(line("response_item", call))
    result = [{"type": "input_text", "text": "Script completed\nWall time 0.1 seconds\nOutput:\n"}]
    result.append({"type": "input_text", "text": output})
    log.lines.append(
        line("response_item", {"type": "custom_tool_call_output", "call_id": f"call_{k}", "output": result})
    )


def test_a_rollout_whose_patch_scripts_the_server_did_not_count_is_flagged(tmp_path) -> None:
    """Writer-shaped rollout: each exec call reading a file adds 3,000 tokens to the log and the recorded prompt
    alike; eight early exec calls whose script applies a 2,500-token patch add it to the log while the recorded
    prompt grows by 45 (what wjmlong's 23-50-05 shows)."""
    log = Log()
    meta = {"id": "019f5c2b-c6ee-7261-9a57-000000000001", "cwd": "/tmp", "originator": "Codex Desktop"}
    log.lines.append(line("session_meta", {**meta, "cli_version": "0.144.2", "model_provider": "custom"}))
    log.turn("019f5c2b-0000-7000-8000-000000000001", "gpt-5.6-terra", "3000")
    log.item("user", "build the feature " + "u " * 2_000)
    prompt = 20_000
    log.count(prompt)
    for k in range(1, 60):
        if 2 <= k <= 9:
            patch = "*** Begin Patch\n" + "".join(f"+line {k} {i} of the new file\n" for i in range(400))
            exec_call(log, k, f"const r = await tools.apply_patch({json.dumps(patch)});\ntext(r);", "{}")
            prompt += 45
        else:
            exec_call(log, k, f'const r = await tools.shell_command({{"command": "cat f{k}"}});', f"x{k} " * 4_000)
            prompt += 3_000
        log.count(prompt)
    path = tmp_path / "rollout-2026-07-13T23-50-05-019f5c2b-c6ee-7261-9a57-000000000001.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in log.lines))
    con = open_store(tmp_path / "s.duckdb")
    ingest(con, [path])
    _, runs, _ = fit_usage(con, None, DEFAULT_OVERHEAD)
    (why,) = runs["unreconstructable"].to_list()
    assert why.startswith("content the server did not count: at 8 of 60 requests"), why
