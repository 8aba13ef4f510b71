"""Cline (and forks with the same layout) tasks: ``ui_messages.json``, with ``api_conversation_history.json``.

A task folder (VS Code globalStorage ``saoudrizwan.claude-dev/tasks/<id>/``) holding ``ui_messages.json`` (Claude
Dev 1.x: ``claude_messages.json``, whose usage is in separate ``api_req_finished`` messages:
``replay.readers.cline_legacy``) is one run; a lone ``*ui_messages.json`` file is one run too.
``ui_messages.json`` is an array of ClineMessage ``{ts, type: say|ask, say|ask: <subtype>, text, partial?,
modelInfo?, conversationHistoryIndex, conversationHistoryDeletedRange?}``.

Requests: one per ``say:"api_req_started"``; its ``text`` is JSON ``{request, tokensIn, tokensOut, cacheWrites,
cacheReads, cost, cancelReason?}``. Anthropic semantics: tokensIn excludes cache reads and writes, so
prompt_tokens = tokensIn + cacheReads + cacheWrites. A cancelled request that reports all zeros has no usage.

Items from ui_messages alone: the ``request`` text is what was sent before that request. It is split at Cline's
tool-result headers (``[read_file for 'x'] Result:``) into tool results, paired in order with the calls of the
previous response; ``<environment_details>`` becomes an attachment; the rest (task, feedback) is user_text. The
first message is the task, whatever its type (the webview's ``messages.at(0)``): Claude Dev 1.x to Cline 3.46 (the
newest read) write it ``say: "text"`` (``startTask``: ``this.say("text", task, images)``), not ``say: "task"``; its
text is the first request's, so it is read once, from there. Model output: ``reasoning`` -> reasoning, ``text`` /
``completion_result`` / ``plan_mode_respond`` / ``followup`` -> assistant_text, ``tool`` / ``command`` /
``use_mcp_server`` messages -> tool calls (Cline's API tool names). ``command_output``, ``user_feedback``, ``task``
and the like are UI copies of what the next request text carries, and are not read twice, but for their images:
those go with the next user message, as image items whose base64 size Cline weighs (``runs.metadata.media_chars``).

With ``api_conversation_history.json`` beside it (Anthropic messages, the ones actually sent) the items come from
it instead: before the k-th assistant message, the request with the k-th api_req_started's usage. Tool calls are
``tool_use`` blocks (native tool use) or Cline's XML in the text (``<read_file><path>..</path></read_file>``),
their results ``tool_result`` blocks or the ``[tool for 'x'] Result:`` text.

Tool calls: Cline sends them either natively (``tool_use`` / ``tool_result`` blocks, a pair the API holds
together) or in its XML format (calls in the assistant's text, results as text blocks: no pair). The API history
shows which; ``ui_messages.json`` shows it in the request text, where a native result block is written
``[Tool]`` (export-markdown's formatContentBlockToMarkdown) and a text result is written as it is.
``runs.metadata.tool_calls`` is "native" or "text": with text calls, a truncation keeps the results that open
the first kept user message (Cline removes only ``tool_result`` blocks there) though their calls are gone.

Cline 2.0 to 3.0.x truncated by rewriting ``api_conversation_history.json`` in place (its first message and
the newest half kept, no range stamped): such a history holds fewer replies than the requests answered, so the
items come from ``ui_messages.json`` (with a warning saying why); where the cut fell is not logged.

Context: Cline's truncation (3.1 on) stamps ``conversationHistoryDeletedRange`` [lo, hi] (API message indexes,
inclusive) on every message once it happens; each new range is a recorded context event (kind "condensation", no
summary, ``harness_kind`` "truncation") at the request whose setup applied it, dropping the items of those messages.

An API history alone (its ``ui_messages.json`` not kept: Cline 3.40 on records each reply's usage there,
replay.readers.cline_usage) is a run too; its truncations are derived (``derived: true``) as Cline decides them,
from the previous reply's usage and the model's max allowed size (replay.readers.cline_truncation).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from replay.model import BadRecord, Record, Run
from replay.readers.aliases import add_call
from replay.readers.base import ReadContext, load_json_document, text_of
from replay.readers.builder import RunBuilder
from replay.readers.cline_dedup import FirstResult, cline_max_allowed, cline_window, duplicate_pass, first_result
from replay.readers.cline_legacy import LEGACY_UI_FILE, combine_finished
from replay.readers.cline_truncation import next_truncation_range
from replay.readers.cline_usage import metrics_usage, ui_usage
from replay.readers.json_fields import epoch_ms_iso, sub_dict

UI_FILE = "ui_messages.json"
API_FILE = "api_conversation_history.json"
RESULT_RE = re.compile(r"^\[(\w+)(?: for [^\n]*?)?\] Result:", re.M)
NATIVE_RESULT_RE = re.compile(r"^\[Tool(?: \(Error\))?\]$", re.M)  # a tool_result block in the request text
ENV_RE = re.compile(r"<environment_details>.*?(?:</environment_details>|\Z)", re.S)
UI_TOOL_NAMES = {  # ClineSayTool.tool -> the API tool that produced it
    "readFile": "read_file",
    "editedExistingFile": "replace_in_file",
    "newFileCreated": "write_to_file",
    "fileDeleted": "delete_file",
    "listFilesTopLevel": "list_files",
    "listFilesRecursive": "list_files",
    "listCodeDefinitionNames": "list_code_definition_names",
    "searchFiles": "search_files",
    "webFetch": "web_fetch",
    "webSearch": "web_search",
    "summarizeTask": "summarize_task",
    "useSkill": "use_skill",
}
OUTPUT_TEXT = {"text", "completion_result", "plan_mode_respond", "followup"}
USER_INPUT = {"task", "user_feedback"}  # the user's words; their images go with the next user message
XML_TOOLS = (
    "execute_command",
    "read_file",
    "write_to_file",
    "replace_in_file",
    "search_files",
    "list_files",
    "list_code_definition_names",
    "browser_action",
    "use_mcp_tool",
    "access_mcp_resource",
    "web_fetch",
    "web_search",
    "load_mcp_documentation",
    "new_task",
    "condense",
    "summarize_task",
    "new_rule",
    "report_bug",
    "ask_followup_question",
    "attempt_completion",
    "plan_mode_respond",
    "use_skill",
)
TEXT_TOOLS = {"ask_followup_question", "attempt_completion", "plan_mode_respond"}
XML_CALL_RE = re.compile(r"<(" + "|".join(XML_TOOLS) + r")>(.*?)</\1>", re.S)
XML_PARAM_RE = re.compile(r"<(\w+)>(.*?)</\1>", re.S)


def _parse(text: Any) -> Any:
    if isinstance(text, str):
        try:
            return json.loads(text)
        except ValueError:
            return None
    return None


class ClineReader:
    format = "cline"
    version = 5  # 2: a JSON true is no time (it read as 1970); 3: Claude Dev 1.x api_req_finished usage, 2.x cuts,
    # the task said as "text" is no model output; 4: an API history alone is a run (usage from its metrics), an
    # OpenAI-compatible provider's tokensIn already holds its cached tokens; 5: each image's pixel size
    # (``image_sizes``; replay.tokens.images)

    def sniff(self, head: str, path: Path) -> bool:
        start = head.lstrip()[:1]
        if path.name.endswith(API_FILE):  # a task's API history alone (its UI messages not kept)
            return start == "[" and bool(re.search(r'"role"\s*:\s*"(?:user|assistant)"', head))
        return (
            start == "["
            and '"ts"' in head
            and bool(re.search(r'"type"\s*:\s*"(?:say|ask)"', head))
            and bool(re.search(r'"(?:say|ask)"\s*:\s*"\w+"', head))
        )

    def members(self, path: Path) -> list[Path] | None:
        ui = _ui_file(path)
        if ui is None:  # a task folder whose UI messages are gone: its API history is the run
            return [path / API_FILE] if (path / API_FILE).is_file() else None
        return [p for p in (path / API_FILE, ui) if p.is_file()]

    def read(self, ctx: ReadContext) -> Iterator[Record]:
        folder = ctx.path.is_dir()
        ui_path = _ui_file(ctx.path) if folder else (None if ctx.path.name.endswith(API_FILE) else ctx.path)
        if ui_path is None:
            yield from self.read_api_alone(ctx, ctx.path / API_FILE if folder else ctx.path)
            return
        ui = load_json_document(replace(ctx, path=ui_path))
        if isinstance(ui, BadRecord) or not isinstance(ui, list):
            yield ui if isinstance(ui, BadRecord) else BadRecord(1, f"{ui_path.name}: expected a JSON array", "")
            return
        api: list[Any] | None = None
        if folder and (ctx.path / API_FILE).is_file():
            loaded = load_json_document(replace(ctx, path=ctx.path / API_FILE))
            if isinstance(loaded, list):
                api = loaded
            else:
                reason = loaded.reason if isinstance(loaded, BadRecord) else "expected a JSON array of messages"
                yield BadRecord(0, f"{API_FILE}: {reason}; items read from {ui_path.name} instead", "")
        messages: list[tuple[int, dict]] = []
        for n, m in enumerate(ui):
            if isinstance(m, dict) and m.get("type") in ("say", "ask"):
                messages.append((n, m))
            else:
                yield BadRecord(n, f"{ui_path.name}[{n}] is not a ClineMessage (type say/ask)", str(m)[:2000])
        messages, folded = combine_finished(messages)
        cut = _cut_in_place(api, messages) if api is not None else None
        task = _Task(ctx, self.format, messages)
        if cut is not None:
            task.b.warn(None, f"{API_FILE}: {cut}; items read from {ui_path.name} instead")
            api = None
        if folded:
            task.b.run.metadata["api_req_finished"] = folded
        yield from (task.from_api(api) if api is not None else task.from_ui())

    def read_api_alone(self, ctx: ReadContext, path: Path) -> Iterator[Record]:
        """A task whose ``ui_messages.json`` is not there: items and usage from the API history alone (usage from
        each reply's ``metrics``, Cline 3.40 on; its truncations, stamped only on UI messages, derived as Cline
        decides them: ``_Task.derived_truncation``)."""
        api = load_json_document(replace(ctx, path=path))
        if isinstance(api, BadRecord) or not isinstance(api, list):
            yield api if isinstance(api, BadRecord) else BadRecord(1, f"{API_FILE}: expected a JSON array", "")
            return
        info: dict[str, Any] = next(
            (m["modelInfo"] for m in api if isinstance(m, dict) and isinstance(m.get("modelInfo"), dict)), {}
        )
        started = next((m.get("ts") for m in api if isinstance(m, dict) and m.get("ts") is not None), None)
        task = _Task(ctx, self.format, [], info, started)
        yield from task.from_api(api)


class _Task:
    def __init__(
        self,
        ctx: ReadContext,
        fmt: str,
        messages: list[tuple[int, dict]],
        info: dict[str, Any] | None = None,
        started: Any = None,
    ) -> None:
        self.messages = messages
        if info is None:
            info = next((m["modelInfo"] for _, m in messages if isinstance(m.get("modelInfo"), dict)), {}) or {}
        started = messages[0][1].get("ts") if messages else started
        run = Run(
            run_id=ctx.run_id(),
            format=fmt,
            source_path=str(ctx.path),
            harness="cline",
            model=info.get("modelId"),
            started_at=epoch_ms_iso(started),
            metadata={k: v for k, v in {"provider": info.get("providerId"), "mode": info.get("mode")}.items() if v},
        )
        self.b = RunBuilder(run)
        self.pending: list[tuple[str, str]] = []  # (call id, tool name) awaiting results
        self.msg_start: list[int] = []  # item seq where API message i begins
        self.events: list[dict] = []
        self.range: Any = None
        self.n_calls = 0
        # usage at which Cline manages the context (None: unknown)
        self.limit = _max_allowed(info.get("modelId"), info.get("providerId"))
        self.first: dict[int, FirstResult] = {}  # API user message -> its opening file-tool result
        self.rewritten: set[int] = set()  # messages the duplicate-read pass has rewritten
        self.rewrites: list[dict] = []
        self.passed: tuple[int, int] | None = None  # (request, messages then) of the latest pass
        self.prev_total: float | None = None  # the previous request's tokens in, out and cached, as Cline sums them
        self.native: bool | None = None  # tool calls sent natively (None: no tool call seen)
        self.images: list[str] = []  # the images the user gave (data URLs), sent with the next user message

    # --- shared ---------------------------------------------------------------------------------------------
    def usage(self, info: dict, model_info: Any) -> dict[str, Any]:
        """The usage of an ``api_req_started`` text, read by the serving provider's semantics."""
        provider = model_info.get("providerId") if isinstance(model_info, dict) else None
        return ui_usage(info, provider or self.b.run.metadata.get("provider"))

    def deleted_range(self, m: dict, line: int) -> None:
        new = m.get("conversationHistoryDeletedRange")
        if new == self.range or not (isinstance(new, list) and len(new) == 2):
            return
        if self.passed is None or self.passed[0] != max(self.b.step - 1, 0):  # Cline's pass ran before truncating
            self.duplicate_reads(max(self.b.step - 1, 0), len(self.msg_start) - 1, line)
        self.range = new
        lo, hi = int(new[0]), int(new[1])
        starts = self.msg_start + [self.b.seq]
        drop = [[starts[lo], starts[min(hi + 1, len(starts) - 1)]]] if lo < len(starts) else []
        self.events.append(
            {
                "kind": "condensation",
                "harness_kind": "truncation",
                "step": max(self.b.step - 1, 0),
                "drop": [d for d in drop if d[0] < d[1]],
                "summary_seq": None,
                "trigger": "auto",
                "pre_tokens": None,
                "line": line,
                "api_range": [lo, hi],
            }
        )

    def duplicate_reads(self, step: int, end: int, line: int) -> None:
        """Cline's duplicate-file-read pass before request ``step`` over the API messages before ``end``."""
        self.passed = (step, end)
        start = int(self.range[1]) + 1 if self.range else 2
        cleared = duplicate_pass(self.first, start, end, self.rewritten)
        if cleared:
            self.rewrites.append(
                {
                    "step": step,
                    "harness_kind": "duplicate file reads",
                    "cleared": cleared,
                    "line": line,
                    "derived": True,
                }
            )

    def managed(self, info: dict, step: int, line: int) -> None:
        """Before request ``step`` (its user message the newest API message): when the previous request's usage
        reached the max allowed size, Cline's duplicate-read pass ran (the truncation, if any, is recorded)."""
        if self.limit is not None and self.prev_total is not None and self.prev_total >= self.limit:
            self.duplicate_reads(step, len(self.msg_start), line)
        parts: list[Any] = [info.get(k) for k in ("tokensIn", "tokensOut", "cacheWrites", "cacheReads")]
        self.prev_total = sum(p for p in parts if type(p) in (int, float)) if info else None

    def call(self, name: str, args: Any, line: int, ts: str | None, call_id: str | None = None) -> None:
        self.n_calls += 1
        call_id = call_id or f"cline-{self.n_calls}"
        add_call(self.b, name, args, call_id, line=line, ts=ts)
        self.pending.append((call_id, name))

    def sent_text(self, text: str, line: int, ts: str | None) -> tuple[int, str] | None:
        """Text sent as (part of) a user message: tool results by header, environment details, the rest; the item
        and text of the tool result the message opens with (None when it opens with other text)."""
        env = [e.group(0) for e in ENV_RE.finditer(text)]
        body = ENV_RE.sub("", text)
        heads = list(RESULT_RE.finditer(body))
        lead = body[: heads[0].start()] if heads else body
        if lead.strip():
            self.b.add("user_text", "user", lead.strip(), line=line, ts=ts)
        opening = None
        for k, h in enumerate(heads):
            segment = body[h.start() : heads[k + 1].start() if k + 1 < len(heads) else len(body)].strip()
            match = next((i for i, (_, name) in enumerate(self.pending) if name == h.group(1)), None)
            if match is None:  # e.g. attempt_completion's result carries the user's feedback: the user speaks
                self.b.add("user_text", "user", segment, tool_name=h.group(1), line=line, ts=ts)
            else:
                item = self.b.result(segment, self.pending.pop(match)[0], h.group(1), line=line, ts=ts)
                if k == 0 and not lead.strip():
                    opening = (item.seq, segment)
        for e in env:
            self.b.add("attachment", "user", e, tool_name="environment_details", line=line, ts=ts)
        return opening

    def image(self, data: object, line: int, ts: str | None) -> None:
        """An image block of a user message (``data``: its base64, or a data URL); Cline weighs it by the
        characters of its base64 data (``runs.metadata.media_chars``: [[seq, chars], ...]), the server by its
        pixel size (``image_sizes``; replay.tokens.images)."""
        item = self.b.image("user", "[image]", data, line=line, ts=ts)
        self.b.run.metadata.setdefault("media_chars", []).append([item.seq, _base64_chars(data)])

    def finish(self) -> Iterator[Record]:
        if self.native is not None:
            self.b.run.metadata["tool_calls"] = "native" if self.native else "text"
        if self.events:
            self.b.run.metadata["context_events"] = self.events
        if self.rewrites:
            self.b.run.metadata["context_rewrites"] = self.rewrites
        if self.first:  # what a policy replaying Cline's pass needs: [seq, path as written (as an id), chars after]
            keys: dict[str, int] = {}
            self.b.run.metadata["duplicate_candidates"] = [
                [c.seq, keys.setdefault(c.path, len(keys)), min(c.note_chars, c.chars)]
                for _, c in sorted(self.first.items())
            ]
        self.b.scan_clips()
        yield from self.b

    # --- ui_messages only -----------------------------------------------------------------------------------
    def from_ui(self) -> Iterator[Record]:
        for n, (line, m) in enumerate(self.messages):
            kind, ts = m.get("say") or m.get("ask"), epoch_ms_iso(m.get("ts"))
            kind = kind if isinstance(kind, str) else None  # a damaged type of any JSON value is no known kind
            if n == 0 and kind == "text":
                kind = "task"  # the task as Claude Dev 1.x to Cline 3.46 say it (see the module docstring)
            self.deleted_range(m, line)
            text = m.get("text") if isinstance(m.get("text"), str) else ""
            if kind == "api_req_started":
                info = _parse(text) or {}
                chi = m.get("conversationHistoryIndex")  # API messages before this request's user message, minus 1
                while isinstance(chi, int) and len(self.msg_start) < chi + 1:  # messages the UI does not show
                    self.msg_start.append(self.b.seq)
                self.msg_start.append(self.b.seq)  # the user message sent with this request
                if not self.pending:  # no calls awaiting results: the user spoke (task, feedback, resumption)
                    self.b.new_turn()
                request = str(info.get("request") or "")
                if self.pending:  # results of the previous response's calls: as blocks or as text
                    self.native = bool(self.native) or bool(NATIVE_RESULT_RE.search(request))
                opening = self.sent_text(request, line, ts)
                for url in self.images:
                    self.image(url, line, ts)
                self.images.clear()
                if opening is not None and (found := first_result(*opening)) is not None:
                    self.first[len(self.msg_start) - 1] = found
                model = (m.get("modelInfo") or {}).get("modelId")
                # the model now serving (Cline's current API handler)
                if (limit := _max_allowed(model, sub_dict(m, "modelInfo").get("providerId"))) is not None:
                    self.limit = limit
                self.managed(info, self.b.step, line)
                self.pending.clear()
                self.b.request(line=line, ts=ts, model=model, **self.usage(info, m.get("modelInfo")))
                self.msg_start.append(self.b.seq)  # the assistant message it produced
            elif kind in USER_INPUT and isinstance(m.get("images"), list):
                self.images += [u for u in m["images"] if isinstance(u, str)]
            elif kind == "reasoning" and text:
                self.b.add("reasoning", "assistant", text, line=line, ts=ts)
            elif kind in OUTPUT_TEXT and text:
                payload = _parse(text)
                shown = payload.get("response") or payload.get("question") if isinstance(payload, dict) else None
                self.b.add("assistant_text", "assistant", str(shown or text), line=line, ts=ts)
            elif kind == "tool":
                parsed = _parse(text)
                # a JSON value other than an object (a string, a list) was read with .get() and stopped the reader
                payload = parsed if isinstance(parsed, dict) and parsed else {"raw": text}
                tool = payload.get("tool") or "tool"
                name = UI_TOOL_NAMES.get(tool, tool)
                self.call(name, payload, line, ts)
            elif kind == "command":
                self.call("execute_command", {"command": text}, line, ts)
            elif kind == "use_mcp_server":
                payload = _parse(text) or {}
                name = payload.get("type") or "use_mcp_tool"
                self.call(name, payload, line, ts)
        yield from self.finish()

    # --- api_conversation_history.json ----------------------------------------------------------------------
    def from_api(self, api: list) -> Iterator[Record]:
        starts = [(line, m) for line, m in self.messages if (m.get("say") or m.get("ask")) == "api_req_started"]
        ranges = [(line, m) for line, m in self.messages if m.get("conversationHistoryDeletedRange")]
        k = 0
        for n, msg in enumerate(api):
            self.msg_start.append(self.b.seq)
            if not isinstance(msg, dict) or msg.get("role") not in ("user", "assistant"):
                yield BadRecord(n, f"{API_FILE}[{n}] is not a user/assistant message", str(msg)[:2000])
                continue
            ts = epoch_ms_iso(msg.get("ts"))
            blocks: list[Any] = (
                msg["content"]
                if isinstance(msg.get("content"), list)
                else [{"type": "text", "text": text_of(msg.get("content"))}]
            )
            if msg["role"] == "user":
                if not any(isinstance(x, dict) and x.get("type") == "tool_result" for x in blocks):
                    self.b.new_turn()
                self.user_blocks(blocks, n, ts)
                continue
            line, started = starts[k] if k < len(starts) else (n, {})
            k += 1
            model_info = msg.get("modelInfo")
            self.b.request(
                line=line,
                ts=ts,
                model=model_info.get("modelId") if isinstance(model_info, dict) else None,
                **(
                    self.usage(_parse(started.get("text")) or {}, started.get("modelInfo") or model_info)
                    if self.messages
                    else metrics_usage(msg)  # no UI file: the history's own metrics (Cline 3.40 on)
                ),
            )
            if not self.messages:
                self.derived_truncation(api, n, msg)
            until = starts[k][0] if k < len(starts) else float("inf")
            for rline, rm in ranges:  # truncations applied while setting up this request
                if rline < until:
                    self.deleted_range(rm, rline)
            self.pending.clear()
            for block in blocks:
                self.assistant_block(block, n, ts)
        for line, started in starts[k:]:  # requests with no reply in the history (e.g. cancelled)
            self.b.request(line=line, **self.usage(_parse(started.get("text")) or {}, started.get("modelInfo")))
        yield from self.finish()

    def derived_truncation(self, api: list, n: int, msg: dict) -> None:
        """Without UI messages, the truncation Cline applied before the request answered by API message ``n``,
        derived as Cline decides it (replay.readers.cline_truncation) from the previous reply's metrics and the
        serving model's max allowed size; then this reply's sum for the next."""
        info = sub_dict(msg, "modelInfo")
        if (limit := _max_allowed(info.get("modelId"), info.get("providerId"))) is not None:
            self.limit = limit
        if self.limit is not None and self.prev_total is not None and self.prev_total >= self.limit:
            roles = [str(m.get("role")) if isinstance(m, dict) else "" for m in api[:n]]
            rng = next_truncation_range(roles, self.range, self.prev_total / 2 > self.limit)
            before = len(self.events)
            self.deleted_range({"conversationHistoryDeletedRange": rng}, n)
            if len(self.events) > before:
                self.events[-1]["derived"] = True
        tokens = sub_dict(sub_dict(msg, "metrics"), "tokens")
        parts: list[Any] = [tokens.get(k) for k in ("prompt", "completion", "cached")]
        self.prev_total = sum(p for p in parts if type(p) in (int, float)) if tokens else None

    def user_blocks(self, blocks: list, n: int, ts: str | None) -> None:
        for block in blocks:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_result":
                self.b.result(
                    text_of(block.get("content")),
                    block.get("tool_use_id"),
                    line=n,
                    ts=ts,
                    is_error=bool(block.get("is_error")),
                )
            elif block.get("type") == "image":
                source = block.get("source")
                self.image(source.get("data") if isinstance(source, dict) else None, n, ts)
            elif block.get("type") == "text":
                self.sent_text(str(block.get("text") or ""), n, ts)

    def assistant_block(self, block: Any, n: int, ts: str | None) -> None:
        if not isinstance(block, dict):
            return
        btype = block.get("type")
        if btype == "text" and block.get("text"):
            self.xml_text(block["text"], n, ts)
        elif btype in ("thinking", "redacted_thinking"):
            self.b.add("reasoning", "assistant", block.get("thinking") or block.get("data") or "", line=n, ts=ts)
        elif btype == "tool_use":
            self.native = True
            add_call(self.b, block.get("name") or "", block.get("input"), block.get("id"), line=n, ts=ts)

    def xml_text(self, text: str, n: int, ts: str | None) -> None:
        """Assistant text; tool calls written in Cline's XML (``<read_file><path>a.py</path></read_file>``, the
        format before native tool use) become tool calls, as the UI shows them."""
        pos = 0
        for m in XML_CALL_RE.finditer(text):
            if lead := text[pos : m.start()].strip():
                self.b.add("assistant_text", "assistant", lead, line=n, ts=ts)
            args = {k: v.strip("\n") for k, v in XML_PARAM_RE.findall(m.group(2))}
            self.native = bool(self.native)
            if m.group(1) in TEXT_TOOLS:  # as in the UI: completion, questions and plans are the model's text
                self.b.add("assistant_text", "assistant", m.group(0), line=n, ts=ts)
            else:
                self.call(m.group(1), args, n, ts)
            pos = m.end()
        if tail := text[pos:].strip():
            self.b.add("assistant_text", "assistant", tail, line=n, ts=ts)


def _cut_in_place(api: list[Any], messages: list[tuple[int, dict]]) -> str | None:
    """Why the API history cannot be paired with the requests, or None. Cline 2.0 to 3.0.x truncate by rewriting
    ``api_conversation_history.json`` (``src/core/sliding-window`` ``truncateHalfConversation``: the first message
    and the newest half); ``conversationHistoryDeletedRange`` (3.1 on) keeps it whole. A history with fewer
    replies than requests that were answered, in a UI file of before 3.1 (3.1 stamps ``conversationHistoryIndex`` on
    every message, with the deleted range: ``src/shared/ExtensionMessage.ts``), was cut so: its k-th reply is no
    longer the k-th request's."""
    if any("conversationHistoryIndex" in m or m.get("conversationHistoryDeletedRange") for _, m in messages):
        return None
    replies = sum(1 for m in api if isinstance(m, dict) and m.get("role") == "assistant")
    answered = 0
    for _, m in messages:
        if (m.get("say") or m.get("ask")) == "api_req_started":
            info = _parse(m.get("text"))
            answered += isinstance(info, dict) and bool(info.get("tokensOut") or info.get("cost"))
    if replies >= answered:
        return None
    return (
        f"{replies} replies for {answered} answered requests and no conversationHistoryDeletedRange: "
        "truncated in place (Cline before 3.1)"
    )


def _ui_file(folder: Path) -> Path | None:
    """The task folder's UI messages: ``ui_messages.json``, or Claude Dev 1.x's ``claude_messages.json``."""
    return next((p for p in (folder / UI_FILE, folder / LEGACY_UI_FILE) if p.is_file()), None)


def _max_allowed(model: Any, provider: Any = None) -> int | None:
    """Cline's max allowed size for the model's window (None when the log does not let us know the window)."""
    window = cline_window(model if isinstance(model, str) else None, provider if isinstance(provider, str) else None)
    return cline_max_allowed(window) if window else None


def _base64_chars(url: object) -> int:
    """Characters of the base64 data of an image as the UI keeps it (``data:image/png;base64,<data>``), which is
    what the API message's image block carries; 0 for no text."""
    if not isinstance(url, str):
        return 0
    return len(url) - url.find(",") - 1 if url.startswith("data:") and "," in url else len(url)


READER = ClineReader()
