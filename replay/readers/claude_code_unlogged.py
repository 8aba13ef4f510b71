"""What Claude Code sends the model and its transcript does not hold.

Attachments. Claude Code turns what it notices between requests into attachments it sends as system reminders
(the todo list, a snippet of a file it read that changed on disk since, new IDE diagnostics for a file it edited,
nested CLAUDE.md files, ...). Up to 2.1.96 cli.js drops ``attachment`` entries from the transcript unless the user
type is "ant" (its transcript writer's filter, checked in 1.0.0-2.1.96; 2.1.97 keeps them; from 2.1.41 a
``hook_additional_context`` one is kept when CLAUDE_CODE_SAVE_HOOK_ADDITIONAL_CONTEXT is set, and then read as an
item): ``unlogged_attachments`` gives, for such a version, the
request step from which the harness holds a file it watches (the first file read or edit), after which prompts can
grow by content this log never holds (replay.tokens.log_checks.check_attachments measures how much).

The todo-list note Claude Code 1.0.10-1.0.85 sends after each TodoWrite, which the log does not hold either, is
rebuilt from the call:

In these versions the TodoWrite tool writes the list to the session's todo file, which the REPL watches (its
read-file state holds that file from the start): at the attachment pass after the tool round, the file is newer
than its last read, so the harness re-reads it and attaches a ``todo`` note with the whole list (JSON) to the
prompt, where it stays. Attachments are dropped from the transcript for external users (cli.js filters
``attachment`` entries unless the user type is "ant"), so the log holds the TodoWrite call but not the note. The
list is the call's ``todos``, so the note is rebuilt from the log.

Checked in cli.js: the tool writes the file in 1.0.10-1.0.85 (1.0.86 on keeps the list in app state and no longer
touches the file); until 1.0.43 the note also tells the model it need not call the tool again. A Task sub-agent
writes its own agent's file, which its read-file state does not hold: no note. ``/clear`` empties the read-file
state, the todo file with it, so a session that ran it gets no note from then on (its transcript opens with the
command's message).

Attachments for one user turn only (the SDK loop). The VS Code extension (and any SDK client) drives Claude Code
through its stream-json query loop, not the REPL. Up to 2.0.29 that loop carries only user, assistant and
compact-boundary messages from one user message to the next (cli.js 2.0.0, 2.0.2, 2.0.29: the prompt's own
messages are kept when they are user messages, and of what the query yields only the messages it hands back to the
client, attachments never): every attachment the harness adds (the files re-read after a compaction, a changed
file's snippet, a todo reminder, an @-mentioned file) is sent with the requests of the turn it was made in and
gone from the next user message on. 2.0.30 keeps every message the query yields, attachments included. The
transcripts of these versions do not say which surface wrote them (no ``entrypoint``); the extension puts the
editor's state into the user message itself, as ``<ide_selection>`` and ``<ide_opened_file>`` blocks, which
cli.js never writes (the REPL sends the selection as an attachment of its own wording): such a block marks the
session (``runs.metadata.turn_attachments``).
"""

from __future__ import annotations

import json
from typing import Any

from replay.readers.base import text_of

FIRST, LAST = (1, 0, 10), (1, 0, 85)  # the versions whose TodoWrite writes the watched todo file
NO_AGAIN_UNTIL = (1, 0, 43)  # the last version whose note says the tool need not be called again
# the todo item's fields in the order the harness's schema parses them (JSON.stringify keeps that order)
FIELDS = ("content", "status", "priority", "id")

# The note's frame in this project's own words, each part as long as the harness's (OPENING 139, AGAIN 97, CLOSING
# 69 characters in cli.js 1.0.x): what it costs is its size; its wording is the harness's, not copied here.
OPENING = (
    "<system-reminder>\nThe task list was updated; there is no need to tell the user about it. What follows is the "
    "current task list, in full:\n\n\n"
)
AGAIN = " There is no reason to call the tool again right now, as the list above is already the newest one"
CLOSING = " Go on with whatever work remains, if there is any\n</system-reminder>"


def sends_todo_note(version: tuple[int, ...] | None) -> bool:
    """Whether this Claude Code version attaches (unlogged) the todo list after each TodoWrite."""
    return version is not None and FIRST <= version <= LAST


def todo_note(todos: Any, version: tuple[int, ...]) -> str | None:
    """The note sent after a TodoWrite whose input list is ``todos``; None when the input is no list."""
    if not isinstance(todos, list):
        return None
    items = [
        {**{k: t[k] for k in FIELDS if k in t}, **{k: v for k, v in t.items() if k not in FIELDS}}
        for t in todos
        if isinstance(t, dict)
    ]
    body = json.dumps(items, ensure_ascii=False, separators=(",", ":"))
    return OPENING + body + "." + (AGAIN if version <= NO_AGAIN_UNTIL else "") + CLOSING


CLEAR = "<command-name>/clear</command-name>"  # the user message a /clear command logs


def clears(content: Any) -> bool:
    """Whether a user message is the one a ``/clear`` command logs."""
    return CLEAR in text_of(content)


ATTACHMENTS_LOGGED_FROM = (2, 1, 97)  # the versions before drop attachments from the transcript (2.1.96 checked)
# the tools after which the harness holds a file in its read-file state (it watches it for changes on disk) or
# has a baseline of its IDE diagnostics
FILE_TOOLS = {"Read", "Edit", "MultiEdit", "Write", "NotebookRead", "NotebookEdit"}
ATTACHMENT_KINDS = "snippets of files changed on disk, IDE diagnostics, nested memory files"


# the versions whose SDK loop drops attachments at the next user message (2.0.0, 2.0.2 and 2.0.29 checked; 2.0.30
# keeps them)
TURN_ATTACHMENTS_FROM, TURN_ATTACHMENTS_TO = (2, 0, 0), (2, 0, 29)
# the blocks the VS Code extension opens a user message's text with (the editor's selection, the file it shows)
EXTENSION_BLOCKS = ("<ide_selection>", "<ide_opened_file>")


def extension_turn(version: tuple[int, ...] | None, text: Any) -> bool:
    """Whether a user message's text block, in this Claude Code version, marks a session the VS Code extension
    drove through the SDK loop that keeps attachments for their own user turn only."""
    if version is None or not TURN_ATTACHMENTS_FROM <= version <= TURN_ATTACHMENTS_TO:
        return False
    return isinstance(text, str) and text.lstrip().startswith(EXTENSION_BLOCKS)


def drops_attachments(version: tuple[int, ...] | None) -> bool:
    """Whether this Claude Code version's transcript leaves out the attachments it sends."""
    return version is not None and version < ATTACHMENTS_LOGGED_FROM


def unlogged_attachments(step: int, version: str) -> dict[str, object]:
    """The ``runs.metadata.unlogged_attachments`` note: from ``step`` on, the prompt may hold attachments this
    version does not log."""
    return {"from_step": step, "version": version, "kinds": ATTACHMENT_KINDS}
