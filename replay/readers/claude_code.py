"""Claude Code session JSONL (~/.claude/projects/*/*.jsonl, subagent and workflow journal files).

One request per unique assistant ``requestId`` and ``message.id`` (either alone when only one is logged): the lines
of one API response share both and repeat its usage, which is counted once; a requestId reused by another message
is another request (with a warning). Inline sidechain (Task subagent) lines go to
child runs; a file that is itself a subagent transcript is one run marked ``sidechain``.

Compaction: a ``compact_boundary`` system line (2.x; ``compactMetadata`` {trigger, preTokens}) or, in 1.0.x, the
``isCompactSummary`` user line alone (before 1.0.21, a user line opening a new chain with the summary's first
sentence, ``unflagged_summary``), becomes a context event (``run.metadata.context_events``): everything logged
before it is dropped from the next request on, and the summary is an item of kind ``summary`` (never user text).
What Claude Code re-attaches after it (``file`` attachments, ``compact_file_reference`` notes for files too large
to re-read) follows the summary as ``attachment`` items. 1.0.x re-attaches files without logging them. From 2.1.77
the harness also reads its memory files (CLAUDE.md and kin) again, which no line logs: a memory file the session
created is an ``attachment`` item (tool_name "memory_reread") ahead of those, its content what the log's calls made
of it (replay.readers.claude_code_memory). A boundary
whose ``compactMetadata`` lists ``preservedMessages.uuids`` (else a ``preservedSegment`` {headUuid, tailUuid}, walked
from the tail by ``parentUuid``) kept those messages verbatim: they are not logged again, Claude Code's loader keeps
the earlier lines and relinks them after the summary (2.1.332's compaction keeps recent messages so, and notes it in
the summary). Their items are sent again after the summary (copies, the event's ``resent``: what the ``recorded``
policy sends; the originals are dropped with the rest); when a listed message is not in the log the loader gives up
the relink, and so does the reader (a warning, no copy). A compaction followed by the notice Claude Code appends
after one it made while the session sat idle (2.1.283 on, ``IDLE_NOTICES``) has ``cause`` "idle". A
``microcompact_boundary`` line (2.1.x; ``microcompactMetadata``: trigger, preTokens, tokensSaved, compactedToolIds,
clearedAttachmentUUIDs) is a ``microcompact`` event: from the next request on, the results of the listed tool calls
are sent as a short note (the calls stay), and the listed memory attachments are dropped; from 2.1.38 (to 2.1.68,
the last with the pass) each image of a user message that a response has followed is sent as ``[image]`` (the
pass logs no id for them: ``cleared`` lists every such image not cleared yet). Claude Code saves each
cleared result to ``<projects dir>/<session>/tool-results/<tool id>.txt`` (``.json`` for block content) and sends
``<persisted-output>`` naming PATH + a line telling the model to Read it; the event's ``cleared`` lists
``[result seq, characters of that note]`` (the home directory is not logged: taken from ``cwd`` when it lies under
/home or /Users). The note is as long as the one cli.js 2.1.19 writes (a shorter fixed note when saving fails).

A compaction fork (2.1.x, ``subagents/agent-acompact-<hex>.jsonl``, agentId ``acompact-<hex>``): Claude Code runs the
summariser as a forked agent whose transcript is a copy of the parent's messages (their requestIds and usage
included) followed by the summary request and the summariser's one response. The copies are the parent's requests,
not new ones: the run has no request; the summariser's call (the file's last response) is its ``compaction``
event's ``usage`` (``{"input", "cache_read", "cache_write", "output"}``), and ``forked_requests`` says how many
parent requests the copy held. Other forks (``agent-a<label>-<hex>.jsonl``: prompt_suggestion, side_question, ...)
may start with the parent's last response, before the fork's own prompt: such a response is the fork's context,
not its request (``copied_responses``). A sub-agent's file (``agent-a<hex>``) may open with its own response (its
prompt not logged), which stays a request.

Claude Code 1.0.10-1.0.85 sends the todo list (a ``todo`` attachment, never logged) after each TodoWrite: the
reader adds it after the call's result as an ``attachment`` item (tool_name "todo"), rebuilt from the call's input.
Up to 2.1.96 no attachment is logged: ``runs.metadata.unlogged_attachments`` says from which step the harness
watches a file (replay.readers.claude_code_unlogged). A 2.0.0-2.0.29 session the VS Code extension drove (a user
message opening with its ``<ide_selection>`` or ``<ide_opened_file>`` block) ran Claude Code's SDK loop, which
keeps attachments for their own user turn only: ``runs.metadata.turn_attachments`` ({version, line}) marks it.

Model switch (``/model``): each request keeps its own model; the run's model is the one that served most requests. A
``deferred_tools_delta`` attachment after the first request (the deferred tools changed) is noted in ``unlogged``
("deferred-tools"): at a model switch the tool list sent changes with it (the new model defers schemas to
ToolSearch), elsewhere it is a notice in the messages (replay.tokens.log_checks.DEFERRED_NOTICE). A user turn that
starts in another working directory (each line's ``cwd``) than the turn before it is noted in ``system_changes``
(reason "cwd"): the system prompt names the working directory (replay.simulator.harness_changes).

Server-side iterations (``usage.iterations``, 2.1.114 on): a response that ran several (advisor calls, API-side
compaction, a fallback model) is the request's own first ``message`` iteration, as Claude Code counts its prompt;
the other iterations are kept in ``runs.metadata.server_iterations`` and billed at their own model
(replay.readers.claude_code_iterations).

Fast mode (``/fast``): a response whose ``usage.speed`` is "fast" is noted in ``runs.metadata.fast_requests`` with
a warning; its bill is at standard rates (fast mode's multiplier is not priced).

A session with no conversation yet (only ``file-history-snapshot``, ``queue-operation``, titles, ``system`` notices
such as ``away_summary`` or a model-limit warning, hook ``progress``) holds no run: the reader gives no record, and
ingest says so (``replay.ingest.not_runs``) rather than storing an empty run. Such files are recognised by the
envelope Claude Code writes around every entry (``parentUuid``, ``isSidechain``, ``sessionId``, ``uuid``), by the
file-history snapshot's and the queue operation's own keys.

``<synthetic>`` assistant entries (model "<synthetic>", zero usage) are written by Claude Code itself, never by
the model: they are not requests. API-error ones (``isApiErrorMessage``) are filtered out before every request,
so they are not items either; other synthetic text (e.g. an interrupted turn's notice) is sent, so it is an item.
"No response requested." is the sentinel Claude Code appends to a conversation it loads to resume in a new process
(conversationRecovery): ``runs.metadata.resumes`` notes its step, from which that process runs. Such a process
rebuilds its read-file state from the loaded messages' Read, Write and Edit calls (REPL and print mode alike:
``extractReadFilesFromMessages``), so the files a compaction re-attached are no longer in it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

from replay.model import BadRecord, Item, Record, Request, Run
from replay.readers import claude_code_iterations as iterations
from replay.readers.base import ReadContext, iter_json_lines, text_of, version_tuple
from replay.readers.builder import USAGE_FIELDS, RunBuilder, seq_ranges
from replay.readers.claude_code_continued import LinkScan, continued, interleave
from replay.readers.claude_code_files import whole_file
from replay.readers.claude_code_memory import MEMORY_REREAD, MemoryFiles, rereads_memory
from replay.readers.claude_code_relog import RelogFilter
from replay.readers.claude_code_thinking import HiddenThinking
from replay.readers.claude_code_unlogged import (
    FILE_TOOLS,
    clears,
    drops_attachments,
    extension_turn,
    sends_todo_note,
    todo_note,
    unlogged_attachments,
)
from replay.readers.json_fields import sub_dict

CONVERSATION = {"user", "assistant"}
# a forked agent's id names its purpose, ``a<label>-<hex>`` (cli.js forkLabel: compact, prompt_suggestion,
# speculation, side_question, session_memory); a sub-agent's is ``a<hex>``
# the start of a message line as Claude Code serialises it (parentUuid, then isSidechain), for a line that does not
# fit the head detection reads
LONG_FIRST_LINE = re.compile(r'\{"parentUuid":(?:null|"[0-9a-f-]{36}"),"isSidechain":(?:true|false),')
FORK_ID = re.compile(r"a[a-z][a-z_]*-[0-9a-f]+")
FORK_FILE = re.compile(r"(?:^|-)agent-a[a-z][a-z_]*-[0-9a-f]+\.jsonl")
TITLE_TYPES = {"summary": "summary", "ai-title": "aiTitle", "custom-title": "customTitle"}
JOURNAL_TYPES = {"started", "result"}
# attachments Claude Code injects into the prompt (as system reminders); the rest are UI state
CONTEXT_ATTACHMENTS = {
    MEMORY_REREAD,
    "hook_additional_context",
    "nested_memory",
    "file",
    "edited_text_file",
    "skill_listing",
    "invoked_skills",
    "queued_command",
    "todo_reminder",
    "task_reminder",
    "compact_file_reference",
}
SYNTHETIC = "<synthetic>"
# what Claude Code appends after the last user message of a conversation it loads to resume (conversationRecovery:
# NO_RESPONSE_REQUESTED), logged as a <synthetic> response; an API error reusing the text is marked as one
RESUMED = "No response requested."
# a sub-agent computes its first attachments after its first tool results (query.ts getAttachmentMessages; its prompt
# gets none): the deferred tools, MCP instructions and agents it may use are announced in full there, not logged
SUBAGENT_ATTACHMENTS = "subagent attachments"
TRIGGERS = ("auto", "manual")
# the notices Claude Code appends after a compaction it made while the session sat idle (2.1.283 on; the second for
# a summary written while idle and applied at the next turn, 2.1.300 on; later versions add a "turn off with ..."
# suffix): the event's ``cause`` is "idle"
IDLE_NOTICES = (
    "Compacted while idle, before the prompt cache expired",
    "Compacted using a summary written while you were away",
)
# what a microcompacted tool result is replaced with (cli.js 2.1.19): a note pointing at the file it was saved to
# (in this project's words, each part as long as the harness's: only its length reaches the replay)
PERSISTED_NOTE = "<persisted-output>Full result saved as: {path}\n\nRead it for more</persisted-output>"
# Claude Code 2.1.38-2.1.68's microcompact also sends each image of a user message a response has followed as this
# text (cli.js 2.1.38, 2.1.41, 2.1.68), logging the pass as a microcompact_boundary with no compactedToolIds
IMAGE_NOTE = "[image]"
CLEARS_IMAGES = (2, 1, 38)
# the note Claude Code sends (as a system reminder) for a file read before a compaction and too large to re-attach,
# in this project's words, as long as the harness's (149 characters with its name field)
FILE_REFERENCE_NOTE = (
    "Note: {name} was read before the conversation was last summarised; it is too big to attach once more "
    "here. Read it with the Read tool if you need it."
)


# the opening of the summary message a compaction leaves (cli.js 0.2.109-1.0.17 write it as a plain user message, the
# first of a new chain, parentUuid null; 1.0.21 on mark it ``isCompactSummary``)
SUMMARY_OPENING = "This session is being continued from a previous conversation that ran out of context."
FLAGGED_FROM = (1, 0, 21)  # the first version whose compaction summary carries ``isCompactSummary``

# the file tools whose outcome can tell the whole file after them (claude_code_files)
WHOLE_FILE_TOOLS = ("Read", "Write", "Edit", "MultiEdit")


def _is_result(block: object) -> bool:
    """A tool_result block of a user message."""
    return isinstance(block, dict) and block.get("type") == "tool_result"


def unflagged_summary(obj: dict) -> bool:
    """A compaction summary as Claude Code before 1.0.21 logged it: a user message opening a new chain
    (``parentUuid`` null) with the summary's opening sentence, from a version without ``isCompactSummary``."""
    msg = obj.get("message")
    if obj.get("type") != "user" or obj.get("parentUuid") is not None or not isinstance(msg, dict):
        return False
    version = version_tuple(obj.get("version"))
    if version is not None and version >= FLAGGED_FROM:
        return False
    return text_of(msg.get("content")).startswith(SUMMARY_OPENING)


def _file_watched(b: RunBuilder) -> None:
    """The run's first file tool call: from the next request on, a version that does not log attachments may
    send some (``runs.metadata.unlogged_attachments``, replay.readers.claude_code_unlogged)."""
    version = b.run.metadata.get("cc_version")
    if "unlogged_attachments" not in b.run.metadata and drops_attachments(version_tuple(version)):
        b.run.metadata["unlogged_attachments"] = unlogged_attachments(b.step, str(version))


def _idle_notice(content: Any) -> bool:
    """The informational line is the notice Claude Code appends after an idle compaction."""
    return isinstance(content, str) and content.startswith(IDLE_NOTICES)


def _idle_cause(b: RunBuilder, line: int) -> None:
    """Mark the compaction this idle notice follows (no request between them) as made while idle: Claude Code
    compacts so on its own, at no threshold (docs/guide.md, the Claude Code presets)."""
    last = b.context_events[-1] if b.context_events else None
    if last is None or last["kind"] != "compaction" or last["step"] != b.step:
        b.warn(line, "an idle-compaction notice with no compaction just before it: ignored")
        return
    last["cause"] = "idle"


# the keys of the envelope Claude Code writes around every transcript entry (a system notice, a hook's progress, an
# attachment, a message), whatever its type
ENVELOPE = ("parentUuid", "isSidechain", "sessionId", "uuid")


def _looks_like_cc(obj: Any) -> bool:
    if not isinstance(obj, dict):
        return False
    kind = obj.get("type")
    if kind in CONVERSATION:
        return isinstance(obj.get("message"), dict) and ("sessionId" in obj or "agentId" in obj or "uuid" in obj)
    if kind == "summary":
        return "leafUuid" in obj
    if kind == "file-history-snapshot":  # {type, messageId, snapshot, isSnapshotUpdate} (insertFileHistorySnapshot)
        return "messageId" in obj and isinstance(obj.get("snapshot"), dict)
    if kind == "queue-operation":  # {type, operation, timestamp, sessionId, ...}: a prompt queued while busy
        return "operation" in obj and "sessionId" in obj
    if kind == "teleported-from":  # {type, remoteSessionId, branch, messageCount}: a web session brought here
        return "remoteSessionId" in obj
    if isinstance(kind, str) and all(key in obj for key in ENVELOPE):
        return True
    return kind in JOURNAL_TYPES and "agentId" in obj and "key" in obj


def _attachment_text(att: dict) -> str:
    """What an attachment sends as text: a queued command's prompt of blocks (text and pasted images, 2.1.x) its
    text blocks, its images being items of their own (``_attach``)."""
    if att.get("type") == "compact_file_reference":
        return FILE_REFERENCE_NOTE.format(name=att.get("filename") or att.get("displayPath") or "")
    content = att.get("content")
    if isinstance(content, dict) and isinstance(content.get("file"), dict):
        return text_of(content["file"].get("content"))
    return text_of(content) or next((text_of(att[k]) for k in ("snippet", "prompt", "text") if att.get(k)), "")


def _image(b: RunBuilder, block: dict, line: int, ts: str | None, tool: str | None = None) -> Item:
    """An image item; ``tool``: the tool whose result holds it (None: a user message holds it)."""
    source = sub_dict(block, "source")
    text = f"[image {source.get('media_type') or ''}]".replace(" ]", "]")
    return b.image("user", text, source.get("data"), ts=ts, line=line, tool_name=tool)


class ClaudeCodeReader:
    format = "claude-code"
    version = 21  # 2: a usage whose prompt counts no token is no usage (a zeroed counter); 3: writes logged only
    # in the cache_creation breakdown are counted; 4: messages a compaction preserved are sent after its summary,
    # the session's ``entrypoint`` (the surface Claude Code ran on) is kept; 5: a response of several server-side
    # iterations is the request's own iteration, the others ``server_iterations``; 6: a compaction summary of
    # 0.2.109-1.0.17, logged without ``isCompactSummary``, is a compaction; 7: a file with no message, attachment,
    # summary, compaction or journal entry (titles, file-history snapshots, system notices only) makes no run;
    # 8: a fork's response before its prompt is the parent's (``copied_responses``), not a request; 9: a user turn
    # started in another working directory is noted in ``system_changes``; 10: the unlogged todo-list note after
    # each TodoWrite of 1.0.10-1.0.85, ``unlogged_attachments`` up to 2.1.96 (claude_code_unlogged); 11: a
    # microcompact of 2.1.38-2.1.68 clears the answered user-message images (``cleared``), an image a tool result
    # holds is named after its tool; 12: from 2.1.77 a compaction is followed by the memory files the session
    # created (an ``attachment`` item, tool_name "memory_reread"; claude_code_memory); a deferred_tools_delta
    # logged right after a compaction is no ``unlogged`` prefix change; 13: a session the VS Code extension drove
    # on 2.0.0-2.0.29 (an ``<ide_selection>`` or ``<ide_opened_file>`` block) is marked ``turn_attachments``: its
    # attachments are gone from the next user message on (claude_code_unlogged); 14: what a file tool's
    # ``toolUseResult`` tells of the whole file after it (``file_chars``, ``file_lines``; claude_code_files); 15: a
    # chain that goes on in another transcript of the folder is read with its lines (claude_code_continued); 16: a
    # response logged with only its stream's opening usage, where other responses' usage settles later, has none
    # (``unsettled_usage``); 17: each image's pixel size (``image_sizes``: [[seq, width, height], ...]; tokens.images),
    # thinking logged without its text sized from the response's output (``thinking_tokens``; claude_code_thinking);
    # 18: a deferred_tools_delta right after a compaction that defers tools never announced before is a prefix
    # change (``unlogged``), not the list announced again; a ``teleported-from`` record alone makes no run; 19: a
    # resumed conversation's sentinel ("No response requested.") is noted in ``resumes``; 20: a sub-agent's first
    # attachments, sent from its second request and never logged, are noted in ``unlogged``; 21: a queued command's
    # prompt of blocks is its text blocks and image items (it was the Python text of its blocks, base64 included)

    def sniff(self, head: str, path: Path) -> bool:
        lines = head.splitlines()
        for line in lines[:40]:
            try:
                if _looks_like_cc(json.loads(line)):
                    return True
            except (ValueError, TypeError, RecursionError):  # unparseable or odd-typed line: look at the next
                continue
        # a first line longer than the head (a pasted image): Claude Code writes every message line's envelope first
        return len(lines) == 1 and LONG_FIRST_LINE.match(head) is not None

    def read(self, ctx: ReadContext) -> Iterator[Record]:
        """One pass; a file where two sessions' lines interleave (a sessionId comes back after another's lines) is
        read again with each session its own run."""
        order: list[str] = []  # sessionIds, one entry per block of consecutive lines
        session = _Session(ctx, self.format)
        scan = LinkScan()
        stats = dict(ctx.stats)  # a second pass over the file counts its duplicate and mended lines again
        bad = []
        for entry in iter_json_lines(ctx):
            if isinstance(entry, BadRecord):
                bad.append(entry)
            elif isinstance(entry[1], dict):
                obj = entry[1]
                sid = obj.get("sessionId") if obj.get("type") in CONVERSATION else None  # not UI state lines
                if isinstance(sid, str) and (not order or order[-1] != sid):
                    order.append(sid)
                scan.see(*entry)
                session.line(*entry)
        if len(order) == len(set(order)):
            yield from bad
            found = None if session.agent_file else continued(ctx.path, scan, session.uuids)
            if found is not None:  # the chain goes on in another transcript of the folder: read again with its lines
                ctx.stats.clear()
                ctx.stats.update(stats)
                session = _Session(ctx, self.format)
                session.resumed = found.resumed()
                for line, obj, source in interleave(iter_json_lines(ctx), found):
                    if isinstance(obj, dict):
                        session.line(line, obj, source)
            yield from session.finish()
            return
        ctx.stats.clear()
        ctx.stats.update(stats)
        yield from self._by_session(ctx, list(dict.fromkeys(order)))

    def _by_session(self, ctx: ReadContext, ids: list[str]) -> Iterator[Record]:
        """Each session's lines as a run of its own (a line that is not a message goes with the message before it)."""
        sessions = {
            sid: _Session(ctx, self.format, None if n == 0 else f"session-{n + 1}") for n, sid in enumerate(ids)
        }
        current = sessions[ids[0]]
        for entry in iter_json_lines(ctx):
            if isinstance(entry, BadRecord):
                yield entry
            elif isinstance(entry[1], dict):
                if entry[1].get("type") in CONVERSATION:  # other lines go with the conversation line before them
                    current = sessions.get(entry[1].get("sessionId"), current)  # type: ignore[arg-type]  # None: not found
                current.line(*entry)
        first = sessions[ids[0]].main
        shown = ", ".join(s[:40] for s in ids[:5]) + (", ..." if len(ids) > 5 else "")
        first.warn(
            0,
            f"{len(ids)} sessions' lines are interleaved in this file (sessionId {shown}): read as {len(ids)} runs, "
            "one per sessionId",
        )
        for session in sessions.values():
            yield from session.finish()


def _cache_writes(b: RunBuilder, step: int, usage: dict) -> None:
    """Note request ``step``'s cache writes by TTL in ``runs.metadata.cache_writes`` (step -> [5 min, 1 h]
    tokens), when the usage splits them (``cache_creation.ephemeral_5m/1h_input_tokens``)."""
    split = usage.get("cache_creation")
    if isinstance(split, dict) and ("ephemeral_1h_input_tokens" in split or "ephemeral_5m_input_tokens" in split):
        b.run.metadata.setdefault("cache_writes", {})[str(step)] = [
            int(split.get("ephemeral_5m_input_tokens") or 0),
            int(split.get("ephemeral_1h_input_tokens") or 0),
        ]


def _cache_write(usage: dict) -> Any:
    """A response's cache writes: ``cache_creation_input_tokens``, or the sum of its ``cache_creation`` breakdown
    when that field says 0 (or is missing) and the breakdown does not. Claude Code before 2.1.152 logged 0 there when
    the API reported the writes only in the breakdown (CHANGELOG.md 2.1.152: "Fixed cache_creation_input_tokens
    reporting as 0 in transcript and result usage when the API reports cache writes only via the nested
    cache_creation breakdown"); the server wrote, and billed, those tokens all the same."""
    total = usage.get("cache_creation_input_tokens")
    split = usage.get("cache_creation")
    if total not in (0, None) or not isinstance(split, dict):
        return total
    parts = [split.get(k) for k in ("ephemeral_5m_input_tokens", "ephemeral_1h_input_tokens")]
    if not all(p is None or (type(p) is int and p >= 0) for p in parts) or not any(parts):
        return total
    return sum(p or 0 for p in parts)


def _fast(b: RunBuilder, step: int, line: int) -> None:
    """Note a request served in fast mode (``usage.speed`` "fast", logged from Claude Code 2.1.x) in
    ``runs.metadata.fast_requests``; the first one warns that the bill prices it at standard rates, which fast mode
    multiplies (by model: platform.claude.com/docs/en/build-with-claude/fast-mode; 2x on Opus 4.8 per Claude
    Code's CHANGELOG.md 2.1.154)."""
    steps = b.run.metadata.setdefault("fast_requests", [])
    if not steps:
        b.warn(
            line,
            'a request ran in fast mode (usage.speed "fast"): replay prices it at the model\'s standard rates, '
            "which fast mode multiplies, so this run's bill is a lower bound (runs.metadata.fast_requests lists them)",
        )
    steps.append(step)


def _server_calls(b: RunBuilder, step: int, line: int, calls: list[dict]) -> None:
    """Keep request ``step``'s other server-side iterations (replay.readers.claude_code_iterations) in
    ``runs.metadata.server_iterations``, replacing what an earlier line of the same response gave; warn once when
    one is an API-side compaction, whose change to later prompts the log does not hold."""
    kept = [c for c in b.run.metadata.get("server_iterations", []) if c["step"] != step]
    kept += [{"step": step, "line": line, **c} for c in calls]
    if kept:
        b.run.metadata["server_iterations"] = kept
    else:
        b.run.metadata.pop("server_iterations", None)
    said = any("API-side compaction" in w["message"] for w in b.run.metadata.get("warnings", []))
    if not said and any(c["type"] == "compaction" for c in calls):
        b.warn(
            line,
            "the API compacted the context inside this request (a compaction iteration in usage.iterations): its "
            "call is billed, but the prompts after it are read as the log's whole history, not the API's summary",
        )


def _write_1h(usage: dict) -> int | None:
    """The 1 hour part of a response's cache writes (``cache_creation.ephemeral_1h_input_tokens``), None when the
    usage does not split writes by duration. Writes the split leaves out (some Anthropic-compatible endpoints
    report ``cache_creation_input_tokens`` with a split of zeros) are 5 minute writes, the API's default TTL."""
    split = usage.get("cache_creation")
    if not isinstance(split, dict) or "ephemeral_1h_input_tokens" not in split:
        return None
    return split["ephemeral_1h_input_tokens"]


def _after_compaction(b: RunBuilder) -> bool:
    """Whether a compaction took effect at the step about to be sent (its summary and re-attachments being logged).

    Claude Code 2.1.69 on (the 2.1.132 binary: the delta is built against the ``deferred_tools_delta`` attachments
    still in the messages) announces every deferred tool again after a summary: the same list the first request's
    announcement and any later deltas gave, which the fitted prefix and its earlier boundaries hold already."""
    events = b.context_events
    return bool(events) and events[-1]["kind"] == "compaction" and events[-1]["step"] == b.step


def _attach(b: RunBuilder, obj: dict, line: int, ts: str | None) -> int | None:
    """Add a context attachment as an item, and the images a queued command pasted (sent as images, not as the
    base64 text of their blocks); its seq (None: not sent to the model)."""
    att = sub_dict(obj, "attachment")
    if att.get("type") not in CONTEXT_ATTACHMENTS:
        return None
    text = _attachment_text(att)
    seq = b.add("attachment", "user", text, tool_name=att["type"], ts=ts, line=line).seq if text else None
    prompt = att.get("prompt")
    for block in prompt if isinstance(prompt, list) else []:
        if isinstance(block, dict) and block.get("type") == "image":
            _image(b, block, line, ts)
    return seq


def _home(cwd: str) -> str:
    """The user's home directory as far as ``cwd`` tells it (Claude Code keeps its projects under ~/.claude)."""
    parts = cwd.split("/")
    if cwd.startswith(("/home/", "/Users/")) and len(parts) >= 3:
        return "/".join(parts[:3])
    return "/root" if cwd.startswith("/root") else ""


def persisted_note(cwd: str, session: str, tool_id: str, ext: str) -> str:
    """The note Claude Code sends for a microcompacted tool result saved to its session's tool-results folder."""
    project = "".join(c if c.isascii() and c.isalnum() else "-" for c in cwd)
    return PERSISTED_NOTE.format(path=f"{_home(cwd)}/.claude/projects/{project}/{session}/tool-results/{tool_id}.{ext}")


def _microcompact(
    b: RunBuilder,
    obj: dict,
    line: int,
    result_ext: dict[str, str],
    attachments: dict[str, int],
    images: list[tuple[int, int]],
) -> None:
    """A microcompact_boundary line (2.1.x): from the next request on the results of ``compactedToolIds`` are a
    note naming the file they were saved to (their calls stay), ``clearedAttachmentUUIDs`` are gone, and from 2.1.38
    each image of a user message that a response has followed (``images``: (seq, step) of the run's user-message
    images not cleared yet; those sent before this step were answered) is the text ``IMAGE_NOTE``."""
    meta = sub_dict(obj, "microcompactMetadata")
    ids = [i for i in meta.get("compactedToolIds") or [] if isinstance(i, str)]
    results = {r.call_id: r.seq for r in b.records if isinstance(r, Item) and r.kind == "tool_result"}
    cwd, session = str(b.run.metadata.get("cwd") or ""), str(b.run.metadata.get("session_id") or "")
    cleared = [
        [results[i], len(persisted_note(cwd, session, i, result_ext.get(i, "txt")))] for i in ids if i in results
    ]
    version = version_tuple(obj.get("version"))
    if version is not None and version >= CLEARS_IMAGES:
        answered = [seq for seq, step in images if step < b.step]
        cleared.extend([seq, len(IMAGE_NOTE)] for seq in answered)
        images[:] = [(seq, step) for seq, step in images if step >= b.step]
    gone = [attachments[u] for u in meta.get("clearedAttachmentUUIDs") or [] if isinstance(u, str) and u in attachments]
    raw, pre, saved = meta.get("trigger"), meta.get("preTokens"), meta.get("tokensSaved")
    extra: dict[str, Any] = {"trigger_logged": raw} if raw is not None and raw not in TRIGGERS else {}
    if isinstance(saved, int):
        extra["tokens_saved"] = saved
    b.context_event(
        "microcompact",
        drop=seq_ranges(gone),
        trigger=raw if raw in TRIGGERS else None,
        pre_tokens=pre if isinstance(pre, int) else None,
        line=line,
        cleared=sorted(cleared),
        **extra,
    )


def _most_served_model(b: RunBuilder) -> None:
    """The run's model is the one that served most of its requests (the first seen on a tie): a session switched
    with /model keeps each request's own model in ``requests.model``."""
    served: dict[str, int] = {}
    for r in b.records:
        if isinstance(r, Request) and r.model:
            served[r.model] = served.get(r.model, 0) + 1
    if served:
        _set_run(b, model=max(served, key=lambda m: served[m]))


def _fork_to_event(b: RunBuilder) -> None:
    """A compaction fork's requests are the parent's (copied) and the summariser's call (the last one): none stays a
    request of this run; the last becomes its compaction event's usage. Items all precede that call (step 0)."""
    reqs = [r for r in b.records if isinstance(r, Request)]
    if not reqs:
        return
    call = reqs[-1]
    b.records = [replace(r, step=0) if isinstance(r, Item) else r for r in b.records if not isinstance(r, Request)]
    for key in ("cache_writes", "unlogged", "fast_requests", "server_iterations", "system_changes"):
        b.run.metadata.pop(key, None)
    b.run.metadata["forked_requests"] = len(reqs) - 1
    b.step = 0
    usage = {
        "input": call.input_tokens,
        "cache_read": call.cache_read,
        "cache_write": call.cache_write,
        "output": call.output_tokens,
    }
    if call.cache_write_1h is not None:
        usage["cache_write_1h"] = call.cache_write_1h
    b.context_event("compaction", step=0, line=call.line, usage=usage, summariser_model=call.model)
    b.run = b.records[0] = replace(b.run, model=call.model or b.run.model)


def resend(b: RunBuilder, seqs: list[int]) -> list[list[int]]:
    """Add again, at this point, the items ``seqs`` (messages a compaction kept, sent after its summary); their
    seq ranges."""
    wanted = set(seqs)
    items = {r.seq: r for r in b.records if isinstance(r, Item) and r.seq in wanted}
    first = b.seq
    for seq in seqs:
        b.records.append(replace(items[seq], seq=b.seq, step=b.step, turn=b.turn))
        b.seq += 1
    return [[first, b.seq]] if b.seq > first else []


def _before(b: RunBuilder, seq: int) -> list[list[int]]:
    """The drop range of a compaction at ``seq``: the conversation logged before it."""
    lo = b.body_start()
    return [[lo, seq]] if lo < seq else []


def _note_borrowed(b: RunBuilder, source: str) -> None:
    """Count a line of ``source`` read as context in ``runs.metadata.continued_from`` ({file, lines} per file)."""
    found = b.run.metadata.setdefault("continued_from", [])
    for entry in found:
        if entry["file"] == source:
            entry["lines"] += 1
            return
    found.append({"file": source, "lines": 1})


def _set_run(b: RunBuilder, **changes: Any) -> None:
    b.run = b.records[0] = replace(b.run, **changes)


class _Session:
    """The state of reading one file: the main run, sidechain child runs, requests seen."""

    def __init__(self, ctx: ReadContext, fmt: str, label: str | None = None) -> None:
        self.ctx, self.format, self.label = ctx, fmt, label
        self.agent_file = "agent-" in ctx.path.name or "-sub-" in ctx.path.name
        self.compaction_fork = "agent-acompact-" in ctx.path.name  # or an agentId "acompact-..." (see line())
        self.fork = FORK_FILE.search(ctx.path.name) is not None  # or such an agentId (see line())
        meta: dict[str, Any] = {"sidechain": True} if self.agent_file else {}
        self.main = RunBuilder(
            Run(run_id=ctx.run_id(label), format=fmt, source_path=str(ctx.path), harness="claude-code", metadata=meta)
        )
        self.children: dict[str, RunBuilder] = {}
        self.groups: dict[str | None, str] = {}  # uuid (None: a line without one) -> its sidechain group
        self.seen_requests: set[str] = set()
        self.relog = RelogFilter()  # lines that log again a message already read (a resumed conversation)
        self.prompted = False  # a user message seen: before it, a fork's response is its parent's (a copy)
        self.message_of: dict[str, tuple[str, int]] = {}  # requestId -> (the first message.id seen with it, line)
        self.reused: set[str] = set()  # requestIds seen with more than one message.id
        self.open_request: dict[str | None, tuple[RunBuilder, int]] = {}  # request id -> where its Request is
        self.uuids: set[str] = set()
        # attachments logged between a compact_boundary and its summary: they are re-sent after the summary
        self.held: dict[int, list[tuple[dict, int, str | None]]] = {}
        self.result_ext: dict[str, str] = {}  # tool id -> extension of the file a microcompact saves its result to
        self.attachment_seq: dict[str, int] = {}  # attachment line uuid -> its item's seq
        self.line_items: dict[str, tuple[int, range]] = {}  # line uuid -> (id of its builder, its items' seqs)
        self.parent_of: dict[str, Any] = {}  # line uuid -> its parentUuid
        # a compaction's preserved items, sent again after its summary: builder id -> (its event, their seqs)
        self.preserved: dict[int, tuple[dict, list[int]]] = {}
        # whether a line that makes a run was read (a message, an attachment, a summary, a compaction, a workflow
        # journal entry): a session with none (titles, file-history snapshots, system notices, hook progress only)
        # holds no run, and none is made
        self.has_run = False
        self.turn_cwd: dict[int, str] = {}  # builder id -> the working directory its latest user turn started in
        self.todo_calls: dict[str, Any] = {}  # TodoWrite call id -> its todos (claude_code_unlogged)
        self.todo_watched = True  # the harness still watches the todo file (a /clear stops it)
        self.call_names: dict[str, str] = {}  # tool call id -> its tool's name
        self.file_calls: dict[str, Any] = {}  # file tool call id -> its arguments (claude_code_files)
        self.memory = MemoryFiles()  # the memory files the session created (claude_code_memory)
        self.deferred: dict[int, set[str]] = {}  # builder id -> the tools its deltas have deferred so far
        # builder id -> (seq, step) of each image a user message holds (not one a tool result holds), until a
        # microcompact clears it
        self.user_images: dict[int, list[tuple[int, int]]] = {}
        # compact_boundary line -> the transcript of the folder whose history it compacted (claude_code_continued)
        self.resumed: dict[int, str] = {}
        # responses whose lines so far carry only the stream's opening usage (output 0, no stop reason): request id
        # -> (builder, record index, line, its prompt); ``settles``: a response's usage settled on a later line at
        # another prompt (Claude's opening already holds the prompt; MiniMax's does not)
        self.opening: dict[str | None, tuple[RunBuilder, int, int, Any]] = {}
        self.settles = False
        self.thinking = HiddenThinking()  # thinking logged without its text (claude_code_thinking)

    def finish(self) -> Iterator[Record]:
        """The runs read: held attachments added, each run's model set, a compaction fork's event made; none when
        no line made a run (``has_run``)."""
        if not self.has_run:
            return
        builders = [self.main, *self.children.values()]
        if self.settles:
            self.unsettled()
        self.thinking.sized(self.open_request)
        for builder in builders:
            self.flush_attachments(builder)
        for builder in builders:
            _most_served_model(builder)
        if self.compaction_fork:
            _fork_to_event(self.main)
        for builder in builders:
            yield from builder

    def unsettled(self) -> None:
        """Requests whose settled usage the log lacks: where the endpoint's opening usage is not the prompt (MiniMax's
        Anthropic-compatible API: its stream opens with a partial count and output 0, the usage settles on a later
        line), a response logged with the opening alone has no usage (``runs.metadata.unsettled_usage``)."""
        for b, index, line, _ in self.opening.values():
            request = cast(Request, b.records[index])
            unknown: dict[str, Any] = dict.fromkeys(USAGE_FIELDS)
            b.records[index] = replace(request, **unknown)
            b.run.metadata["unsettled_usage"] = b.run.metadata.get("unsettled_usage", 0) + 1
            b.warn(
                line,
                "this response logged only its stream's opening usage (output 0), which this endpoint's other "
                "responses show is not their prompt: its usage is unknown",
            )

    def deferred_delta(self, b: RunBuilder, att: dict, line: int) -> None:
        """A ``deferred_tools_delta``: the deferred tools changed, announced in a message the log does not hold;
        after a /model switch the tool list sent changes with it (log_checks.check_run tells the two apart). Right
        after a compaction Claude Code announces its deferred tools again (the announcements were summarised): a
        delta there that names only tools deferred before is that list, which the prompt already holds. One that
        defers tools never announced is a change (LAF-US/IDAHO-VAULT 05541cb5, 2.1.92: a /model switch after a
        compaction deferred 438 tools at once; the prompt fell from 168k to 42k)."""
        added = {str(n) for n in att.get("addedNames") or []}
        removed = {str(n) for n in att.get("removedNames") or []}
        known = self.deferred.setdefault(id(b), set())
        if not (_after_compaction(b) and added <= known):
            self.unlogged(b, line, "deferred-tools", added=len(added), removed=len(removed))
        known |= added
        known -= removed

    @staticmethod
    def unlogged(b: RunBuilder, line: int, reason: str, **detail: Any) -> None:
        """Note content the server saw from step ``b.step`` on that the log does not hold (calibration fits it)."""
        if b.step:  # before the first request it is part of the fitted system overhead anyway
            b.run.metadata.setdefault("unlogged", []).append({"step": b.step, "line": line, "reason": reason, **detail})

    def _builder(self, obj: dict) -> RunBuilder:
        """The main run, or the child run of the inline sidechain this line belongs to."""
        if self.agent_file or not obj.get("isSidechain"):
            return self.main
        group = self.groups.get(obj.get("parentUuid")) or obj.get("uuid") or "sidechain"
        self.groups[obj.get("uuid")] = group
        if group not in self.children:
            n = len(self.children) + 1
            run = Run(
                run_id=self.ctx.run_id(f"{self.label}/sidechain-{n}" if self.label else f"sidechain-{n}"),
                format=self.format,
                source_path=str(self.ctx.path),
                harness="claude-code",
                started_at=obj.get("timestamp"),
                parent_run_id=self.main.run.run_id,
                model=self.main.run.model,
                metadata={"sidechain": True, "root_uuid": group},
            )
            self.children[group] = RunBuilder(run)
        return self.children[group]

    def line(self, line: int, obj: dict, borrowed: str | None = None) -> None:
        """Read one line; ``borrowed``: the name of the other transcript it comes from, read as context (its
        response is that file's request, not this run's)."""
        kind, main = obj.get("type"), self.main
        if borrowed is not None:
            _note_borrowed(main, borrowed)
        parent = obj.get("parentUuid")
        if obj.get("uuid"):
            self.uuids.add(obj["uuid"])
        if isinstance(obj.get("uuid"), str):
            self.parent_of[obj["uuid"]] = parent
        # `summary` lines with a leafUuid are session titles (never sent to the model), wherever they sit
        if kind in TITLE_TYPES and (kind != "summary" or "leafUuid" in obj):
            titles = main.run.metadata.setdefault("titles", [])
            if (title := obj.get(TITLE_TYPES[kind])) and title not in titles:
                titles.append(title)
            return
        if (kind in JOURNAL_TYPES and "agentId" in obj) or kind in ("summary", "attachment", *CONVERSATION):
            self.has_run = True
        elif kind == "system" and obj.get("subtype") in ("compact_boundary", "microcompact_boundary"):
            self.has_run = True
        if kind == "summary":  # no leafUuid: a summary that stands in for earlier context
            main.add("summary", "user", str(obj.get("summary") or ""), line=line)
            return
        if kind in JOURNAL_TYPES and "agentId" in obj:
            main.run.metadata.setdefault("journal_agents", []).append(obj["agentId"])
            return
        if kind == "system" and obj.get("subtype") == "compact_boundary":
            self._boundary(self._builder(obj), obj, line, None if borrowed else self.resumed.get(line))
            self.user_images.pop(id(self._builder(obj)), None)  # summarised: no image is left to clear
            return
        if kind == "system" and obj.get("subtype") == "microcompact_boundary":
            b = self._builder(obj)
            _microcompact(b, obj, line, self.result_ext, self.attachment_seq, self.user_images.setdefault(id(b), []))
            return
        if kind == "system" and obj.get("subtype") == "informational" and _idle_notice(obj.get("content")):
            _idle_cause(self._builder(obj), line)
            return
        if kind not in CONVERSATION and kind != "attachment":
            return
        b = self._builder(obj)
        if self.relog.is_copy(kind, obj):  # the server is sent that message once
            b.run.metadata["relogged_lines"] = self.relog.skipped
            return
        if parent and parent not in self.uuids:  # a message the log lacks (e.g. a dropped notification)
            self.unlogged(b, line, "missing-parent")
        run = b.run
        if not run.started_at and obj.get("timestamp") and borrowed is None:
            _set_run(b, started_at=obj["timestamp"])
        for key, field in (
            ("sessionId", "session_id"),
            ("agentId", "agent_id"),
            ("cwd", "cwd"),
            ("version", "cc_version"),
            ("entrypoint", "entrypoint"),
        ):
            if obj.get(key) and borrowed is None:
                run.metadata.setdefault(field, obj[key])
        if self.agent_file and str(obj.get("agentId") or "").startswith("acompact-"):
            self.compaction_fork = True
        if self.agent_file and FORK_ID.fullmatch(str(obj.get("agentId") or "")):
            self.fork = True
        ts = obj.get("timestamp")
        att = obj["attachment"] if kind == "attachment" and isinstance(obj.get("attachment"), dict) else {}
        if att.get("type") == "deferred_tools_delta":
            self.deferred_delta(b, att, line)
        start = b.seq
        if kind == "attachment":
            if id(b) in self.held:
                self.held[id(b)].append((obj, line, ts))
            else:
                self._attach(b, obj, line, ts)
        else:
            if not obj.get("isCompactSummary"):
                self.flush_attachments(b)
                start = b.seq
            if kind == "assistant" and borrowed is not None:
                if isinstance(obj.get("message"), dict):
                    self._content(b, obj["message"], line, ts)
            elif kind == "assistant" and self.fork and not self.prompted and not self.compaction_fork:
                self._copied_response(b, obj.get("message") or {}, line, ts)
            elif kind == "assistant":
                self._assistant(b, obj.get("message") or {}, obj, line, ts)
            else:
                self.prompted = True
                self._user(b, obj.get("message") or {}, obj, line, ts)
        if isinstance(obj.get("uuid"), str) and not obj.get("isCompactSummary"):
            self.line_items[obj["uuid"]] = (id(b), range(start, b.seq))

    def flush_attachments(self, b: RunBuilder) -> None:
        """Add what follows a compact_boundary's summary (after it, if one was logged): the messages the compaction
        preserved, then the attachments held since the boundary."""
        if id(b) in self.preserved:
            event, seqs = self.preserved.pop(id(b))
            event["resent"] = resend(b, seqs)
        for obj, line, ts in self.held.pop(id(b), []):
            self._attach(b, obj, line, ts)

    def _attach(self, b: RunBuilder, obj: dict, line: int, ts: str | None) -> None:
        seq = _attach(b, obj, line, ts)
        if seq is not None and isinstance(obj.get("uuid"), str):
            self.attachment_seq[obj["uuid"]] = seq

    def _boundary(self, b: RunBuilder, obj: dict, line: int, made_in: str | None = None) -> None:
        """A compact_boundary line: everything logged so far leaves the prompt from the next request on.
        ``made_in``: the other transcript of the folder that made the compaction (a resume logged it here)."""
        self.flush_attachments(b)
        self.held[id(b)] = []
        if rereads_memory(version_tuple(obj.get("version")), b is self.main and not self.agent_file):
            for text in self.memory.reread():  # sent at the conversation's head: before what the log re-attaches
                att = {"type": MEMORY_REREAD, "content": text}
                self.held[id(b)].append(({"attachment": att}, line, obj.get("timestamp")))
        meta = sub_dict(obj, "compactMetadata")
        raw = meta.get("trigger", obj.get("trigger"))
        pre = meta.get("preTokens")
        extra: dict[str, Any] = {"trigger_logged": raw} if raw is not None and raw not in TRIGGERS else {}
        if made_in is not None:
            extra.update(cause="resumed", made_in=made_in)
        kept = self._preserved_seqs(b, meta, line)
        event = b.context_event(
            "compaction",
            drop=_before(b, b.seq),
            trigger=raw if raw in TRIGGERS else None,
            pre_tokens=pre if isinstance(pre, int) else None,
            line=line,
            **extra,
        )
        if kept:
            self.preserved[id(b)] = (event, sorted(kept))

    def _preserved_seqs(self, b: RunBuilder, meta: dict, line: int) -> set[int]:
        """Seqs of the items of the messages a compact_boundary says its compaction kept verbatim (Claude Code's
        loader: ``preservedMessages.uuids``, else the ``preservedSegment`` walked from its tail to its head by
        ``parentUuid``); empty, with a warning, when a listed message is not in the log (the loader gives up)."""
        listed = [u for u in sub_dict(meta, "preservedMessages").get("uuids") or [] if isinstance(u, str)]
        whole = True  # every message the boundary names is in the log
        segment = sub_dict(meta, "preservedSegment")
        if not listed and isinstance(segment.get("tailUuid"), str):
            listed = self._walk(segment["tailUuid"], segment.get("headUuid"))
            whole = bool(listed) and listed[-1] == segment.get("headUuid")
            listed = listed or [segment["tailUuid"]]
        if not listed:
            return set()
        missing = [u for u in listed if u not in self.parent_of]  # lines the log does not hold
        if missing or not whole:
            b.warn(
                line,
                f"compact_boundary says its compaction kept {len(listed)} message(s) verbatim, not all of them in "
                f"the log (from {(missing or listed)[0][:40]!r}): read as if it kept none, as Claude Code's loader "
                "then does",
            )
            return set()
        held = [self.line_items[u] for u in listed if u in self.line_items]  # lines sent to the model
        return {q for owner, seqs in held if owner == id(b) for q in seqs}

    def _walk(self, tail: str, head: Any) -> list[str]:
        """Uuids from ``tail`` back to ``head`` by ``parentUuid`` (tail first), as far as the log holds them."""
        out: list[str] = []
        at: Any = tail
        while isinstance(at, str) and at in self.parent_of and at not in out:
            out.append(at)
            if at == head:
                break
            at = self.parent_of[at]
        return out

    def _assistant(self, b: RunBuilder, msg: dict, obj: dict, line: int, ts: str | None) -> None:
        if not isinstance(msg, dict):
            return
        rid = self._request_key(b, obj, msg, line)
        model = msg.get("model")
        if model == SYNTHETIC:  # written by Claude Code, not the model: no request
            if not obj.get("isApiErrorMessage"):  # API-error notices are filtered out before each request
                self._content(b, msg, line, ts)
                if text_of(msg.get("content")).strip() == RESUMED:
                    b.run.metadata.setdefault("resumes", []).append({"step": b.step, "line": line})
            return
        if model and not b.run.model:
            _set_run(b, model=model)
        whole = sub_dict(msg, "usage")
        own = iterations.split(whole)
        u = own[0] if own else whole  # the request's own iteration's usage, when the response ran several
        parts = [u.get(k) for k in ("input_tokens", "cache_read_input_tokens")] + [_cache_write(u)]
        usage = {
            "input_tokens": parts[0],
            "cache_read": parts[1],
            "cache_write": parts[2],
            "cache_write_1h": _write_1h(u),
            "output_tokens": u.get("output_tokens"),
            "prompt_tokens": sum(p or 0 for p in parts)
            if any(p is not None for p in parts) and all(p is None or type(p) in (int, float) for p in parts)
            else None,
        }
        calls = own[1] if own else []  # the response's other server-side iterations
        served = u.get("model") or model  # the model of the request's own iteration, when it names one
        if usage["prompt_tokens"] == 0:  # every call sends a prompt: a usage counting none was zeroed (a fixture's
            usage = dict.fromkeys(usage)  # trimmed counters), so the request's usage is unknown, not free
            calls, served = [], model  # and so are its iterations: the message's model stands
        # a line with no id at all (an interrupted, partial reply) continues the current request
        if (rid and rid not in self.seen_requests) or (not rid and b.step == 0):
            if rid:
                self.seen_requests.add(rid)
            if b.step == 1 and b is self.main and self.agent_file and not (self.fork or self.compaction_fork):
                self.unlogged(b, line, SUBAGENT_ATTACHMENTS)
            req = b.request(ts=ts, model=served, line=line, **usage)
            self.open_request[rid] = (b, len(b.records) - 1)
            if usage["output_tokens"] == 0 and msg.get("stop_reason") is None:  # a stream's opening usage
                self.opening[rid] = (b, len(b.records) - 1, line, usage["prompt_tokens"])
            _cache_writes(b, req.step, u)
            _server_calls(b, req.step, line, calls)
            if whole.get("speed") == "fast":
                _fast(b, req.step, line)
        elif rid and rid in self.open_request and u:
            # a later line of the same response: its usage is the final one. Claude repeats the same figures on
            # every line; MiniMax's Anthropic-compatible endpoint logs the streaming start (uncached count, output
            # 0) first and the settled usage (cache read included) last, and only the last matches the prompt.
            owner, index = self.open_request[rid]
            opened = self.opening.pop(rid, None) if usage["output_tokens"] else None
            if opened is not None and opened[3] != usage["prompt_tokens"]:  # the opening was not the prompt
                self.settles = True
            usage = owner.checked_usage(usage, line)
            updated = owner.records[index] = replace(owner.records[index], **usage)
            step = cast(Request, updated).step  # open_request holds the index of a Request
            _cache_writes(owner, step, u)
            _server_calls(owner, step, line, calls)
        self.thinking.stopped(rid, msg.get("stop_reason"))
        self._content(b, msg, line, ts, rid)

    def _request_key(self, b: RunBuilder, obj: dict, msg: dict, line: int) -> str | None:
        """What identifies the API response a line belongs to: its ``requestId`` and ``message.id`` together (the
        lines of one response share both). A requestId reused by another message is a new request, with a warning:
        counting it once lost every later request."""
        rid, mid = obj.get("requestId"), msg.get("id")
        if not rid or not mid:
            return str(rid or mid) if rid or mid else None
        first = self.message_of.setdefault(str(rid), (str(mid), line))
        if first[0] != str(mid) and str(rid) not in self.reused:  # said once a requestId
            self.reused.add(str(rid))
            b.warn(
                line,
                f"requestId {str(rid)[:80]} (first at line {first[1]}) is reused by another message "
                f"({str(mid)[:80]}): each message with it is counted as its own request",
            )
        return f"{rid}\0{mid}"

    def _copied_response(self, b: RunBuilder, msg: Any, line: int, ts: str | None) -> None:
        """A response in a fork's file before the fork's prompt: the parent's response the fork was given as context
        (a prompt-suggestion fork, 2.1.x, may start with the parent's last response, its requestId and usage
        included). Its content is the fork's context, not a request of the fork's: counting it would bill the
        parent's request twice (issue 21, point 4)."""
        if isinstance(msg, dict):
            self._content(b, msg, line, ts)
            b.run.metadata["copied_responses"] = b.run.metadata.get("copied_responses", 0) + 1

    def _content(self, b: RunBuilder, msg: dict, line: int, ts: str | None, response: str | None = None) -> None:
        """The items of a response's content (``response``: its key, for thinking logged without its text)."""
        content = msg.get("content")
        for block in content if isinstance(content, list) else [{"type": "text", "text": text_of(content)}]:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text" and block.get("text"):
                b.add("assistant_text", "assistant", block["text"], ts=ts, line=line)
                self.thinking.visible(response, len(str(block["text"])))
            elif btype in ("thinking", "redacted_thinking"):
                text = block.get("thinking") or block.get("data") or ""
                item = b.add("reasoning", "assistant", text, ts=ts, line=line)
                if btype == "thinking":
                    self.thinking.thinking(response, item.seq, block)
            elif btype in ("tool_use", "server_tool_use"):
                call = b.call(block.get("name") or "", block.get("input"), block.get("id"), ts=ts, line=line)
                self.thinking.visible(response, len(call.tool_name or "") + len(call.args or ""))
                if isinstance(block.get("id"), str):
                    self.call_names[block["id"]] = block.get("name") or ""
                self.memory.call(
                    block.get("id"), block.get("name") or "", block.get("input"), str(b.run.metadata.get("cwd") or "")
                )
                if block.get("name") in FILE_TOOLS:
                    _file_watched(b)
                if block.get("name") in WHOLE_FILE_TOOLS and isinstance(block.get("id"), str):
                    self.file_calls[block["id"]] = block.get("input")
                if block.get("name") == "TodoWrite" and isinstance(block.get("id"), str):
                    self.todo_calls[block["id"]] = sub_dict(block, "input").get("todos")
            elif btype and btype.endswith("tool_result"):
                b.result(text_of(block.get("content")), block.get("tool_use_id"), ts=ts, line=line, role="assistant")

    def _user(self, b: RunBuilder, msg: dict, obj: dict, line: int, ts: str | None) -> None:
        if not isinstance(msg, dict):
            return
        content = msg.get("content")
        if unflagged_summary(obj) and b.seq > b.body_start():  # before 1.0.21: the summary line alone marks it
            summary = b.add("summary", "user", text_of(content), ts=ts, line=line)
            b.context_event("compaction", drop=_before(b, summary.seq), line=line, summary_seq=summary.seq)
            return
        if obj.get("isCompactSummary"):
            event = b.context_events[-1] if b.context_events else None
            if not (event and event["step"] == b.step and event["summary_seq"] is None):
                event = b.context_event("compaction", drop=_before(b, b.seq), line=line)  # 1.0.x: no boundary line
            event["summary_seq"] = b.add("summary", "user", text_of(content), ts=ts, line=line).seq
            self.flush_attachments(b)
            return
        blocks = content if isinstance(content, list) else [{"type": "text", "text": text_of(content)}]
        one_result = sum(_is_result(x) for x in blocks) == 1  # the line's toolUseResult is that result's
        if b is self.main and clears(content):
            self.todo_watched = False
        if any(isinstance(x, dict) and x.get("type") != "tool_result" for x in blocks) and not obj.get("isMeta"):
            b.new_turn()
            self._turn_cwd(b, obj, line)
        for block in blocks:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "tool_result":
                inner = block.get("content")
                if isinstance(block.get("tool_use_id"), str):
                    self.result_ext[block["tool_use_id"]] = "json" if isinstance(inner, list) else "txt"
                item = b.result(
                    text_of(inner), block.get("tool_use_id"), ts=ts, line=line, is_error=bool(block.get("is_error"))
                )
                self._whole_file(b, obj, block, item.seq, one_result)
                self._todo_note(b, obj, block, line, ts)
                self.memory.result(block.get("tool_use_id"), obj.get("toolUseResult"), bool(block.get("is_error")))
                parts = [p for p in inner if isinstance(p, dict)] if isinstance(inner, list) else []
                for part in parts:
                    if part.get("type") == "image":  # named after its tool: no user-message image
                        _image(b, part, line, ts, self.call_names.get(str(block.get("tool_use_id")), ""))
                # ToolSearch: the server expands each reference into the tool's schema, which the log omits
                if refs := [p.get("tool_name") for p in parts if p.get("type") == "tool_reference"]:
                    self.unlogged(b, line, "tool-reference", tools=refs)
            elif btype == "image":
                image = _image(b, block, line, ts)
                self.user_images.setdefault(id(b), []).append((image.seq, image.step))
            elif btype == "document":
                b.add("attachment", "user", text_of(block.get("source")) or block.get("title") or "", ts=ts, line=line)
            elif block.get("text"):
                b.add("user_text", "user", block["text"], ts=ts, line=line)
                self._extension(b, obj, block["text"], line)

    def _whole_file(self, b: RunBuilder, obj: dict, block: dict, seq: int, alone: bool) -> None:
        """Note what the line's ``toolUseResult`` says of the whole file a file tool's call left (``file_chars``,
        ``file_lines`` per result seq; claude_code_files): only for the one result of its line, which that
        outcome is of."""
        call = block.get("tool_use_id")
        if not isinstance(call, str) or call not in self.file_calls:
            return
        args = self.file_calls.pop(call)
        if block.get("is_error") or not alone:
            return
        size = whole_file(self.call_names.get(call, ""), args, obj.get("toolUseResult"))
        if size is None:
            return
        chars, lines = size
        if chars >= 0:
            b.run.metadata.setdefault("file_chars", []).append([seq, chars])
        b.run.metadata.setdefault("file_lines", []).append([seq, lines])

    def _extension(self, b: RunBuilder, obj: dict, text: str, line: int) -> None:
        """Mark a main session the VS Code extension drove through Claude Code's SDK loop, whose attachments stay
        for their own user turn only (``runs.metadata.turn_attachments``; replay.readers.claude_code_unlogged)."""
        if b is not self.main or self.agent_file or "turn_attachments" in b.run.metadata:
            return
        if extension_turn(version_tuple(obj.get("version")), text):
            b.run.metadata["turn_attachments"] = {"version": str(obj.get("version")), "line": line}

    def _turn_cwd(self, b: RunBuilder, obj: dict, line: int) -> None:
        """Note, in ``runs.metadata.system_changes``, a user turn that starts in another working directory than the
        turn before it: Claude Code builds its system prompt anew for each turn, and its environment section names
        the working directory (cli.js 2.1.22 and 2.1.27: "Working directory: ..."), so a ``cd`` the Bash tool kept
        changes the system prompt from the next request on."""
        cwd = obj.get("cwd")
        if not isinstance(cwd, str) or not cwd:
            return
        before = self.turn_cwd.get(id(b))
        self.turn_cwd[id(b)] = cwd
        if before is not None and cwd != before and b.step:
            b.run.metadata.setdefault("system_changes", []).append({"step": b.step, "line": line, "reason": "cwd"})

    def _todo_note(self, b: RunBuilder, obj: dict, block: dict, line: int, ts: str | None) -> None:
        """After a TodoWrite's result, the todo-list note the harness sent with the next request and did not log
        (``claude_code_unlogged``): the main session's only, not a failed call's."""
        call = block.get("tool_use_id")
        if not isinstance(call, str) or call not in self.todo_calls or block.get("is_error"):
            return
        version = version_tuple(obj.get("version"))
        if b is not self.main or self.agent_file or not self.todo_watched or not sends_todo_note(version):
            return
        note = todo_note(self.todo_calls.pop(call), cast(tuple[int, ...], version))
        if note is not None:
            b.add("attachment", "user", note, tool_name="todo", ts=ts, line=line)


READER = ClaudeCodeReader()
