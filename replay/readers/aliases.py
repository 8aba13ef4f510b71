"""Tool names of the newer harnesses, mapped onto names the resource classifier knows.

The item keeps the harness's own tool name; only its (resource, access) is classified as the alias would be.
An alias of None means the tool touches no resource (planning, intent and completion tools)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from replay.model import Item, dumps
from replay.readers.builder import RunBuilder

ALIASES: dict[str, str | None] = {
    # OpenHands V1 (Software Agent SDK)
    "file_editor": "str_replace_editor",
    "task_tracker": None,
    "finish": None,
    "think": None,
    # Gemini CLI
    "replace": "edit",
    "run_shell_command": "bash",
    "list_directory": "ls",
    "search_file_content": "grep",
    "grep_search": "grep",
    "read_many_files": "read",
    "google_web_search": "web_search",
    "write_todos": None,
    "save_memory": None,
    "update_topic": None,
    # Copilot CLI
    "report_intent": None,
    "task_complete": None,
    "update_todo": None,
    # Cline
    "write_to_file": "write_file",
    "search_files": "grep",
    "list_code_definition_names": "ls",
    "attempt_completion": None,
    "ask_followup_question": None,
    "plan_mode_respond": None,
    # Cline 4.x (SDK tools: editor {path, old_text, new_text, insert_line?})
    "editor": "write_file",
    "ask_question": None,
    "submit_and_exit": None,
}


def add_call(b: RunBuilder, name: str, args: Any, call_id: str | None, **fields: Any) -> Item:
    """Add a tool call named ``name``, classified as its alias."""
    if name not in ALIASES:
        return b.call(name, args, call_id, **fields)
    alias = ALIASES[name]
    item = b.call(alias or "", args if alias else {}, call_id, **fields)
    item = replace(item, tool_name=name, args=args if isinstance(args, str) or args is None else dumps(args))
    b.records[-1] = item
    return item
