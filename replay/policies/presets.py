"""Presets: a harness's own context policy as a registered policy plus the knob values that reproduce it.

A preset name is accepted wherever a policy name is (``--policy claude-code-1.0``); ``--set`` values override
the preset's. Figures and their sources (the corpus runs the presets are checked against are in
tests/policies/test_presets_corpus.py):

- Claude Code, from its npm package's cli.js (``@anthropic-ai/claude-code``; each preset is named after the first
  version read that behaves so; ``claude_code_preset`` picks one from a log's version and model). The limit is
  taken of W - R, W the window (200,000; 1,000,000 for a 1M-context model) and R the output reserve:
  min(32,000, the model's max output) until 2.1.32 (8,192 for 3.5 and Haiku 3 models), min(that, 20,000) from
  2.1.33. After the summary the files read most recently are re-attached (about 10.8k tokens in
  ccs-livecd-gen-compact-e1ffaf02: 64,368 after, less the 51,555 prefix and a 2k summary). The Claude Code
  presets take the window from the budget (``--window``, 200,000 by default).

  - claude-code-1.0 (1.0.51, 1.0.70): 0.92 x (W - R) = 154,560 of the last response's usage (input, cache read,
    cache write and output).
  - claude-code-1.0.80 (1.0.80 to 2.1.0): W - R - 13,000 = 155,000 of the last response's usage; microcompact
    (cli.js runs it before every request; these versions do not log it).
  - claude-code-2.1.3 (2.1.3 to 2.1.32): the same limit against the last response's usage plus the messages since
    at chars/4 (``trigger_on`` "usage_and_new"); 2.1.9 on logs each microcompact (``microcompact_boundary``).
  - claude-code-2 (2.1.33 on): W - min(R, 20,000) - 13,000 = 167,000 for a 200k model.
  Microcompact (all but claude-code-1.0): once the last usage is within 20,000 of the limit, the results of
  Read/Bash/Grep/Glob/WebSearch/WebFetch/Edit/Write calls but the newest 3 are replaced, oldest first, while the
  uncleared ones add up to more than 40,000 (chars/4), if that saves 20,000 or more; the note is about 200
  characters (a path under ~/.claude/projects to the saved result).
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
CLAUDE_CODE_BUFFER = {**CLAUDE_CODE, "threshold": 1.0, "buffer_tokens": 13_000, "microcompact": True}

PRESETS: dict[str, Preset] = {p.name: p for p in [
    Preset("claude-code-1.0", "auto_compact",
           {**CLAUDE_CODE, "threshold": 0.92, "output_reserve": 32_000},
           "Claude Code 1.0.51-1.0.70 auto-compact: 0.92 x (200k - 32k output) of the last usage; files re-attached"),
    Preset("claude-code-1.0.80", "auto_compact", {**CLAUDE_CODE_BUFFER, "output_reserve": 32_000},
           "Claude Code 1.0.80-2.1.0: 200k - 32k output - 13k buffer = 155k of the last usage; microcompact"),
    Preset("claude-code-2.1.3", "auto_compact",
           {**CLAUDE_CODE_BUFFER, "output_reserve": 32_000, "trigger_on": "usage_and_new"},
           "Claude Code 2.1.3-2.1.32: 155k of the prompt about to be sent; microcompact"),
    Preset("claude-code-2", "auto_compact",
           {**CLAUDE_CODE_BUFFER, "output_reserve": 20_000, "trigger_on": "usage_and_new"},
           "Claude Code 2.1.33 on: 200k - 20k output - 13k buffer = 167k of the prompt about to be sent; microcompact"),
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


# (first version, preset, output reserve cap): the Claude Code presets in version order (see the module docstring)
CLAUDE_CODE_VERSIONS = ((0, 0, 0), "claude-code-1.0", 32_000), ((1, 0, 80), "claude-code-1.0.80", 32_000), \
    ((2, 1, 3), "claude-code-2.1.3", 32_000), ((2, 1, 33), "claude-code-2", 20_000)


def version_tuple(version: str) -> tuple[int, ...] | None:
    """(major, minor, patch) of a version string such as "2.1.19"; None when it is not one."""
    parts = version.strip().split(".")[:3]
    return tuple(int(p) for p in parts) if len(parts) == 3 and all(p.isdigit() for p in parts) else None


def max_output(model: str) -> int:
    """The output limit Claude Code reserves for ``model`` before its own cap (cli.js 2.1.19)."""
    name = model.lower()
    if "3-5" in name or "claude-3-sonnet" in name:
        return 8_192
    if "claude-3-opus" in name or "claude-3-haiku" in name:
        return 4_096
    if "opus-4-5" in name or "sonnet-4" in name or "haiku-4" in name:
        return 64_000
    return 32_000


def claude_code_preset(version: str, model: str | None, long_context: bool = False
                       ) -> tuple[str, dict[str, Any], int] | None:
    """(preset, knob overrides, window) of the Claude Code ``version`` serving ``model``; None when the version is
    not a version number. ``long_context``: the run was served with the 1M window (cli.js gives Sonnet 4 models a
    1,000,000 window under the context-1m beta or a "[1m]" model name, neither of which the log records; a recorded
    prompt past 200,000 shows it)."""
    v = version_tuple(version)
    if v is None:
        return None
    name, cap = next((n, c) for first, n, c in reversed(CLAUDE_CODE_VERSIONS) if v >= first)
    reserve = min(cap, max_output(model or ""))
    params = {} if reserve == PRESETS[name].params["output_reserve"] else {"output_reserve": reserve}
    return name, params, 1_000_000 if long_context else 200_000
