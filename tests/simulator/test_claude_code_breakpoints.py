"""Claude Code's message cache breakpoints by version, and how far Anthropic's cache looks back from one: a tool round
that adds many blocks still reads the previous prompt through the breakpoint on the response (versions that mark the
last two messages), or within the look-back."""

from __future__ import annotations

import numpy as np
import pytest

from replay.policies import Budget, make_policy
from replay.run_arrays import KIND_CODE, TOOL_CALL, TOOL_RESULT
from replay.simulator.caches import Anthropic, make_cache
from replay.simulator.claude_code_breakpoints import marks_last_two
from replay.simulator.kernels.caches import assistant_mid
from replay.simulator.run import simulate_run
from tests.simulator.cache_state import CacheState
from tests.simulator.corpus_runs import one_run

MODEL = "claude-sonnet-4-5-20250929"
TEXT, REASONING = KIND_CODE["assistant_text"], KIND_CODE["reasoning"]


@pytest.mark.parametrize(
    ("version", "two"),
    [
        ("1.0.15", True),
        ("2.0.2", True),
        ("2.1.58", True),
        ("2.1.59", False),
        ("2.1.61", False),
        ("2.1.62", True),
        ("2.1.68", True),
        ("2.1.69", False),
        ("2.1.146", False),
        (None, False),
    ],
)
def test_which_versions_mark_the_last_two_messages(version, two):
    assert marks_last_two({"cc_version": version} if version else {}) is two


def _round(calls: int) -> np.ndarray:
    """A response of text and ``calls`` tool calls, interleaved with their results as the transcript logs them."""
    return np.array([TEXT] + [TOOL_CALL, TOOL_RESULT] * calls, dtype=np.int8)


def test_the_response_breakpoint_stands_after_its_blocks():
    kind = np.concatenate([np.array([TEXT], np.int8), _round(12)])  # position 1: the previous prompt's end
    forms = np.zeros(len(kind), np.int8)
    assert assistant_mid(kind, forms, 1, len(kind)) == 1 + 13  # text and 12 calls, the results after them
    assert assistant_mid(kind, forms, 1, len(kind) - 1) == len(kind) - 1  # the view ends with a call: none
    thinking_last = np.concatenate([kind, np.array([REASONING, TOOL_RESULT], np.int8)])
    assert assistant_mid(thinking_last, np.zeros(len(thinking_last), np.int8), 1, len(thinking_last)) == len(
        thinking_last
    )  # a response that ends with its thinking block carries no breakpoint


def _reads(added: int, mid: int) -> int:
    """What the request after one that held 3,000 + 500 tokens reads when it adds ``added`` items of 100 tokens
    (``mid``: the breakpoint on the response, -1 none)."""
    sizes = np.array([3000, 500] + [100] * added, dtype=np.int64)
    cum = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    state = CacheState(make_cache("anthropic"), MODEL, 2, 0, 0, sizes)
    state.request(2, 2, 1, 0.0, cum[:3], -1, 0, sent=0.0, done=0.0)
    end = 2 + added
    return state.request(end, end, 1, 10.0, cum, -1, 0, sent=10.0, done=10.0, mid=mid)[0]


def test_the_cache_looks_back_22_positions():
    """Measured on Claude Code logs the project has never shipped (one breakpoint per request: 2.1.97 to 2.1.146):
    requests that added 21 and 22 items read the whole previous prompt (6 requests, 3 sessions), those that added 23
    and 24 read only the system prompt (3 requests, 3 sessions). Anthropic documents "approximately 20" blocks."""
    assert Anthropic().lookback == 22
    assert _reads(22, -1) == 3500 and _reads(23, -1) == 3000
    assert _reads(30, 2 + 5) == 3500  # the response's 5 blocks: read through its breakpoint


def test_a_tool_round_of_25_items_reads_through_the_response_breakpoint(claude_code_runs):
    """cc-jason-webtech-48244adb (Claude Code 2.1.19, two breakpoints): request 5 added 25 items, 5 of them the
    response, and read 41,757 tokens, all that request 4 held and more. From the end alone the replay read 36,649.
    Request 4 held all it sent but the 67 tokens after its breakpoint: a result logged before that of an earlier
    call (132 in o200k: replay.simulator.run_start.results_after_breakpoint)."""
    run = one_run(claude_code_runs, "cc-jason-webtech-48244adb")
    assert run.assistant_bp and run.req_end[5] - run.req_end[4] == 25
    assert run.rec_input[4] == 67 and run.tail_extras[4] == 132
    cols, _ = simulate_run(run, make_policy("recorded"), None, Budget(200_000))
    assert cols["cached_tokens"][5] == cols["prompt_tokens"][4] - run.tail - run.tail_extras[4]
