"""Presets: a harness's own context policy as a registered policy plus the knob values that reproduce it.

A preset name is accepted wherever a policy name is (``--policy claude-code-1.0``); ``--set`` values override
the preset's. Figures and their sources (the corpus runs the presets are checked against are in
tests/policies/test_presets_corpus.py):

Per request: a harness takes its limit of the model serving the current request, so where a session switches
model ``replay fidelity`` (``load_runs(own_windows=True)``) checks request k against the limit, and for Claude Code
2.1.153 on the trigger, of the preset chosen for request k's model (``replay.simulator.request_windows``: Claude
Code's window, output reserve and window source, codex-rs's logged turn window, Gemini CLI's ``tokenLimit`` of the
turn's active model, Copilot CLI's ``max_prompt_tokens`` of the request's model or its logged ``maxPromptTokens``,
Cline's current API handler's window, the Cline SDK's turn model's input limit). A window or limit set on the
command line holds for every request. The OpenHands presets' limits are the condenser's own settings (event count,
``max_tokens`` from ``base_state.json``), SWE-agent's a count of observations: neither depends on the model.

- Claude Code, from its npm package's cli.js (``@anthropic-ai/claude-code``; each preset is named after the first
  version read that behaves so; ``claude_code_preset`` picks one from a log's version and model). The limit is
  taken of W - R, W the window (200,000; 1,000,000 for a 1M-context model) and R the output reserve:
  min(32,000, the model's max output) until 2.1.20 (8,192 for 3.5 and Haiku 3 models), min(that, 20,000) from
  2.1.21 (cli.js 2.1.21 caps the reserve at 20,000; CHANGELOG.md 2.1.21: "Fixed auto-compact triggering too early
  on models with large output token limits"). After the summary Claude Code re-reads files (``compactConversation``:
  the read-file state is cloned, cleared, and the newest files of the clone read again): its native Read, Write,
  Edit, MultiEdit and NotebookEdit tools keep each file they touch in that state (MCP tools such as
  ``mcp__acp__Read`` do not), with the file's modification time (to 1.0.113 a read with the time of the read);
  the 5 newest are read again from disk, whole, kept while their chars/4 add up to no more than 50,000. Each
  re-read has the Read tool's token limit on the file's content (10,000 to 1.0.84, 5,000 from 1.0.85): to 2.1.19
  a file past it is left out (``REATTACH``, counted at chars/4), from 2.1.20 it becomes a
  ``compact_file_reference`` note, counted in the run's tokens (``REATTACH_2``; 2.1.20 itself falls in
  claude-code-2.1.3). The presets compute this from the run's items at each compaction (``reattach_*`` knobs,
  ``replay.policies.auto_compact.reattached``), to 2.1.19 each file as large as the log tells the whole file
  (``RunArrays.file_chars``, ``file_lines``: replay.readers.claude_code_files); the todo list, plan file, invoked skills
  and SessionStart hooks it also re-sends, and the files its Bash tool put in the state (a Haiku call names the files a
  command showed or changed, 1.0.51 to 2.1.20 at least; not logged), are not modelled. The Claude Code presets take the
  window from the budget (``--window``, 200,000 by default).

  - claude-code-1.0 (1.0.51, 1.0.70): 0.92 x (W - R) = 154,560 of the last response's usage (input, cache read,
    cache write and output).
  - claude-code-1.0.80 (1.0.80 to 2.1.0): W - R - 13,000 = 155,000 of the last response's usage; microcompact
    (cli.js runs it before every request; these versions do not log it).
  - claude-code-2.1.3 (2.1.3 to 2.1.20): the same limit against the last response's usage plus the messages since
    at chars/4 (``trigger_on`` "usage_and_new"); 2.1.9 on logs each microcompact (``microcompact_boundary``).
  - claude-code-2 (2.1.21 to 2.1.37): W - min(R, 20,000) - 13,000 = 167,000 for a 200k model, 967,000 for a 1M
    one; microcompact.
  - claude-code-2.1.38 (2.1.38 to 2.1.68): claude-code-2, and the microcompact pass also sends each image of a
    user message a response has followed as the text "[image]", before every request whatever the limit
    (``micro_images``; cli.js 2.1.38, 2.1.41, 2.1.68; 2.1.37 has no such step). It logs a
    ``microcompact_boundary`` (no ``compactedToolIds``, 2,000 ``tokensSaved`` per image) when it replaces one, and
    at the first request of each user turn while such an image is in the view (the turn starts from the messages
    as stored; its later requests from what the pass left). From 2.1.47 it also sends a user message's documents
    as "[document]" (not modelled: the reader keeps a document as an attachment).
  - claude-code-2.1.69 (2.1.69 to 2.1.73; claude-code-2.1.74 to 2.1.152): claude-code-2 without microcompact.
    cli.js 2.1.69 has neither the ``tengu_microcompact`` pass nor any writer of ``compactedToolIds`` (2.1.68 has
    both); in 2.1.110 the microcompact step returns the messages unchanged, and what is left (2.1.110, 2.1.148:
    keep the newest 5 results when the API rejects a ``context_hint``) is behind a feature flag that is off by default
    (``tengu_hazel_osprey``) and logs no ``microcompact_boundary``. The limit in 2.1.148 is still
    W - min(R, 20,000) - 13,000 (``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`` can only lower it; neither it nor
    ``CLAUDE_CODE_AUTO_COMPACT_WINDOW`` is logged); a flagged "precompute" limit of 0.8 x (W - R) for 1M models
    is off by default (``tengu_cobalt_raccoon``).
  - claude-code-2.1.69 and claude-code-2.1.74: from 2.1.69 the estimate added to the last usage starts after the
    first record of the last response, not after its last (cli.js 2.1.69: the token count walks back over the
    records of the same message id; 2.1.68 does not). A response is stored one record per content block, so its
    later blocks are estimated (chars/4 each) on top of the usage's output that counts them already: its text
    blocks to 2.1.73 (that estimator counts a tool call or thinking block as 0), also its tool calls (name and
    input) and thinking from 2.1.74 (cli.js 2.1.74 to 2.1.100, the 2.1.132 binary). Eduardodmb/ClaudeWork 6277bf85
    (2.1.143) logged preTokens 167,106 where the last usage (166,159) plus the tool results since (84) fall short
    of 167,000, and the two Edit calls and the text after the response's thinking block add 864: 167,107.
  - claude-code-2.1.153 (2.1.153 on, a window without an auto-compact source): the linux-x64 binaries (npm
    ``@anthropic-ai/claude-code-linux-x64``) from 2.1.153 run the threshold check of a local session (not
    ``CLAUDE_CODE_REMOTE``) only for an auto-compact window that is set (env, settings) or, from 2.1.163, a model
    default; 2.1.152 ran it always (its "reactive" path was behind ``tengu_cobalt_raccoon``, off by default).
    Otherwise nothing compacts until the API refuses a prompt past the window ("prompt is too long"; 4.5 models
    and later accept a prompt whose output would not fit), and the reactive compaction then summarises every
    round but the newest: the messages are grouped by API response (a group: one response and what follows it
    up to the next), the newest group stays verbatim after the summary (``keep_rounds`` 1; the boundary lists it
    in ``preservedMessages``, and 2.1.332's summary says the messages after it were "kept verbatim"); more groups
    only when the prompt's excess over the window (plus, in 2.1.332, the summary instructions) outweighs the
    newest group, or the summariser's own request is refused (not modelled). Nothing is compacted with fewer than two
    groups or no response to summarise.
  - claude-code-2.1.153-window: the same with an auto-compact window (``MODEL_DEFAULT_WINDOWS``): the threshold
    of claude-code-2.1.69, the compaction routed through the reactive one (``tengu_auto_compact_routed_reactive``),
    so the newest round is kept too. Flags that change what is kept are off by default in 2.1.332 (a token budget
    of kept rounds ``tengu_woven_tassel``, keeping the prompt's round ``tengu_partitioned_brook``); one on by
    default, a re-compaction within three turns of the last keeping no round (``tengu_sleepy_ripple``), is not
    modelled.
  W is 1,000,000 for the models Claude Code gives a native 1M window (``NATIVE_1M``: Opus 4.7 from 2.1.117, Opus 4.8
  from 2.1.154, Fable 5 and Mythos 5 from 2.1.170, Sonnet 5 from 2.1.197, Opus 5 from 2.1.219, Haiku 5.5 from
  2.1.293), else when a recorded prompt passes 200,000 (a plan's or a "[1m]" pick's 1M window). Sonnet 5's default
  auto-compact window was 967,000 until 2.1.246 (a limit of about 934K), its full 1M from 2.1.247, and 500,000 on
  the Cowork and desktop local-agent surfaces (the log's ``entrypoint``; ``DEFAULT_AUTO_COMPACT_WINDOWS``).
  Microcompact (claude-code-1.0.80 to claude-code-2): once the last usage is within 20,000 of the limit, the results of
  Read/Bash/Grep/Glob/WebSearch/WebFetch/Edit/Write calls but the newest 3 are replaced, oldest first, while the
  uncleared ones add up to more than 40,000 (chars/4), if that saves 20,000 or more; the note is about 200
  characters (a path under ~/.claude/projects to the saved result).
- codex: the last response's total tokens plus the items added since against 0.832 of ``model_context_window``,
  a fraction observed on the corpus run before the codex-rs trigger below was read in full (kept for comparison).
  Summary: the compaction call's output (1,536 and 1,764 tokens there) or the recorded summary; then the newest
  user messages up to 20,000 tokens.
- codex-rs: what codex-rs computes when nothing is configured. The limit is 0.9 x the model's context window
  (``ModelInfo::auto_compact_token_limit``, capped by the model's own ``auto_compact_token_limit`` where the
  catalog sets one), and the rollout's ``model_context_window`` is that window x ``effective_context_window_percent``
  (95 unless the model says otherwise), so the window is the logged one / 0.95 (244,800 for a 272,000-token model;
  openai/codex#40095 reports the same pair on codex-cli 0.149). The count it compares
  (``get_total_token_usage``, context_manager/history.rs) is the last response's ``total_tokens`` (input and
  output) plus the items added since, plus, unless the server said it counted them (a response header the
  rollout does not keep), codex-rs's own estimate of every encrypted reasoning item before the newest user
  message: (3/4 of its encrypted text's bytes - 650) / 4 (``trigger_on`` "codex"; the reader records the
  estimates). On the corpus run (0.116.0, provider "mindflow") that count first reaches 244,800 at exactly the
  two requests after which it compacted (245,328 and 245,148), where the prompt alone was only 0.83 of the
  logged window. codex-rs checks before a turn records its context updates and input (``run_pre_sampling_compact``)
  and after each request that needs a follow-up, so a turn's first request can go out past the limit (0.97 of the
  logged window after a long message) and the compaction comes before the next. Before a turn whose model has
  another ``comp_hash`` than the previous turn's (both logged in turn_context, 0.142 on) it compacts whatever the
  size (``CompactionReason::CompHashChanged``), its context updates and input after the summary. A lower limit set
  in config.toml (``model_auto_compact_token_limit``) is not logged: fidelity names it where a compaction came
  below the preset's limit. The originator (CLI, VS Code, desktop app) enters no limit in codex-rs: frontends
  differ by model and configuration. Chosen automatically for Codex logs (``replay.simulator.harness_preset``).
- gemini-cli: Gemini CLI chat compression (chatCompressionService, 0.17 on): the last response's prompt against
  0.5 x the model's token limit (``tokenLimit``: 1,048,576 for Gemini models, 256,000 for gemma-4-*-it from 0.41);
  the oldest 70% of the history's characters become a ``<state_snapshot>`` summary, the newest 30% stay (from a
  user message on), their tool results past the newest 50,000 tokens of them cut to 40,000 characters (0.26 on).
  From 0.30 tool output masking (on by default) also replaces every tool's results but the newest 50,000
  tokens of them by a ~700-character snippet once that frees 30,000 (``GEMINI_MASKING``; ``gemini-cli-0.29``
  without it). 0.12-0.16 used 0.2 (``gemini-cli-0.12``), earlier releases 0.7 (``gemini-cli-0.11``). The
  summary's size is not logged before 0.44: 2,000 tokens unless a logged summary sizes it.
  Read again in the npm build of 0.61.0 (2026-09-24): the threshold, preserve share, function-response
  budget, truncation, masking defaults and token limits are unchanged.
- copilot-cli: GitHub Copilot CLI (1.0.34) background compaction: before a request, messages plus tool
  definitions against 0.8 x the model's ``max_prompt_tokens`` (``COPILOT_BACKGROUND_COMPACTION_THRESHOLD``); the
  summary replaces the history up to that point at the next request (at once past 0.95,
  ``COPILOT_BUFFER_EXHAUSTION_THRESHOLD``), what came since stays. The window per model is the CLI's own table
  of known models (``copilot_prompt_limit``), 128,000 for others. 1.0.102 (native runtime, same two settings)
  still does this: run against a scripted provider with a 30,000-token window it started at 0.879 of it and not
  at 0.790 (0.823 of 28,800 started it), and its call waited for the summary at 0.968, not at 0.943. It logs each
  call's window (``maxPromptTokens``): fidelity takes that (``runs.metadata.prompt_limit``) over the table.
- swe-agent-last-n: SWE-agent ``last_n_observations`` with n=5 (its 0.7 config), polling 1.
- openhands-v0: the V0 server's default pipeline's summarising condenser (keep_first 4, max_size 120); its
  conversation-window step only acts on a context-window error and its browser masking (window 2) only on
  browser outputs. A recall observation (an attachment item) is two events: the recall action is in the view too.
- openhands-v1: the V1 SDK default agent's condenser, LLMSummarizingCondenser(max_size=80, keep_first=4) as the
  SDK's default preset builds it (49cbde95, 2025-09-23; the class defaults were 120/4 until 2025-12-28, #1523, and
  240/2 since): past max_size events in the view it keeps the first keep_first and the newest
  max_size // 2 - keep_first - 1, and one summary. A V1 log records the settings it ran with
  (``runs.metadata.condenser``), ``max_tokens`` among them from 2025-12-23 (3bd0250ab): the preset then also
  condenses past that many tokens of the view as the SDK counts it (``replay.policies.openhands``); a log without
  it, or with null, had no token limit; attachments are a message's extended content, no event of their own. Its
  summariser is sent the SDK's prompt (``replay.policies.condenser_prompt``: 500-character event previews, cache
  written); openhands-v0's the V0 server's (events cut to 10,000 characters, uncached).
  The SDK's version shows only through the settings it writes (``exclude_none``): ``max_tokens`` when set (v1.7.1),
  ``hard_context_reset_*`` (v1.11.0), ``minimum_progress`` (v1.11.5, b9c0e1f6a). With ``minimum_progress`` logged
  the preset makes no condensation that would forget fewer than that share of the view's events (the previous
  summary among them): it waits for a later request, as the SDK does for the events trigger and, up to v1.28,
  the token trigger. Not replayed, because the log does not say enough: from v1.29.0 (a75c5ac80) the token
  trigger is a hard requirement and such a condensation becomes a hard context reset (v1.11.0: the whole view,
  system prompt included, summarised at offset 0); no condenser setting marks v1.29 (the agent LLM's
  ``auth_type``, first released with it, would; the reader keeps the condenser's settings only), so a later log
  whose token condensation forgot too little is replayed as waiting. From v1.43.0 (c11602d12) the token limit is
  the lesser of ``max_tokens`` and the agent LLM's input limit (``agent.llm.max_input_tokens``, else LiteLLM's
  model table): no setting marks v1.43 either, nor v1.25.0 (a7f6d8fb9), before which the token count left the
  tool definitions out (the preset counts them). A ``CondensationRequest`` (the user's, or after a context-window
  error) keeps len(view) // 2 - keep_first - 1 events (from v1.11.0 a hard reset when that cannot be made): the
  preset makes none there (``fidelity`` does not score it; the recorded policy replays it). v1.7.1 to v1.8.1
  kept the event after keep_first too (014c6d405, fixed by 6959cf18b) and from 2025-12-25 (518bd706d) a run of
  actions after one with thinking blocks is cut whole (tool-loop atomicity); neither the version (below v1.11.0)
  nor thinking blocks apart from other reasoning is read, so cuts fall on call batches
  (``replay.policies.openhands``) at every version.
- cline: Cline's default context management (``replay.policies.cline``, read in Cline 3.57): past the max
  allowed size of the last usage (160,000 for a 200,000 window) duplicate file reads are replaced, and unless that
  saves 30% of the text the older half of the conversation after the first exchange is truncated. The window is
  Cline's model table's: 200,000 for every Claude model but the ``:1m`` variants (1,000,000); ``cline_window``.
- cline-sdk: Cline 4.x, the Cline SDK's automatic compaction (``replay.policies.cline_sdk``, read in cline/cline
  21cb8d2525 = VS Code 4.1.13, the same from 4.1.0, whose compactions the ``<id>.compaction.json`` sidecar records):
  before a request, ceil(characters / 3) of the JSON of the system prompt, messages and tools against 0.9 x the
  model's input limit (no output reserve); the older messages become one summary message, the newest 20,000
  estimated tokens of messages stay, from a turn's start and never before the latest typed user message. The
  limit is the SDK's model catalog's (``cline_sdk_input_limit``: the "anthropic" provider's own entries,
  OpenRouter's for "cline" and "openrouter"); a model not carried there gets no preset. 4.0.x (no sidecar; v4.0.0)
  counted the messages alone, past the smaller of 0.9 x the limit and the limit less a reserve, and compacted with
  the basic strategy by default: not reproduced.
- anthropic-clear-tool-uses: ``clear_tool_uses_20250919`` with its defaults (100,000 input tokens, keep 3).
- inspect-ai-summary: inspect_ai's ``CompactionSummary`` (``react(compaction=...)``, 0.3.209 to 0.3.285; also
  ``CompactionAuto`` where the log says it fell back to the summary): the prompt about to be sent past
  ``int(threshold x window)`` (0.9 by default; a threshold above 1 is a token count), the system and input messages
  the agent started with kept, the rest summarised. The threshold is the one the log's plan records, the window the
  model's in inspect_ai's own model database of that version (``replay.policies.inspect_compaction``,
  ``replay.policies.inspect_models``); chosen automatically for inspect_ai logs.
- inspect-ai-trim: ``CompactionTrim``: the same trigger; the oldest ``int(n x (1 - preserve))`` of the ``n``
  messages after the system and input ones go (preserve 0.8 by default, else the logged one), with the calls or
  results they leave alone, again while the prompt is past the limit (``replay.policies.trim_messages``).
- inspect-ai-native-anthropic: ``CompactionNative`` (or ``CompactionAuto`` where native compaction ran) on an
  Anthropic model: the same trigger; the system messages, the provider's compaction block (sized from the log) and
  "Please continue working." follow; the input messages are not kept.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from replay.policies.condenser_prompt import V1_SDK
from replay.readers.base import version_tuple
from replay.readers.cline_dedup import cline_window  # noqa: F401  (Cline's window: re-exported for the presets)


@dataclass(frozen=True)
class Preset:
    """A named knob set for a registered policy."""

    name: str
    policy: str
    params: dict[str, Any] = field(default_factory=dict)
    doc: str = ""


# Claude Code's post-compact file restore (cli.js 1.0.80, 1.0.81, 1.0.89, 1.0.90, 2.0.14, 2.1.3, 2.1.20, 2.1.21, 2.1.69,
# 2.1.79; the 2.1.132 and 2.1.160 binaries): the native file tools (not MCP ones) keep each file they touch in the
# session's read-file state; after the summary the newest 5 of it are read again from disk, whole (no offset or
# limit), kept while their chars/4 add up to no more than 50,000. Each read has a token limit on the file's content
# (10,000 to 1.0.84, 5,000 from 1.0.85): the Read tool estimates the content (characters / 4) and, past a quarter of
# the limit, asks the API's token-count endpoint. To 2.1.19 a file the count puts past the limit is not re-read (the
# retry of its first 2,000 lines passes the same check), and one whose count call fails is re-read whole; from 2.1.20
# a failed call falls back to the estimate, and a file past the limit (cli.js 2.1.27, 2.1.79, the 2.1.132 binary:
# the Read tool throws, and in the compact mode the restore makes a compact_file_reference note of it: "Note: PATH
# was read before the last conversation was summarized, but the contents are too large to include. Use Read tool if
# you need to access it.", about 140 characters and the path, some 50 tokens). The count is of the content alone
# (no line numbers). The logs agree: SWORDIntel/claude-backups sessions of 1.0.81 and 1.0.89 left out every file
# whose content passes the limit (a 117,000-character script, 33,000- and 35,000-character ones) and re-read the
# smaller ones whole; ccs-livecd-gen-compact-e1ffaf02 (1.0.90) re-read a 17,356-character CLAUDE.md (content
# o200k 4,114) and left out a 50,217-character script (12,927); cc-jason-webtech-48244adb (2.1.19) re-read a
# 21,922-character .vue file (content 4,702). To 2.1.19 the presets count the content at chars/4 (``reattach_count``
# "chars/4"): the log holds a file's content only numbered (a Read's result) or JSON-escaped (a Write's call),
# whose run tokens per character overstate the content's, so the limit fell on files the harness re-read
# (ccs-livecd's CLAUDE.md); chars/4 is also the Read tool's own estimate, near the count for code and prose. One
# 1.0.81 compaction (0c45b0a6, its first) re-read a 117,000-character script whole, as when the count call fails
# (its Opus usage limit was reached a minute later); the log cannot tell such a failure. To 2.1.19 each file is as
# large as the log tells the whole file after its calls (``reattach_whole_file``: an Edit's originalFile with the
# edit, a Write's content, a read's totalLines); from 2.1.20 the presets count in the run's tokens and size files
# by what the calls and results show (``REATTACH_2``): Eduardodmb/ClaudeWork's 2.1.13x sessions, whose transcripts
# log the re-attached files whole, move 2-7% with whole-file sizes, two of them past the event target's timing
# (their Read results number lines more compactly than the 6-wide form). From 2.1.97 the transcript logs what was
# re-attached:
# Eduardodmb/ClaudeWork 2558ae24 (2.1.132) re-attached a 22,246-character XML file whole (chars/4 5,561, o200k
# 3,444), which the fallback's count would have made a note. Jason-liu/my-claude 87bcc603 (2.1.27, attachments
# not logged) re-read whole an edited file of 11,164 characters (o200k 5,041 as shown, chars/4 2,791).
# To 1.0.113 the Read tool stamps a file with the time it read it (1.0.114 on: its modification time), so the
# newest files are the ones touched last, read or written (``reattach_order`` "touched").
REATTACH = {
    "reattach_tools": ("Read", "Write", "Edit", "MultiEdit", "NotebookEdit"),
    "reattach_whole_tools": ("Write",),
    "reattach_files": 5,
    "reattach_total": 50_000,
    "reattach_file_tokens": 5_000,
    "reattach_note_tokens": 0,
    "reattach_count": "chars/4",
    "reattach_whole_file": True,
}
REATTACH_2 = {**REATTACH, "reattach_note_tokens": 50, "reattach_count": "tokens", "reattach_whole_file": False}
# the first version whose Read limit is 5,000 tokens (10,000 before); the first that stamps a read with the file's
# modification time (before: the time of the read)
READ_LIMIT_5K_FROM = (1, 0, 85)
READ_MTIME_FROM = (1, 0, 114)
# the compaction's summariser call reads the conversation's cached prefix (the presets from 2.1.38): cli.js sends it
# as a fork of the conversation (runForkedAgent with the main thread's cache-safe parameters) from 2.1.21, behind
# the remote gate tengu_compact_cache_prefix, whose default in code turns true in 2.1.86. The forks' transcripts
# (subagents/agent-acompact-*.jsonl), first seen from 2.1.38, read 94-99% of their prompt from the cache
FORKED = {"summary_reads_cache": True}
CLAUDE_CODE = {
    "trigger_on": "last_usage",
    "keep_last": 0,
    "summary_tokens": 2_000,
    "summary_from_log": True,
    **REATTACH,
}
CLAUDE_CODE_BUFFER = {**CLAUDE_CODE, "threshold": 1.0, "buffer_tokens": 13_000, "microcompact": True}
# 2.1.153 on: every automatic compaction is the reactive one, which keeps the newest round verbatim
CLAUDE_CODE_ROUND = {**CLAUDE_CODE_BUFFER, **REATTACH_2, **FORKED, "microcompact": False, "keep_rounds": 1}

GEMINI = {
    "trigger_on": "previous_prompt",
    "keep_last": 0,
    "keep_fraction": 0.3,
    "summary_tokens": 2_000,
    "summary_from_log": True,
    "cut_results_after": 50_000,
    "cut_chars": 40_000,
}
# Gemini CLI tool output masking (toolOutputMaskingService, on by default from 0.30): before each request, past the
# newest 50,000 estimated tokens of function responses (DEFAULT_TOOL_PROTECTION_THRESHOLD; the part crossing it is
# masked too), once those add up to 30,000 (DEFAULT_MIN_PRUNABLE_TOKENS_THRESHOLD) each is replaced by a
# <tool_output_masked> snippet: 250 + 250 characters of preview, the saved file's path, about 700 characters.
# EXEMPT_TOOLS are never masked.
GEMINI_MASKING = {
    "microcompact": True,
    "micro_tools": ("*",),
    "micro_exempt": ("activate_skill", "ask_user", "enter_plan_mode", "exit_plan_mode"),
    "micro_warning": 10_000_000,  # no closeness to the limit needed: masking runs before every request
    "micro_keep": 0,
    "micro_keep_tokens": 50_000,
    "micro_min_saved": 30_000,
    "micro_note_chars": 700,
    "micro_after": True,  # client.ts: tryCompressChat, then tryMaskToolOutputs on what it left
    "micro_skip_new": True,  # the function responses being sent are not in the history it masks
}
CODEX_EFFECTIVE_PERCENT = 95  # codex-rs default effective_context_window_percent: model_context_window's share
# codex-rs's built-in model families (find_model_info_for_slug, by slug prefix, first match): the window when the
# log does not give model_context_window. Unknown slugs had no window there (no auto-compaction) until the
# fallback metadata gave them 272,000.
CODEX_FAMILY_WINDOWS = (
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("codex-mini-latest", 200_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-oss", 96_000),
    ("openai/gpt-oss", 96_000),
    ("gpt-4o", 128_000),
    ("gpt-3.5", 16_385),
    ("gpt-5", 272_000),
    ("codex-", 272_000),
    ("exp-", 272_000),
)


def codex_window(model_context_window: object, model: str | None) -> int | None:
    """The model's context window codex-rs takes its auto-compact limit from: the logged ``model_context_window``
    (the window x effective_context_window_percent) scaled back, else the window of the model's family."""
    if (
        isinstance(model_context_window, int)
        and not isinstance(model_context_window, bool)
        and model_context_window > 0
    ):
        return round(model_context_window * 100 / CODEX_EFFECTIVE_PERCENT)
    return next((w for prefix, w in CODEX_FAMILY_WINDOWS if (model or "").startswith(prefix)), None)


# Gemini CLI tokenLimit() as the gemini-cli preset's releases (0.30 on) have it, unchanged through 0.61.0:
# 1,048,576 for every Gemini model and by default, 256,000 for gemma-4 (0.41 on). Up to 0.24 it gave
# gemini-1.5-pro 2,097,152 and gemini-2.0-flash-preview-image-generation 32,000 (google-gemini/gemini-cli
# aa480e5f, in 0.25.0, dropped both cases); a session records no CLI version, and the preset is 0.30's.
GEMINI_TOKEN_LIMITS = {
    "gemma-4-31b-it": 256_000,
    "gemma-4-26b-a4b-it": 256_000,
}
GEMINI_DEFAULT_LIMIT = 1_048_576

# Copilot CLI 1.0.34: max_prompt_tokens of the models it knows (used when the service does not say), else 128,000.
COPILOT_PROMPT_LIMITS = {
    "claude-haiku-4.5": 136_000,
    "claude-opus-4.5": 168_000,
    "claude-opus-4.6": 168_000,
    "claude-sonnet-4": 128_000,
    "claude-sonnet-4.5": 168_000,
    "claude-sonnet-4.6": 168_000,
    "gemini-2.5-pro": 128_000,
    "gpt-4.1": 64_000,
    "gpt-4.1-2025-04-14": 64_000,
    "gpt-4o": 64_000,
    "gpt-5-mini": 128_000,
    "gpt-5.1": 128_000,
    "gpt-5.2": 272_000,
    "gpt-5.2-codex": 272_000,
    "gpt-5.3-codex": 272_000,
    "gpt-5.4": 272_000,
    "gpt-5.4-mini": 272_000,
    "gpt-5.4-nano": 272_000,
}
COPILOT_DEFAULT_LIMIT = 128_000


def gemini_token_limit(model: str | None) -> int:
    """The Gemini CLI's token limit for ``model`` (what its compression threshold is a share of)."""
    return GEMINI_TOKEN_LIMITS.get(model or "", GEMINI_DEFAULT_LIMIT)


def copilot_prompt_limit(model: str | None) -> int:
    """Copilot CLI's max_prompt_tokens for ``model`` from its table of known models, else its default."""
    return COPILOT_PROMPT_LIMITS.get(model or "", COPILOT_DEFAULT_LIMIT)


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in [
        Preset(
            "claude-code-1.0",
            "auto_compact",
            {
                **CLAUDE_CODE,
                "threshold": 0.92,
                "output_reserve": 32_000,
                "reattach_file_tokens": 10_000,
                "reattach_order": "touched",
            },
            "Claude Code 1.0.51-1.0.70 auto-compact: 0.92 x (200k - 32k output) of the last usage; files re-attached",
        ),
        Preset(
            "claude-code-1.0.80",
            "auto_compact",
            {**CLAUDE_CODE_BUFFER, "output_reserve": 32_000},
            "Claude Code 1.0.80-2.1.0: 200k - 32k output - 13k buffer = 155k of the last usage; microcompact",
        ),
        Preset(
            "claude-code-2.1.3",
            "auto_compact",
            {**CLAUDE_CODE_BUFFER, "output_reserve": 32_000, "trigger_on": "usage_and_new"},
            "Claude Code 2.1.3-2.1.20: 155k of the prompt about to be sent; microcompact",
        ),
        Preset(
            "claude-code-2",
            "auto_compact",
            {**CLAUDE_CODE_BUFFER, **REATTACH_2, "output_reserve": 20_000, "trigger_on": "usage_and_new"},
            "Claude Code 2.1.21-2.1.37: 200k - 20k output - 13k buffer = 167k of the prompt to be sent; microcompact",
        ),
        Preset(
            "claude-code-2.1.38",
            "auto_compact",
            {
                **CLAUDE_CODE_BUFFER,
                **REATTACH_2,
                **FORKED,
                "output_reserve": 20_000,
                "trigger_on": "usage_and_new",
                "micro_images": True,
            },
            "Claude Code 2.1.38-2.1.68: claude-code-2, answered user-message images sent as [image] from the next "
            "request on, and the summariser call a fork that reads the cached conversation",
        ),
        Preset(
            "claude-code-2.1.69",
            "auto_compact",
            {
                **CLAUDE_CODE_BUFFER,
                **REATTACH_2,
                **FORKED,
                "output_reserve": 20_000,
                "trigger_on": "usage_and_reply_text",
                "microcompact": False,
            },
            "Claude Code 2.1.69-2.1.73: 167k of the prompt about to be sent (967k on a 1M window), the last "
            "response's text after its first block estimated again; no microcompact",
        ),
        Preset(
            "claude-code-2.1.74",
            "auto_compact",
            {
                **CLAUDE_CODE_BUFFER,
                **REATTACH_2,
                **FORKED,
                "output_reserve": 20_000,
                "trigger_on": "usage_and_reply",
                "microcompact": False,
            },
            "Claude Code 2.1.74-2.1.152: claude-code-2.1.69, the last response's tool calls and reasoning after its "
            "first block estimated again too",
        ),
        Preset(
            "claude-code-2.1.153",
            "auto_compact",
            {**CLAUDE_CODE_ROUND, "trigger_on": "prompt", "buffer_tokens": 0, "output_reserve": 0},
            "Claude Code 2.1.153 on, no auto-compact window: no compaction until the API refuses a prompt past the "
            "window; then all but the newest round (the last response and what follows it) is summarised",
        ),
        Preset(
            "claude-code-2.1.153-window",
            "auto_compact",
            {**CLAUDE_CODE_ROUND, "output_reserve": 20_000, "trigger_on": "usage_and_new"},
            "Claude Code 2.1.153 on with an auto-compact window (set, or the model's default): its limit as in "
            "claude-code-2.1.69; all but the newest round is summarised",
        ),
        Preset(
            "codex",
            "auto_compact",
            {
                "threshold": 0.832,
                "trigger_on": "prompt",
                "keep_last": 0,
                "keep_user_tokens": 20_000,
                "summary_tokens": 1_650,
                "summary_from_log": True,
            },
            "Codex CLI auto-compact at the observed 0.832 of model_context_window; user messages kept to 20k",
        ),
        Preset(
            "codex-rs",
            "auto_compact",
            {
                "threshold": 0.9,
                "trigger_on": "codex",
                "keep_last": 0,
                "keep_user_tokens": 20_000,
                "summary_tokens": 1_650,
                "summary_from_log": True,
            },
            "codex-rs default auto-compact: 0.9 x the model's window (the logged model_context_window / 0.95)",
        ),
        Preset(
            "gemini-cli",
            "auto_compact",
            {**GEMINI, "threshold": 0.5, **GEMINI_MASKING},
            "Gemini CLI 0.30 on: chat compression at 0.5 of the model's token limit, newest 30% of the history "
            "kept; tool output masking past the newest 50k tokens of results",
        ),
        *(
            Preset(
                name,
                "auto_compact",
                {**GEMINI, "threshold": share},
                f"Gemini CLI chat compression at {share} of the model's token limit; newest 30% of the history kept",
            )
            for name, share in (("gemini-cli-0.29", 0.5), ("gemini-cli-0.12", 0.2), ("gemini-cli-0.11", 0.7))
        ),
        Preset(
            "copilot-cli",
            "auto_compact",
            {
                "threshold": 0.8,
                "trigger_on": "prompt",
                "keep_last": 0,
                "summary_tokens": 2_000,
                "summary_from_log": True,
                "background_until": 0.95,
            },
            "GitHub Copilot CLI background compaction at 0.8 of the model's max_prompt_tokens",
        ),
        Preset(
            "swe-agent-last-n",
            "last_n",
            {"n": 5, "polling": 1},
            "SWE-agent last_n_observations, n=5, polling 1, 'Old environment output: (N lines omitted)'",
        ),
        Preset(
            "openhands-v0",
            "openhands",
            {"max_size": 120, "keep_first": 4, "attachment_events": 2},
            "OpenHands V0 server default: summarising condenser, keep_first 4, max_size 120 events",
        ),
        Preset(
            "openhands-v1",
            "openhands",
            {"max_size": 80, "keep_first": 4, "attachment_events": 0, "prompt": V1_SDK},
            "OpenHands V1 SDK default agent: summarising condenser, max_size 80 events, keep_first 4",
        ),
        Preset(
            "cline",
            "cline",
            {},
            "Cline default: past window - 40k of the last usage, duplicate reads out, else the older half truncated",
        ),
        Preset(
            "cline-sdk",
            "cline_sdk",
            {},
            "Cline 4.1 (SDK): at 0.9 x the input limit by chars/3 of the request's JSON, older messages summarised, "
            "the newest 20k estimated tokens kept from a turn's start",
        ),
        Preset(
            "inspect-ai-summary",
            "auto_compact",
            {
                "threshold": 0.9,
                "trigger_on": "prompt",
                "keep_last": 0,
                "keep_first_prompt": True,
                "summary_from_log": True,
            },
            "inspect_ai CompactionSummary: past 0.9 of the window (or the logged threshold), the system and input "
            "messages kept, the rest summarised",
        ),
        Preset(
            "inspect-ai-trim",
            "trim_messages",
            {"threshold": 0.9, "preserve": 0.8},
            "inspect_ai CompactionTrim: past 0.9 of the window (or the logged threshold), the oldest 20% of the "
            "messages after the system and input ones dropped (or the logged preserve)",
        ),
        Preset(
            "inspect-ai-native-anthropic",
            "auto_compact",
            {"threshold": 0.9, "trigger_on": "prompt", "keep_last": 0, "summary_from_log": True},
            "inspect_ai CompactionNative on Anthropic: past 0.9 of the window (or the logged threshold), the system "
            "messages and the provider's compaction block",
        ),
        Preset(
            "anthropic-clear-tool-uses",
            "clear_tool_uses",
            {"trigger_type": "input_tokens", "trigger": 100_000, "keep": 3},
            "Anthropic clear_tool_uses_20250919 defaults: past 100k input tokens keep the last 3 tool uses",
        ),
    ]
}


# (first version, preset, output reserve cap; None: the limit is the window itself): the Claude Code presets in
# version order (see the module docstring)
CLAUDE_CODE_VERSIONS: tuple[tuple[tuple[int, ...], str, int | None], ...] = (
    ((0, 0, 0), "claude-code-1.0", 32_000),
    ((1, 0, 80), "claude-code-1.0.80", 32_000),
    ((2, 1, 3), "claude-code-2.1.3", 32_000),
    ((2, 1, 21), "claude-code-2", 20_000),
    ((2, 1, 38), "claude-code-2.1.38", 20_000),
    ((2, 1, 69), "claude-code-2.1.69", 20_000),
    ((2, 1, 74), "claude-code-2.1.74", 20_000),
    ((2, 1, 153), "claude-code-2.1.153", None),
)
# 2.1.153 on, a session whose model has a default auto-compact window (the binaries' threshold source
# "model-default"; the local threshold check runs only for a source other than "auto")
CLAUDE_CODE_WINDOWED = ("claude-code-2.1.153-window", 20_000)


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


# Models Claude Code gives their native 1M-token window without a "[1m]" choice, from the first version that does
# so: Opus 4.7 from 2.1.117 (CHANGELOG.md: "Claude Code was computing against a 200K context window instead of Opus
# 4.7's native 1M"); Opus 4.8 from 2.1.154, its first version (the 2.1.154 binary's native-1M check names Opus 4.7
# and 4.8; CHANGELOG.md 2.1.154 "Opus 4.8 is here!"); Fable 5 and Mythos 5 from 2.1.170 (that binary's check adds
# both; CHANGELOG.md 2.1.170 introduces Fable 5, 2.1.173 "Fable 5 includes 1M context by default"); Sonnet 5 from
# 2.1.197 ("native 1M-token context window"); Opus 5 from 2.1.219 ("1M context"); Haiku 5.5 from 2.1.293 (release
# notes: "Added Claude Haiku 5.5 (claude-haiku-5-5) ... 1M context"; native_1m in the 2.1.332 model table, absent
# from 2.1.240's). The 2.1.332 table marks every later model of these families (Sonnet 5.5, Opus 5.5, Fable and
# Mythos 5.1/5.2) native 1M too, which the keys match. Opus 4.6 and Sonnet 4.x get 1M by plan or a "[1m]" pick,
# which the log does not record. The native window holds on the first-party API, Claude Platform on AWS and Mantle,
# not on Bedrock or Vertex without "[1m]"; the log does not name the provider, so a run is taken as first-party.
NATIVE_1M = (
    ("opus-4-7", (2, 1, 117)),
    ("opus-4-8", (2, 1, 154)),
    ("fable-5", (2, 1, 170)),
    ("mythos-5", (2, 1, 170)),
    ("sonnet-5", (2, 1, 197)),
    ("opus-5", (2, 1, 219)),
    ("haiku-5-5", (2, 1, 293)),
)
# A model's default auto-compact window below its context window, on the CLI against the first-party API: (model
# pattern, first version, first version without it or None, surfaces, window); surfaces None: every other one. The
# surface is the session's entrypoint (CLAUDE_CODE_ENTRYPOINT, logged on each line). From 2.1.197 (Sonnet 5's first
# version) the binaries' per-model table gives Sonnet 5 500,000 on the Cowork and desktop local-agent surfaces
# ("remote_cowork", "local-agent"; still so in 2.1.332) and 967,000 elsewhere until 2.1.246, so it compacted at
# about 934K; CHANGELOG.md 2.1.247: "Changed Sonnet 5's default auto-compact window to its full 1M context, so
# sessions on the 1M window now auto-compact at about 967K tokens instead of about 934K".
SONNET_5 = re.compile(r"sonnet-5(?!-\d)")
DEFAULT_AUTO_COMPACT_WINDOWS: tuple[
    tuple[re.Pattern[str], tuple[int, ...], tuple[int, ...] | None, frozenset[str] | None, int], ...
] = (
    (SONNET_5, (2, 1, 197), None, frozenset({"remote_cowork", "local-agent"}), 500_000),
    (SONNET_5, (2, 1, 197), (2, 1, 247), None, 967_000),
)


# Claude Code 2.1.153 on compacts at a threshold only when the window has a source other than "auto" (the local
# check: env, settings and, from 2.1.163, "model-default"; 2.1.223 on also "unknown-model", server-set "clientdata"
# and "experiment", none of which the log records). A model's window is "model-default" (pattern, first version,
# below 1M only): Sonnet 4.6 and Opus 4.6 on a window below 1M (their 200K one without a 1M plan or "[1m]" pick) from
# 2.1.163 (2.1.162 has no such source; 2.1.240's set adds Opus 4.8 and Opus 5, below 1M only when 1M is disabled);
# Sonnet 5 from its first version, 2.1.197 (its row of the per-model table, DEFAULT_AUTO_COMPACT_WINDOWS: the table is
# "model-default" from 2.1.186 at the latest; at 1,000,000 from 2.1.247, where CHANGELOG.md says it then compacts
# "at about 967K tokens"); and from 2.1.260 every model on its native 1M window (NATIVE_1M; 2.1.259 has no such
# branch).
MODEL_DEFAULT_WINDOWS: tuple[tuple[re.Pattern[str], tuple[int, ...], bool], ...] = (
    (re.compile(r"sonnet-4-6"), (2, 1, 163), True),
    (re.compile(r"opus-4-6"), (2, 1, 163), True),
    (SONNET_5, (2, 1, 197), False),
)
NATIVE_1M_WINDOWED = (2, 1, 260)


def native_1m(version: tuple[int, ...], model: str) -> bool:
    """Whether Claude Code ``version`` runs ``model`` against a 1,000,000-token window whatever the plan."""
    name = model.lower()
    return any(key in name and version >= first for key, first in NATIVE_1M)


def default_auto_compact_window(version: tuple[int, ...], model: str, entrypoint: str | None = None) -> int | None:
    """The auto-compact window Claude Code ``version`` gives ``model`` by default on surface ``entrypoint`` when it
    is smaller than the model's window (``DEFAULT_AUTO_COMPACT_WINDOWS``), else None."""
    name = model.lower()
    return next(
        (
            w
            for pat, first, until, surfaces, w in DEFAULT_AUTO_COMPACT_WINDOWS
            if pat.search(name)
            and first <= version
            and (until is None or version < until)
            and (surfaces is None or entrypoint in surfaces)
        ),
        None,
    )


def model_default_window(version: tuple[int, ...], model: str, window: int) -> bool:
    """Whether Claude Code ``version`` takes ``window`` as ``model``'s default auto-compact window (threshold source
    "model-default", ``MODEL_DEFAULT_WINDOWS``), so that it compacts at a threshold of it rather than when the API
    refuses the prompt."""
    name = model.lower()
    return any(
        pat.search(name) and first <= version and (window < 1_000_000 or not below_1m)
        for pat, first, below_1m in MODEL_DEFAULT_WINDOWS
    ) or (window >= 1_000_000 and version >= NATIVE_1M_WINDOWED and native_1m(version, model))


# Claude Code's SDK loop, which the VS Code extension drives (a session marked ``turn_attachments``,
# replay.readers.claude_code_unlogged), rebuilds its read-file state at each user message from the history: the
# newest 10 files a Read showed whole, no offset or limit (cli.js 2.0.0, 2.0.2, 2.0.14), and from 2.0.15 also the
# files a Write wrote (2.0.15, 2.0.19, 2.0.26, 2.0.29 checked). What a compaction re-reads comes from that state.
SDK_STATE_FILES = 10
SDK_STATE_WRITES_FROM = (2, 0, 15)


def sdk_read_state(version: str) -> dict[str, Any]:
    """The auto_compact knobs of the read-file state Claude Code ``version``'s SDK loop rebuilds at each user
    message ({} when the version is not a version number)."""
    v = version_tuple(version.strip())
    if v is None:
        return {}
    return {"reattach_turn_files": SDK_STATE_FILES, "reattach_turn_writes": v >= SDK_STATE_WRITES_FROM}


def claude_code_preset(
    version: str, model: str | None, long_context: bool = False, entrypoint: str | None = None
) -> tuple[str, dict[str, Any], int] | None:
    """(preset, knob overrides, window) of the Claude Code ``version`` serving ``model``; None when the version is
    not a version number. ``long_context``: the run was served with the 1M window (cli.js gives Sonnet 4 models a
    1,000,000 window under the context-1m beta or a "[1m]" model name, neither of which the log records; a recorded
    prompt past 200,000 shows it). A model with a native 1M window there (``NATIVE_1M``) has it regardless; a
    default auto-compact window below it on the session's surface (``entrypoint``, ``DEFAULT_AUTO_COMPACT_WINDOWS``)
    is the window then."""
    v = version_tuple(version.strip())
    if v is None:
        return None
    name, cap = next((n, c) for first, n, c in reversed(CLAUDE_CODE_VERSIONS) if v >= first)
    window = 1_000_000 if long_context or native_1m(v, model or "") else 200_000
    default = default_auto_compact_window(v, model or "", entrypoint)
    if cap is None and (default is not None or model_default_window(v, model or "", window)):
        name, cap = CLAUDE_CODE_WINDOWED
    reserve = 0 if cap is None else min(cap, max_output(model or ""))
    params: dict[str, Any] = {} if reserve == PRESETS[name].params["output_reserve"] else {"output_reserve": reserve}
    params.update({k: x for k, x in read_state(v).items() if PRESETS[name].params.get(k) != x})
    return name, params, min(window, default or window)


def read_state(version: tuple[int, ...]) -> dict[str, Any]:
    """The auto_compact knobs of Claude Code ``version``'s post-compact file restore that differ from the presets'
    (``REATTACH``): the Read tool's 10,000-token limit before 1.0.85, files ordered by the time of the call that
    touched them last before 1.0.114."""
    out: dict[str, Any] = {}
    if version < READ_LIMIT_5K_FROM:
        out["reattach_file_tokens"] = 10_000
    if version < READ_MTIME_FROM:
        out["reattach_order"] = "touched"
    return out
