"""Where a Claude Code run's harness changed its system prompt or a tool's description, as its log shows it.

Anthropic's cache keeps a prefix only while every block before its breakpoint is the same (tools, then system, then
messages). Claude Code builds both anew while a session runs, from state its transcript records:

- **Working directory.** The system prompt is built for each user turn, and its environment section names the
  working directory ("Working directory: ..." in cli.js 2.1.22 and 2.1.27), which a ``cd`` the Bash tool kept
  changes. The reader notes a turn that starts in another ``cwd`` than the turn before it
  (``runs.metadata.system_changes``, reason "cwd"). From 2.1.53 the system prompt is built of named sections each
  computed once a session (cli.js 2.1.53, 2.1.54, 2.1.59, 2.1.97: the environment section ``env_info_simple`` is
  not recomputed, the working directory it names stays the one it was built in); 2.1.34-2.1.52 had that path behind
  a feature flag off by default (``tengu_vinteuil_phrase``). So a ``cd`` changes the prompt up to 2.1.52 only:
  4thehalibit/omarchy-backup 2b8d60c5 (2.1.97) reads all 31,289 tokens it held at a turn started in another
  directory. Claude Code 2.1.27 session cbd3578f reads only its 16,238-token
  warm prefix at the two turns that start in another worktree (requests 31 and 48) and all it held at every other;
  ccl-sample-37f83ec9 (1.0.51) reads its 10,671-token system breakpoint at request 58, whose turn starts in a
  subdirectory.
- **Skill listing.** Claude Code 2.1.0 to 2.1.22 lists the skills in the Skill tool's description and reloads them
  when a file under ``~/.claude/skills``, ``~/.claude/commands`` or the project's ``.claude/skills`` and
  ``.claude/commands`` changes (CHANGELOG 2.1.0, "skill hot-reload"; cli.js 2.1.22: a chokidar watcher, depth 2,
  whose ``awaitWriteFinish`` waits until a file has been stable for 1,000 ms, clears the memoised listing). A skill
  the run writes (``<dir>/skills/<name>/SKILL.md``, a command ``<dir>/commands/**.md``; an edit only when it
  touches the front matter the listing shows) changes the tool's description at the first request sent at least
  that long after the write's result: session 358206ea (2.1.22) reads only 5,161 tokens at 6 such requests and all
  it held at the request sent with each write's result. From 2.1.23 the listing is a ``skill_listing`` attachment
  appended to the conversation (cli.js 2.1.23 on), which keeps the cache: 87bcc603 (2.1.27) writes 10 new skills
  and reads all it held after each.

Either change leaves cached only what precedes the changed block: the log's shortest read inside the harness prefix
(``RunArrays.system_tokens``, the prefix other sessions keep warm), else what was warm before the run
(replay.simulator.run_start.cache_caps). A skill another session of the same user (``~/.claude``) or project
(``<cwd>/.claude``) writes reloads the listing too, and only that session's log shows it: the store's writes are
read together (``skill_writes``). Session c31563d5 (2.1.22) reads only 5,161 tokens at requests 29 and 38, sent
12 s and 4-9 minutes after session 87bcc603 wrote new skills in ~/.claude/skills, and all it held at the 8
requests between."""

from __future__ import annotations

import re
from dataclasses import dataclass

import duckdb
import numpy as np

from replay.readers.base import version_tuple
from replay.run_arrays import RunArrays, epoch
from replay.simulator.idle import request_times

CWD = "cwd"
STABLE_S = 1.0  # seconds a written file must stay unchanged before the watcher reports it (cli.js 2.1.22)
LISTED_FROM, LISTED_UNTIL = (2, 1, 0), (2, 1, 22)  # versions whose Skill tool description lists the skills
CWD_UNTIL = (2, 1, 52)  # the last version whose system prompt names the working directory of each turn
SKILL_FILE = re.compile(r"(^|/)\.claude/(skills/[^/]+/SKILL\.md|commands/([^/]+/)?[^/]+\.md)$", re.IGNORECASE)
FRONT_MATTER = re.compile(r"(^|[\n\"])\s*(name|description|when_to_use)\s*:")  # a line of it, or a string's start
WRITE_TOOLS, EDIT_TOOLS = ("Write",), ("Edit", "MultiEdit")


def working_directory_changes(metadata: dict, n_requests: int) -> np.ndarray:
    """Per request, True where the reader noted a user turn started in another working directory before it, in a
    Claude Code version that builds its system prompt anew for each turn (up to ``CWD_UNTIL``; a log without a
    version is taken to)."""
    out = np.zeros(n_requests, dtype=bool)
    version = version_tuple(metadata.get("cc_version"))
    if version is not None and version > CWD_UNTIL:
        return out
    for note in metadata.get("system_changes") or []:
        if isinstance(note, dict) and note.get("reason") == CWD and isinstance(note.get("step"), int):
            if 0 < note["step"] < n_requests:
                out[note["step"]] = True
    return out


def lists_skills(metadata: dict) -> bool:
    """Whether the run's Claude Code version lists the skills in the Skill tool's description and reloads them while
    it runs (``LISTED_FROM`` to ``LISTED_UNTIL``)."""
    version = version_tuple(metadata.get("cc_version"))
    return version is not None and LISTED_FROM <= version <= LISTED_UNTIL


def _changes_listing(tool: str, args: str | None) -> bool:
    """Whether a call of ``tool`` on a skill file changes what the listing shows: a write always (a new skill, or
    its front matter given anew); an edit when its text touches a front-matter field."""
    name = tool.rsplit("__", 1)[-1]  # an MCP server's own file tools (Zed's mcp__acp__Write) write the same file
    if name in WRITE_TOOLS:
        return True
    return name in EDIT_TOOLS and args is not None and FRONT_MATTER.search(args.replace("\\n", "\n")) is not None


@dataclass(frozen=True)
class SkillWrite:
    """A call of a run in the store that changed a skill's listing: the file and when its result came back."""

    run_id: str
    path: str
    at: float  # epoch seconds; NaN when the log does not date the result


_WRITES = """
SELECT c.run_id, c.resource, c.tool_name, c.args, r.ts
FROM items c JOIN items r ON r.run_id = c.run_id AND r.call_id = c.call_id AND r.kind = 'tool_result'
WHERE c.kind = 'tool_call' AND c.resource LIKE '%.claude/%' AND NOT coalesce(r.is_error, false)"""


def skill_writes(con: duckdb.DuckDBPyConnection) -> list[SkillWrite]:
    """Every call in the store that changed a skill's listing (``SKILL_FILE``, ``_changes_listing``)."""
    return [
        SkillWrite(rid, path, epoch(ts))
        for rid, path, tool, args, ts in con.execute(_WRITES).fetchall()
        if SKILL_FILE.search(path or "") and _changes_listing(str(tool or ""), args)
    ]


def _home(cwd: str) -> str:
    """The user's home directory as ``cwd`` tells it (/Users/NAME, /home/NAME, /root), "" when it does not."""
    parts = cwd.split("/")
    if cwd.startswith(("/home/", "/Users/")) and len(parts) >= 3:
        return "/".join(parts[:3])
    return "/root" if cwd == "/root" or cwd.startswith("/root/") else ""


def watched(path: str, cwd: str) -> bool:
    """Whether Claude Code started in ``cwd`` watches ``path``: the user's ``~/.claude`` or the project's
    ``.claude`` (cli.js 2.1.22 watches their ``skills`` and ``commands``)."""
    roots = [r for r in (_home(cwd), cwd.rstrip("/")) if r]
    return any(path.startswith(f"{root}/.claude/") for root in roots)


def skill_listing_changes(run: RunArrays, metadata: dict, writes: list[SkillWrite]) -> np.ndarray:
    """Per request, True at the first request sent ``STABLE_S`` or more after a result of a call that changed a
    skill's listing in a folder the run's Claude Code watches (``writes``: the store's, this run's own and those of
    other sessions of the same user or project), on a version that lists skills in a tool's description. A result
    the log does not date places no change (Claude Code dates every line)."""
    m = run.n_requests
    out = np.zeros(m, dtype=bool)
    cwd = str(metadata.get("cwd") or "")
    if m < 2 or not lists_skills(metadata) or not cwd:
        return out
    sent, _ = request_times(run)
    for w in writes:
        if watched(w.path, cwd) and np.isfinite(w.at):
            late = np.flatnonzero(np.isfinite(sent) & (sent >= w.at + STABLE_S))
            if len(late) and late[0] > 0:
                out[late[0]] = True
    return out


def harness_changes(run: RunArrays, metadata: dict, writes: list[SkillWrite]) -> np.ndarray:
    """Per request, whether its system prompt or a tool's description differs from the previous request's in a way
    the log shows (see the module docstring)."""
    return working_directory_changes(metadata, run.n_requests) | skill_listing_changes(run, metadata, writes)
