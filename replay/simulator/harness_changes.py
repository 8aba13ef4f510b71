"""Where a Claude Code run's harness changed its system prompt or a tool's description, as its log shows it.

Anthropic's cache keeps a prefix only while every block before its breakpoint is the same (tools, then system, then
messages). Claude Code builds both anew while a session runs, from state its transcript records:

- **Working directory.** The system prompt is built for each user turn, and its environment section names the
  working directory ("Working directory: ..." in cli.js 2.1.22 and 2.1.27), which a ``cd`` the Bash tool kept
  changes. The reader notes a turn that starts in another ``cwd`` than the turn before it
  (``runs.metadata.system_changes``, reason "cwd"). Claude Code 2.1.27 session cbd3578f reads only its 16,238-token
  warm prefix at the two turns that start in another worktree (requests 31 and 48) and all it held at every other.
- **Skill listing.** Claude Code 2.1.0 to 2.1.22 lists the skills in the Skill tool's description and reloads them
  when a file under ``~/.claude/skills``, ``~/.claude/commands`` or the project's ``.claude/skills`` and
  ``.claude/commands`` changes (CHANGELOG 2.1.0, "skill hot-reload"; cli.js 2.1.22: a chokidar watcher, depth 2,
  whose ``awaitWriteFinish`` waits until a file has been stable for 1,000 ms, clears the memoised listing). A skill
  the run writes (``<dir>/skills/<name>/SKILL.md``, a command ``<dir>/commands/**.md``; an edit only when it
  touches the front matter the listing shows) changes the tool's description at the first request sent at least
  that long after the write's result: session 358206ea (2.1.22) reads only 5,161 tokens at 6 such requests and all
  it held at the request sent 0.05 s after each write. From 2.1.23 the listing is a ``skill_listing`` attachment
  appended to the conversation (cli.js 2.1.23 on), which keeps the cache: 87bcc603 (2.1.27) writes 6 new skills
  and reads all it held.

Either change leaves cached only what precedes the changed block: the log's shortest read inside the harness prefix
(``RunArrays.system_tokens``, the prefix other sessions keep warm), else what was warm before the run
(replay.simulator.run_start.cache_caps). A skill another session writes changes the listing too, but only that
session's log shows it."""

from __future__ import annotations

import re

import numpy as np

from replay.run_arrays import RunArrays
from replay.simulator.idle import request_times

CWD = "cwd"
STABLE_S = 1.0  # seconds a written file must stay unchanged before the watcher reports it (cli.js 2.1.22)
LISTED_FROM, LISTED_UNTIL = (2, 1, 0), (2, 1, 22)  # versions whose Skill tool description lists the skills
SKILL_FILE = re.compile(r"(^|/)\.claude/(skills/[^/]+/SKILL\.md|commands/(.+/)?[^/]+\.md)$", re.IGNORECASE)
FRONT_MATTER = re.compile(r"^\s*(name|description|when_to_use)\s*:", re.MULTILINE)
WRITE_TOOLS, EDIT_TOOLS = ("Write",), ("Edit", "MultiEdit")


def working_directory_changes(metadata: dict, n_requests: int) -> np.ndarray:
    """Per request, True where the reader noted a user turn started in another working directory before it."""
    out = np.zeros(n_requests, dtype=bool)
    for note in metadata.get("system_changes") or []:
        if isinstance(note, dict) and note.get("reason") == CWD and isinstance(note.get("step"), int):
            if 0 < note["step"] < n_requests:
                out[note["step"]] = True
    return out


def _version(text: object) -> tuple[int, ...] | None:
    parts = str(text or "").split(".")
    return tuple(int(p) for p in parts) if len(parts) == 3 and all(p.isdigit() for p in parts) else None


def lists_skills(metadata: dict) -> bool:
    """Whether the run's Claude Code version lists the skills in the Skill tool's description and reloads them while
    it runs (``LISTED_FROM`` to ``LISTED_UNTIL``)."""
    version = _version(metadata.get("cc_version"))
    return version is not None and LISTED_FROM <= version <= LISTED_UNTIL


def _changes_listing(tool: str, args: str | None) -> bool:
    """Whether a call of ``tool`` on a skill file changes what the listing shows: a write always (a new skill, or
    its front matter given anew); an edit when its text touches a front-matter field."""
    name = tool.rsplit("__", 1)[-1]  # an MCP server's own file tools (Zed's mcp__acp__Write) write the same file
    if name in WRITE_TOOLS:
        return True
    return name in EDIT_TOOLS and args is not None and FRONT_MATTER.search(args.replace("\\n", "\n")) is not None


def skill_listing_changes(run: RunArrays, items: list[dict], metadata: dict) -> np.ndarray:
    """Per request, True at the first request sent ``STABLE_S`` or more after a result of a call that changed a
    skill's listing (``items`` as ``run`` was built from them; a call's ``config_args`` are its arguments), on a
    version that lists skills in a tool's description. A result the log does not date changes the next request."""
    m = run.n_requests
    out = np.zeros(m, dtype=bool)
    if m < 2 or not lists_skills(metadata):
        return out
    calls = {
        it["call_id"]: it
        for it in items
        if it["kind"] == "tool_call" and it.get("call_id") and SKILL_FILE.search(str(it.get("resource") or ""))
    }
    sent, _ = request_times(run)
    for p, it in enumerate(items):
        call = calls.get(it.get("call_id")) if it["kind"] == "tool_result" and not it.get("is_error") else None
        if call is None or not _changes_listing(str(call.get("tool_name") or ""), call.get("config_args")):
            continue
        after = int(np.searchsorted(run.req_step, run.step[p], side="left"))  # the first request that holds it
        if np.isfinite(run.ts[p]):
            late = np.flatnonzero(np.isfinite(sent[after:]) & (sent[after:] >= run.ts[p] + STABLE_S))
            after += int(late[0]) if len(late) else m
        if 0 < after < m:
            out[after] = True
    return out


def harness_changes(run: RunArrays, items: list[dict], metadata: dict) -> np.ndarray:
    """Per request, whether its system prompt or a tool's description differs from the previous request's in a way
    the log shows (see the module docstring)."""
    return working_directory_changes(metadata, run.n_requests) | skill_listing_changes(run, items, metadata)
