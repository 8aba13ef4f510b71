"""check_stalls: content the log holds that the server did not count (Codex Desktop 0.142-0.144 on a custom
provider: a code-mode ``exec`` call applying a patch adds its 1-5k-token script to the log, the recorded prompt ~45),
flagged when it alone forces the per-request targets to be missed."""

from __future__ import annotations

import numpy as np

from replay.tokens.log_checks import RunCheck, check_stalls

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
