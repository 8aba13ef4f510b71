"""Cline 4.x sessions, as the Cline SDK (``@cline/core``) persists them for the VS Code extension 4.x and the CLI
(``apps/cli``, 3.0 on). Facts from cline/cline at 21cb8d2525 (VS Code 4.1.13, SDK 0.0.78), checked against
v4.0.0 (b5388e5c8d). Under ``sdk/packages/core``: ``src/services/session-artifacts.ts``,
``src/services/session-data.ts``, ``src/session/stores/session-manifest-store.ts``,
``src/session/models/session-compaction.ts``, ``src/runtime/config/agent-message-codec.ts``,
``docs/messages-contract-v1.md``; per-request metrics in
``sdk/packages/agents/src/agent-runtime.ts``.

Layout: ``~/.cline/data/sessions/<id>/`` (``CLINE_SESSION_DATA_DIR``, else ``CLINE_DATA_DIR``/sessions, else
``CLINE_DIR``/data/sessions) holds ``<id>.json`` (the manifest: source, provider, model, cwd, started_at, status),
``<id>.messages.json`` and, once a compaction happened (4.1 on), ``<id>.compaction.json``; a subagent's or teammate's
transcript is ``<agent>.messages.json`` (``<agent>__<task>.messages.json``) in its root session's folder. The folder is
one unit: the lead session and each subagent are runs (subagents with ``parent_run_id`` the lead's). Cline 4.x writes
no ``ui_messages.json`` / ``api_conversation_history.json`` for new tasks (the classic reader reads 3.x tasks only).

``<id>.messages.json`` is ``{version: 1, updated_at, agent, sessionId, taskType?, origin?, messages[], system_prompt?}``
rewritten whole on every save. A message is ``{id, role: user|assistant, content[], ts?, metadata?, modelInfo?
{id, provider, family?}, metrics? {inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens, cost?}}``; blocks are
``text``, ``thinking``, ``redacted_thinking``, ``tool_use`` {id, name, input}, ``tool_result`` {tool_use_id, name,
content (a string, content blocks, or structured output), is_error}, ``file`` {path, content}, ``image``.

Requests: one per assistant message (the runtime appends one message per model call and stamps it with that call's
usage delta). ``inputTokens`` is the provider's whole input (the SDK's own cost is ``inputTokens - cacheRead -
cacheWrite`` at the input price), so prompt_tokens = inputTokens and the uncached input is the difference. A message
without ``metrics`` is a request without usage. The request's ``ts`` is the message's (the call's end). A 3.x task
resumed in VS Code 4.x starts with its converted history, up to a user message with the legacy-conversation warning
(apps/vscode/src/sdk/legacy-task-handling.ts): those assistant messages are items, not requests of the run.

Compaction. 4.1 (VS Code 4.1.0, CLI 3.0.39 on) keeps ``messages.json`` whole and writes the compacted view to the
``<id>.compaction.json`` sidecar ``{version: 1, updated_at, source_message_count, source_prefix_hash, messages[],
system_prompt?}``: every later request sends the sidecar's messages, then the transcript from
``source_message_count`` on. Only the latest compaction is on disk (a later one replaces the file). It becomes a
recorded context event (kind "compaction") before the transcript's message ``source_message_count`` (or earlier,
where the summary's ``generatedAt`` puts it: replay/readers/cline_sdk_sidecar.py): ``drop`` = the
transcript so far, then the sidecar's messages as items, its ``compaction_summary`` message (agentic strategy,
``tokensBefore`` a chars/3 estimate) the ``summary`` item, the rest ``resent``. The basic strategy has no summary:
its first message carries ``metadata.kind = "compaction"`` {reason, messagesRemoved}. The summariser's call is not
logged. The compactions before the latest leave only a trace in the usage: a request whose inputTokens fell below
half the previous one's with no compaction on disk between is noted (``runs.metadata.unrecorded_compactions``, a
warning), which calibration reports as unreconstructable. Each message's first item carries the SDK's own estimate
of the message as sent (``runs.metadata.harness_estimates``), which its compaction triggers on, and where larger
as stored (``harness_keep_estimates``), which it cuts on (replay.readers.cline_sdk_estimate). Tool results over
8,000 characters and attached files over 50,000 are read cut in the middle, as the SDK's request builder sends them.
4.0.x (CLI before 3.0.39) replaced the transcript itself: a file whose messages carry a compaction marker holds only
what the last compaction kept (``runs.metadata.history_compacted``); its summary is a ``summary`` item, earlier
requests are gone.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from replay.model import BadRecord, Record, Run
from replay.readers.aliases import add_call
from replay.readers.base import ReadContext, load_json_document
from replay.readers.builder import RunBuilder, seq_ranges, validate_usage
from replay.readers.cline_sdk_estimate import message_estimate, sent_file, sent_result, stored_estimate
from replay.readers.cline_sdk_sidecar import Placement, placement
from replay.readers.json_fields import epoch_ms_iso, sub_dict, sub_list
from replay.readers.openai_messages import top_keys

MESSAGES = ".messages.json"
SIDECAR = ".compaction.json"
MESSAGE_KEYS = frozenset({"sessionId", "agent", "messages", "updated_at"})
SIDECAR_KEYS = frozenset({"source_message_count", "messages"})
MARKER_KINDS = ("compaction", "compaction_summary")
LEGACY_WARNING = "Warning: this is a legacy conversation, which means tool names may have changed."
UNRECORDED_DROP = 0.5  # a prompt below this share of the previous one's: a compaction happened between
TRIGGERS = {"manual_compaction": "manual", "auto_compaction": "auto", "overflow_recovery_compaction": "auto"}


def _json(value: Any) -> str:
    """As JSON.stringify writes it (compact): how the SDK sends structured tool output."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _kind(message: dict) -> Any:
    return sub_dict(message, "metadata").get("kind")


class ClineSdkReader:
    format = "cline-sdk"
    version = (
        2  # 2: results and files as the request builder sends them, the SDK's estimates; unplaceable times to ingest
    )

    def sniff(self, head: str, path: Path) -> bool:
        body = head.lstrip()
        if not body.startswith("{"):
            return False
        keys = top_keys(head, len(head) - len(body))
        return MESSAGE_KEYS <= keys or SIDECAR_KEYS <= keys

    def members(self, path: Path) -> list[Path] | None:
        if not (path / f"{path.name}{MESSAGES}").is_file():
            return None
        own = (f"{path.name}.json", f"{path.name}{SIDECAR}")
        return sorted(p for p in path.iterdir() if p.is_file() and (p.name.endswith(MESSAGES) or p.name in own))

    def read(self, ctx: ReadContext) -> Iterator[Record]:
        if not ctx.path.is_dir():
            doc = self._load(ctx, ctx.path)
            if isinstance(doc, BadRecord):
                yield doc
            elif "source_message_count" in doc and "sessionId" not in doc:
                yield BadRecord(
                    1,
                    f"{ctx.path.name}: a Cline compaction sidecar, not a session; ingest its session folder "
                    "(~/.cline/data/sessions/<id>/), which holds the transcript it belongs to",
                    "",
                )
            else:
                yield from _Session(ctx, self.format, ctx.run_id(), ctx.path.name).read(doc)
            return
        name = ctx.path.name
        lead_path = ctx.path / f"{name}{MESSAGES}"
        manifest = self._optional(ctx, ctx.path / f"{name}.json")
        sidecar = self._optional(ctx, ctx.path / f"{name}{SIDECAR}")
        bad = [r for r in (manifest, sidecar) if isinstance(r, BadRecord)]
        yield from bad
        lead = self._load(ctx, lead_path)
        parent = None  # the lead run, when its transcript could be read
        if isinstance(lead, BadRecord):
            yield lead
        else:
            session = _Session(ctx, self.format, ctx.run_id(), lead_path.name)
            yield from session.read(
                lead,
                manifest if isinstance(manifest, dict) else None,
                sidecar if isinstance(sidecar, dict) else None,
            )
            parent = session.b.run.run_id
        for path in sorted(ctx.path.glob(f"*{MESSAGES}")):
            if path == lead_path:
                continue
            doc = self._load(ctx, path)
            if isinstance(doc, BadRecord):
                yield doc
                continue
            agent = path.name.removesuffix(MESSAGES)
            sub = _Session(ctx, self.format, ctx.run_id(agent), path.name, parent=parent)
            yield from sub.read(doc)

    @staticmethod
    def _load(ctx: ReadContext, path: Path) -> dict | BadRecord:
        doc = load_json_document(replace(ctx, path=path))
        if isinstance(doc, BadRecord):
            return replace(doc, reason=f"{path.name}: {doc.reason}")
        if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
            return BadRecord(1, f"{path.name}: expected a JSON object with a 'messages' list", str(doc)[:2000])
        return doc

    @classmethod
    def _optional(cls, ctx: ReadContext, path: Path) -> dict | BadRecord | None:
        if not path.is_file():
            return None
        if path.name.endswith(SIDECAR):
            found = cls._load(ctx, path)
            if isinstance(found, BadRecord):
                return replace(found, reason=f"{found.reason}; the session is read without its compaction")
            return found
        doc = load_json_document(replace(ctx, path=path))
        if isinstance(doc, BadRecord):
            return replace(doc, reason=f"{path.name}: {doc.reason}; the session is read without it")
        return doc if isinstance(doc, dict) else BadRecord(1, f"{path.name}: expected a JSON object", str(doc)[:2000])


class _Session:
    """One messages file read into one run."""

    def __init__(self, ctx: ReadContext, fmt: str, run_id: str, name: str, parent: str | None = None) -> None:
        self.name = name
        self.b = RunBuilder(
            Run(run_id=run_id, format=fmt, source_path=str(ctx.path), harness="cline", parent_run_id=parent)
        )
        self.bad: list[BadRecord] = []
        self.imported = 0  # leading messages converted from a 3.x task's api_conversation_history
        # per request: (step, inputTokens, message, a compaction on disk comes before it and after the previous one)
        self.prompts: list[tuple[int, int | None, int, bool]] = []
        self.compacted = False

    def read(self, doc: dict, manifest: dict | None = None, sidecar: dict | None = None) -> Iterator[Record]:
        b, meta = self.b, self.b.run.metadata
        origin = sub_dict(doc, "origin")
        for key, value in (
            ("session_id", doc.get("sessionId")),
            ("agent", doc.get("agent")),
            ("task_type", doc.get("taskType")),
            ("source", origin.get("source")),
            ("cline_version", origin.get("version")),
        ):
            if isinstance(value, str) and value:
                meta[key] = value
        if doc.get("version") != 1:
            b.warn(None, f"{self.name}: messages file version {doc.get('version')!r}; read as version 1")
        if manifest is not None:
            self._manifest(manifest)
        if isinstance(doc.get("system_prompt"), str) and doc["system_prompt"]:
            b.add("system", "system", doc["system_prompt"])
        messages = doc["messages"]
        self.imported = _imported(messages)
        if self.imported:
            meta["legacy_messages"] = self.imported  # a 3.x task resumed in 4.x: its history, not this run's requests
        place = self._place(sidecar, messages)
        for n, message in enumerate(messages):
            if place is not None and n == place.at:
                self._compaction(sidecar or {}, place)
            if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
                self.bad.append(BadRecord(n, f"{self.name}: messages[{n}] is not a user or assistant message", ""))
                continue
            self._message(message, n, copy=False)
        if place is not None and place.at == len(messages):
            self._compaction(sidecar or {}, place)
        self._finish(messages)
        yield from b
        yield from self.bad

    def _manifest(self, manifest: dict) -> None:
        meta = self.b.run.metadata
        for key in ("source", "provider", "cwd", "status"):
            if isinstance(manifest.get(key), str) and manifest[key]:
                meta.setdefault(key, manifest[key])
        if isinstance(title := sub_dict(manifest, "metadata").get("title"), str):
            meta["title"] = title
        self.b.run = self.b.records[0] = replace(
            self.b.run,
            started_at=manifest.get("started_at") if isinstance(manifest.get("started_at"), str) else None,
            model=manifest.get("model") if isinstance(manifest.get("model"), str) else None,
        )

    def _place(self, sidecar: dict | None, messages: list) -> Placement | None:
        """Where the sidecar's compaction stands in the transcript (None: no sidecar, or one that cannot apply)."""
        if sidecar is None:
            return None
        found = placement(sidecar, messages)
        if isinstance(found, str):
            self.b.warn(None, f"compaction sidecar of {self.name}: {found}; the compaction is not recorded")
            return None
        return found

    def _message(self, message: dict, n: int, copy: bool) -> None:
        """A message's items; an assistant message of the transcript opens its request first. ``copy``: a compacted
        copy re-sent from the sidecar (no request, no turn); a message imported from a 3.x task is no request."""
        first = self.b.seq
        self._items(message, n, copy)
        if self.b.seq > first and (not copy or _kind(message) == "compaction_summary"):
            # the SDK's own estimate of the message, on its first item (replay.readers.cline_sdk_estimate)
            meta, sent, held = self.b.run.metadata, message_estimate(message), stored_estimate(message)
            meta.setdefault("harness_estimates", []).append([first, sent])
            if held != sent:  # its cut counts the message as stored (long tool results whole)
                meta.setdefault("harness_keep_estimates", []).append([first, held])

    def _items(self, message: dict, n: int, copy: bool) -> None:
        b, ts = self.b, epoch_ms_iso(message.get("ts"))
        blocks = message.get("content")
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        if not isinstance(blocks, list):
            self.bad.append(BadRecord(n, f"{self.name}: messages[{n}] content is neither text nor blocks", ""))
            blocks = []
        if message["role"] == "assistant":
            if not copy and n >= self.imported:
                info = sub_dict(message, "modelInfo")
                model = info.get("id") if isinstance(info.get("id"), str) else None
                req = b.request(line=n, ts=ts, model=model, **self._usage(message, n))
                self.prompts.append((req.step, req.prompt_tokens, n, self.compacted))
                self.compacted = False
            for block in blocks:
                self._assistant_block(block, n, ts)
            return
        if _kind(message) == "compaction_summary":
            b.add("summary", "user", _text(blocks), line=n, ts=ts)
            return
        if not copy and any(isinstance(x, dict) and x.get("type") != "tool_result" for x in blocks):
            b.new_turn()  # a typed message of the transcript (a compacted copy opens no turn)
        for block in blocks:
            self._user_block(block, n, ts)

    def _usage(self, message: dict, n: int) -> dict[str, Any]:
        """The request's usage from the message's ``metrics`` (none: no usage); its cost is added to the run's."""
        metrics = sub_dict(message, "metrics")
        if not metrics:
            return {}
        total, read, write = (metrics.get(k) for k in ("inputTokens", "cacheReadTokens", "cacheWriteTokens"))
        usage = {
            "prompt_tokens": total,
            "cache_read": 0 if read is None else read,
            "cache_write": 0 if write is None else write,
            "output_tokens": metrics.get("outputTokens"),
        }
        clean, problem = validate_usage(usage)
        if problem is not None:
            return usage  # the builder quarantines it, naming the reason
        if clean["prompt_tokens"] is not None:
            if clean["prompt_tokens"] < clean["cache_read"] + clean["cache_write"]:
                self.bad.append(
                    BadRecord(
                        n,
                        f"{self.name}: messages[{n}] inputTokens {total} is less than its cache reads and writes "
                        f"({read} + {write}): not the SDK's whole-input count; request kept without its prompt size",
                        _json(metrics)[:2000],
                    )
                )
                clean["prompt_tokens"] = None
            else:
                clean["input_tokens"] = clean["prompt_tokens"] - clean["cache_read"] - clean["cache_write"]
        if isinstance(cost := metrics.get("cost"), int | float) and not isinstance(cost, bool):
            meta = self.b.run.metadata
            meta["recorded_cost"] = round(meta.get("recorded_cost", 0.0) + float(cost), 10)
        return clean

    def _unrecorded(self) -> None:
        """Requests whose prompt fell below half the previous one's, with no compaction on disk between: the
        compactions before the latest (4.1's sidecar keeps only the latest; nothing else takes messages out of the
        request), noted in ``runs.metadata.unrecorded_compactions`` (request steps), with a warning."""
        meta = self.b.run.metadata
        for (_, last, _, _), (step, prompt, n, compacted) in itertools.pairwise(self.prompts):
            if compacted or prompt is None or last is None or prompt >= last * UNRECORDED_DROP:
                continue
            if not meta.get("unrecorded_compactions"):
                self.b.warn(
                    n,
                    f"{self.name}: the prompt fell from {last:,} to {prompt:,} tokens at request {step} with no "
                    "compaction on disk: Cline keeps only its latest compaction (the sidecar), so the prompts before "
                    "that one cannot be replayed from the log",
                )
            meta.setdefault("unrecorded_compactions", []).append(step)

    def _assistant_block(self, block: Any, n: int, ts: str | None) -> None:
        if not isinstance(block, dict):
            return
        kind, b = block.get("type"), self.b
        if kind == "text" and block.get("text"):
            b.add("assistant_text", "assistant", str(block["text"]), line=n, ts=ts)
        elif kind == "thinking" and block.get("thinking"):
            b.add("reasoning", "assistant", str(block["thinking"]), line=n, ts=ts)
        elif kind == "tool_use":
            name = block["name"] if isinstance(block.get("name"), str) else ""
            add_call(b, name, block.get("input") or {}, block.get("id"), line=n, ts=ts)
        elif kind == "tool_result":  # a provider-executed tool's result (web search): in the assistant's message
            self._user_block(block, n, ts)

    def _user_block(self, block: Any, n: int, ts: str | None) -> None:
        if not isinstance(block, dict):
            return
        kind, b = block.get("type"), self.b
        if kind == "text" and block.get("text"):
            b.add("user_text", "user", str(block["text"]), line=n, ts=ts)
        elif kind == "file":
            content = sent_file(str(block.get("content") or ""))  # cut as sent
            text = f'<file_content path="{block.get("path")}">\n{content}\n</file_content>'
            b.add("attachment", "user", text, tool_name="file", line=n, ts=ts)
        elif kind == "image":
            b.add("image", "user", f"[image {block.get('mediaType') or ''}]".replace(" ]", "]"), line=n, ts=ts)
        elif kind == "tool_result":
            content, images = _result_text(sent_result(block.get("content")))  # long strings cut, as sent
            name = block.get("name") if isinstance(block.get("name"), str) else None
            b.result(content, block.get("tool_use_id"), name, line=n, ts=ts, is_error=block.get("is_error") is True)
            for media in images:
                b.add("image", "tool", f"[image {media}]".replace(" ]", "]"), line=n, ts=ts)

    def _compaction(self, sidecar: dict, place: Placement) -> None:
        """The sidecar's compacted view, sent from the request after transcript message ``place.at`` on (its last
        ``place.copies`` messages are the transcript's own from there: read from the transcript)."""
        b, n = self.b, place.at
        start, before = b.body_start(), b.seq
        summary_seq, resent_from = None, b.seq
        marker: dict = {}
        compacted = sub_list(sidecar, "messages")
        for k, message in enumerate(compacted[: len(compacted) - place.copies]):
            if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
                where = f"{self.name.removesuffix(MESSAGES)}{SIDECAR}: messages[{k}]"
                self.bad.append(BadRecord(k, f"{where} is not a user or assistant message", ""))
                continue
            if _kind(message) in MARKER_KINDS and not marker:
                marker = sub_dict(message, "metadata")
            seq = b.seq
            self._message(message, n, copy=True)
            if _kind(message) == "compaction_summary" and summary_seq is None:
                summary_seq = seq
        resent = seq_ranges(s for s in range(resent_from, b.seq) if s != summary_seq)
        reason = marker.get("reason")
        extra: dict[str, Any] = {
            "strategy": "agentic" if marker.get("kind") == "compaction_summary" else "basic" if marker else None,
            "source_message_count": place.count,
            "updated_at": sidecar.get("updated_at"),
        }
        if isinstance(marker.get("tokensBefore"), int | float):
            extra["tokens_before_estimate"] = marker["tokensBefore"]  # chars/3 of the messages, not a count
        if isinstance(marker.get("messagesRemoved"), int):
            extra["messages_removed"] = marker["messagesRemoved"]
        if isinstance(reason, str):
            extra["reason"] = reason
        self.compacted = True  # the prompt after it falls for a reason the log holds
        b.context_event(
            "compaction",
            drop=[[start, before]] if start < before else [],
            summary_seq=summary_seq,
            trigger=TRIGGERS.get(reason) if isinstance(reason, str) else None,
            line=n,
            resent=resent,
            **extra,
        )

    def _finish(self, messages: list) -> None:
        b, meta = self.b, self.b.run.metadata
        served: dict[str, int] = {}
        for m in messages:
            if isinstance(m, dict) and m.get("role") == "assistant":
                info = sub_dict(m, "modelInfo")
                if isinstance(info.get("id"), str):
                    served[info["id"]] = served.get(info["id"], 0) + 1
                    meta.setdefault("provider", info.get("provider"))
        if served:
            b.run = b.records[0] = replace(b.run, model=max(served, key=lambda k: served[k]))
        if any(isinstance(m, dict) and (_kind(m) in MARKER_KINDS or _preserved(m)) for m in messages):
            meta["history_compacted"] = True  # the compaction the prompt falls at is this file's own
            b.warn(
                None,
                f"{self.name} holds the history as a compaction left it (Cline 4.0.x rewrote the transcript): the "
                "requests before it, and their usage, are not in the file",
            )
        else:
            self._unrecorded()
        if b.run.started_at is None:
            first = next(
                (epoch_ms_iso(m.get("ts")) for m in messages if isinstance(m, dict) and epoch_ms_iso(m.get("ts"))), None
            )
            b.run = b.records[0] = replace(b.run, started_at=first)


def _imported(messages: list) -> int:
    """How many leading messages VS Code 4.x converted from a 3.x task it resumed (apps/vscode/src/sdk/
    legacy-task-handling.ts): they end with the user message carrying its legacy-conversation warning."""
    for n in range(len(messages) - 1, -1, -1):
        m = messages[n]
        if isinstance(m, dict) and m.get("role") == "user" and LEGACY_WARNING in json.dumps(m.get("content")):
            return n + 1
    return 0


def _preserved(message: dict) -> bool:
    return sub_dict(message, "metadata").get("compaction") == "preserved"


def _text(blocks: list) -> str:
    return "\n".join(
        str(x["text"]) for x in blocks if isinstance(x, dict) and x.get("type") == "text" and x.get("text")
    )


def _result_text(content: Any) -> tuple[str, list[str]]:
    """A tool result as the SDK sends it (shared ai-sdk-format.ts toAiSdkToolResultOutput): a string as it is, text
    and image blocks as text parts and images, any other value as JSON; with the media types of the images."""
    if isinstance(content, str):
        return content, []
    blocks = content if isinstance(content, list) else None
    if blocks and all(isinstance(x, dict) and x.get("type") in ("text", "image") for x in blocks):
        texts = [str(x.get("text") or "") for x in blocks if x["type"] == "text"]
        return "\n".join(texts), [str(x.get("mediaType") or "") for x in blocks if x["type"] == "image"]
    return ("" if content is None else _json(content)), []


READER = ClineSdkReader()
