"""The uncached tail: the part of the harness prefix a server reports as uncached input on every request (sent after
the last breakpoint, never written). Figures are from real Claude Code logs outside the corpus
(austinweitao/claude-backup, 2.1.167 and 2.1.68)."""

from __future__ import annotations

from dataclasses import replace

from replay.run_arrays import build
from replay.simulator.run_start import tail_tokens


def _run(usage: list[tuple[int, int, int]], prefix: int):
    """A run whose requests recorded (uncached input, cache read, cache write), with a prefix item of ``prefix``
    tokens first."""
    items = [{"step": 0, "kind": "system", "chars": 0, "tokens": prefix}]
    items += [{"step": k, "kind": "user_text", "chars": 4000} for k in range(len(usage))]
    requests = [
        {"step": k, "input_tokens": i, "cache_read": r, "cache_write": w, "prompt_tokens": i + r + w}
        for k, (i, r, w) in enumerate(usage)
    ]
    return replace(build("r", items, requests, model="claude-opus-4-8"), prefix_tokens=prefix)


def test_a_one_request_run_shows_its_tail_on_that_request():
    """A workflow sub-agent behind a gateway (agent-aa51eb4e, one request) read 2,080, wrote 229 and sent 19,452
    uncached: the server honoured a breakpoint and left the rest unwritten. Priced as written, the replay billed
    it 24% over its recorded cost."""
    assert tail_tokens(_run([(19_452, 2_080, 229)], prefix=21_000), "anthropic") == 19_452
    # no write recorded: nothing shows where a breakpoint stopped
    assert tail_tokens(_run([(19_452, 2_080, 0)], prefix=21_000), "anthropic") == 0


def test_no_tail_where_the_server_reports_no_write():
    """MiniMax-M2.7's passive cache (agent-ada6318c) reports no write: its uncached input is each request's new
    content (1,718 and 3,795 tokens), which the next request reads, not a block re-sent after a breakpoint."""
    passive = [(15_618, 0, 0), (1_718, 15_680, 0), (3_795, 17_536, 0)]
    assert tail_tokens(_run(passive, prefix=12_000), "anthropic") == 0
    written = [(15_618, 0, 500), (1_718, 15_680, 300), (3_795, 17_536, 400)]
    assert tail_tokens(_run(written, prefix=12_000), "anthropic") == 1_718


def test_a_first_request_that_wrote_is_a_witness_of_the_floor():
    """LAF-US/IDAHO-VAULT agent-a19967 (Claude Code 2.1.87, two requests) sent 3 tokens uncached on its first request,
    which wrote, and 3,337 on its second (tool results logged out of order). The floor from the second alone was
    3,337: the replay's second request could not read the first's prompt, and its bill came out 12% over."""
    usage = [(3, 84_631, 578), (3_337, 85_209, 4_113)]
    assert tail_tokens(_run(usage, prefix=85_000), "anthropic") == 3
    unwritten = [(3, 84_631, 0), (3_337, 85_209, 4_113)]  # a first request that wrote nothing shows no breakpoint
    assert tail_tokens(_run(unwritten, prefix=85_000), "anthropic") == 3_337
