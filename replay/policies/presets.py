"""Presets: a harness's own context policy as a registered policy plus the knob values that reproduce it.

A preset name is accepted wherever a policy name is (``--policy claude-code-1.0``); ``--set`` values override
the preset's. Figures and their sources (the corpus runs the presets are checked against are in
tests/policies/test_presets_corpus.py):

- claude-code-1.0: Claude Code 1.0.x fired at 0.92 x (200,000 - 32,000 output) = 154,560 tokens of the last
  response's prompt (ccs-livecd-gen-compact-e1ffaf02, 1.0.90: between 154,420 and 155,073); after the summary it
  re-attaches the files read most recently (about 10.8k tokens there: 64,368 after, less the 51,555 prefix and a
  2k summary).
  The Claude Code presets take the window from the budget (``--window``, 200,000 by default).
- claude-code-2: Claude Code 2.x, 200,000 - 20,000 (output) - 13,000 (buffer) = 167,000.
- codex: codex-rs compares the last response's total tokens plus the items added since with the auto-compact
  limit; its default limit is 0.9 x the model's context window (272,000: 244,800, i.e. 0.947 of the
  ``model_context_window`` 258,400 = 95% of it that the rollout reports). The corpus run (0.116.0, provider
  "mindflow") compacted between 214,785 and 214,936, 0.8315 of 258,400: a configured
  ``model_auto_compact_token_limit`` below the default is the likely cause, so the preset takes the observed
  fraction (``--set threshold=0.947`` for the source default). Summary: the compaction call's output (1,536 and
  1,764 tokens there) or the recorded summary; then the newest user messages up to 20,000 tokens.
- swe-agent-last-n: SWE-agent ``last_n_observations`` with n=5 (its 0.7 config), polling 1.
- openhands-v0: the V0 server's default pipeline's summarising condenser (keep_first 4, max_size 120); its
  conversation-window step only acts on a context-window error and its browser masking (window 2) only on
  browser outputs. A recall observation (an attachment item) is two events: the recall action is in the view too.
- openhands-v1: the V1 SDK default agent's condenser, LLMSummarizingCondenser(max_size=80, keep_first=4) as the
  SDK's default preset builds it (49cbde95, 2025-09-23; the class defaults were 120/4 until 2025-12-28, #1523, and
  240/2 since): past max_size events in the view it keeps the first keep_first and the newest
  max_size // 2 - keep_first - 1, and one summary. A V1 log records the settings it ran with
  (``runs.metadata.condenser``); attachments are a message's extended content, no event of their own.
- anthropic-clear-tool-uses: ``clear_tool_uses_20250919`` with its defaults (100,000 input tokens, keep 3).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Preset:
    """A named knob set for a registered policy."""

    name: str
    policy: str
    params: dict[str, Any] = field(default_factory=dict)
    doc: str = ""


CLAUDE_CODE = {"trigger_on": "previous_prompt", "keep_last": 0, "summary_tokens": 2_000, "summary_from_log": True,
               "reattach_tokens": 10_800}

PRESETS: dict[str, Preset] = {p.name: p for p in [
    Preset("claude-code-1.0", "auto_compact",
           {**CLAUDE_CODE, "threshold": 0.92, "output_reserve": 32_000},
           "Claude Code 1.0.x auto-compact: 0.92 x (200k - 32k output) of the last prompt; files re-attached"),
    Preset("claude-code-2", "auto_compact",
           {**CLAUDE_CODE, "threshold": 1.0, "output_reserve": 20_000, "buffer_tokens": 13_000},
           "Claude Code 2.x auto-compact: 200k - 20k output - 13k buffer = 167k of the last prompt"),
    Preset("codex", "auto_compact",
           {"threshold": 0.832, "trigger_on": "prompt", "keep_last": 0, "keep_user_tokens": 20_000,
            "summary_tokens": 1_650, "summary_from_log": True},
           "Codex CLI auto-compact at the observed 0.832 of model_context_window; user messages kept to 20k"),
    Preset("swe-agent-last-n", "last_n", {"n": 5, "polling": 1},
           "SWE-agent last_n_observations, n=5, polling 1, 'Old environment output: (N lines omitted)'"),
    Preset("openhands-v0", "openhands", {"max_size": 120, "keep_first": 4, "attachment_events": 2},
           "OpenHands V0 server default: summarising condenser, keep_first 4, max_size 120 events"),
    Preset("openhands-v1", "openhands", {"max_size": 80, "keep_first": 4, "attachment_events": 0},
           "OpenHands V1 SDK default agent: summarising condenser, max_size 80 events, keep_first 4"),
    Preset("anthropic-clear-tool-uses", "clear_tool_uses",
           {"trigger_type": "input_tokens", "trigger": 100_000, "keep": 3},
           "Anthropic clear_tool_uses_20250919 defaults: past 100k input tokens keep the last 3 tool uses"),
]}
