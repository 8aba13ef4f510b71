"""Aider chat history markdown (``.aider.chat.history.md``).

Each ``# aider chat started at <ts>`` section is a run (``ctx.run_id(n)``; a history under aider's default name,
``.aider.chat.history.md`` at the project's root, is named after the project folder). ``#### `` lines are user input
(consecutive ones form one message), other lines are assistant prose, ``> `` lines are aider's console output
(kept as ``tool_result`` items of tool ``aider``). Each ``> Tokens: N sent, [W cache write, H cache hit,] M
received`` line is one request, placed before the assistant text it reports on ("1.2k" and "5,359" forms
parsed); a line without cache figures records 0 reads and writes for a Claude model, unknown ones otherwise
(``printed_cache_usage``). From 0.51 aider writes ``Cost: ...`` on a line of its own, without ``> ``, after a
Tokens line that reports both cache figures or carries the ``--no-stream`` warning (``tokens_report + "\n" +
cost_report``; ``io.append_chat_history`` quotes only the first line): that line is the usage report, not assistant
text. Assistant text with no Tokens line after it (interrupted) adds no request. Aider before 0.46 prints no Tokens
line at all (``base_coder.py`` ``calculate_and_show_tokens_and_cost`` is new in 0.46): in a session whose banner
names such a version, or that has no banner and no Tokens line, each reply to a user (or reflected) message is one
request without usage (``runs.metadata.usage_logged`` false). SEARCH/REPLACE blocks become ``edit`` tool calls on
the file named above the block (access write); ``> Added <file> to the chat`` becomes a ``read`` of that file.
After ``> # N SEARCH/REPLACE block failed to match``, the unprefixed text is aider's reflected error message to
the model, so a user message, not an assistant edit.

What the log does not hold (aider's ``base_coder``): every request also carries the repo map and the contents of
the files in the chat, which the history names but never shows. A file joins the chat with ``> Added <file> to
the chat``, with a yes/all answer to ``Add file to the chat?`` (the file named on the line above), or when an
applied edit creates or touches a file not yet in it; it leaves with ``Dropping``/``Removed <file> from the
chat``. Each such change after the first request is noted in ``runs.metadata.unlogged`` at the request that first
sends it (calibration fits an offset there, or flags the run when it happens often); the answer line aider echoes
as ``#### <question>: <answer>`` is console, not a user message.

Each request is priced at the main model announced last before it: ``/model`` switches it inside a session (a
new banner, no new header); the run's model is the one that served most requests.

``runs.metadata.usage_resolution`` gives, per request, how far the printed prompt may be from the true count:
aider >= 0.52 prints ``format_tokens`` (exact below 1,000, "4.2k" within 50, "11k" within 500); 0.46 to 0.51 print
the exact count ("5,359"). ``runs.metadata.history_limit`` is the chat history size above which aider summarises
the history with its weak model, a summary the log never shows: ``--max-chat-history-tokens`` when the command
line logs it, else the largest default of the version (2,048 before 0.71, 8,192 from it; 1/16 of the model's
input window, clamped).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from replay.model import BadRecord, Record, Request, Run
from replay.readers.base import UTF8_BOM, UTF16_BOMS, ReadContext, read_log
from replay.readers.builder import RunBuilder

HEADER_RE = re.compile(r"^# aider chat started at (.+?)\s*$")
NUM = r"([\d.,]+k?)"
TOKENS_RE = re.compile(rf"^> Tokens: {NUM} sent(?:, {NUM} cache write)?(?:, {NUM} cache hit)?, {NUM} received")
ADDED_RE = re.compile(r"^> Added (.+?) to the chat(?: \(read-only\))?\.?\s*$")
OUTPUT_RE = re.compile(r"^\d+ lines? of output$")  # "/run" output added as a message: logged above it
CONFIRM_RE = re.compile(r"^> Add file to the chat\? .*: ?(\S*)\s*$")
ANSWER_RE = re.compile(r"^#### .*\(Y\)es/\(N\)o.*\]: ?\S*\s*$")  # aider echoing a typed answer
DROPPED_RE = re.compile(r"^> (?:Dropping|Removed) (.+?) from the chat\.?\s*$")
APPLIED_RE = re.compile(r"^> Applied edit to (.+?)\s*$")
YES = ("y", "yes", "a", "all")
HISTORY_RE = re.compile(r"--max-chat-history-tokens[ =](\d+)")
FAILED_RE = re.compile(r"^> # \d+ SEARCH/REPLACE blocks? failed to match")
MODEL_RE = re.compile(r"^> (?:Main model|Model|Models): (\S+)")
VERSION_RE = re.compile(r"^> Aider v(\S+)")
DEFAULT_HISTORY = ".aider.chat.history.md"
COST_RE = re.compile(r"^Cost: \$[\d.,]+ (?:message|request), \$[\d.,]+ session\.")  # a Tokens line's second line
FIRST_USAGE_LINE = (0, 46)  # the first version that prints "Tokens: N sent, M received"


def resolution(text: str | None) -> int:
    """How far a printed count may be from the true one: '11k' 500, '4.2k' 50, '5,359' or '21' 0."""
    if not text or not text.endswith("k"):
        return 0
    return 50 if "." in text else 500


def history_limit(version: str | None, command: str | None) -> int:
    """The chat history size (tokens) above which aider summarises it: the command line's setting, else the
    largest default of ``version`` (0.71 raised it from 2k to 8k)."""
    if command and (m := HISTORY_RE.search(command)):
        return int(m.group(1))
    try:
        major, minor = (int(p) for p in (version or "").split(".")[:2])
    except ValueError:
        return 8192
    return 2048 if (major, minor) < (0, 71) else 8192


def prints_usage(version: str | None, lines: list[str]) -> bool:
    """Whether the session's aider printed a Tokens line per request: 0.46 on; a session with no version banner
    prints it when it has one."""
    try:
        major, minor = (int(p) for p in (version or "").split(".")[:2])
    except ValueError:
        return any(line.startswith("> Tokens:") for line in lines)
    return (major, minor) >= FIRST_USAGE_LINE


def printed_cache_usage(model: str | None) -> bool:
    """Whether a token line without cache figures means the request read and wrote no cache. Aider prints the
    usage's ``cache_read_input_tokens``/``cache_creation_input_tokens`` (Anthropic's) and
    ``prompt_cache_hit_tokens`` (DeepSeek's) when they are not 0, never OpenAI's ``cached_tokens``; Anthropic caches
    only what a request marks (aider marks it with ``--cache-prompts``, from 0.51, the version that first prints
    the figures; earlier versions never do), so for a Claude model no figure means none. Other models' reads are
    unknown (None), whatever OpenAI cached."""
    name = (model or "").lower()
    return "claude" in name or name.startswith("anthropic/")


def run_id(ctx: ReadContext, n: int) -> str:
    """Session ``n``'s run id: after the file, or after the project folder when the file has aider's default name
    (``aider/args.py``: ``.aider.chat.history.md`` at the git root), which every project shares."""
    if ctx.path.name != DEFAULT_HISTORY:
        return ctx.run_id(n)
    folder = ctx.path.resolve().parent.name or "aider"
    return f"{os.fsencode(folder).decode('utf-8', 'backslashreplace')}-{ctx.file_hash[:8]}/{n}"


def _most_served_model(b: RunBuilder) -> None:
    """The run's model is the main model that served most of its requests (the first on a tie): ``/model`` switches
    it inside a session (``commands.py`` ``cmd_model`` raises ``SwitchCoder``; the new coder keeps the chat and
    announces its model again), and each request keeps its own in ``requests.model``."""
    served: dict[str, int] = {}
    for r in b.records:
        if isinstance(r, Request) and r.model:
            served[r.model] = served.get(r.model, 0) + 1
    if served:
        b.run = b.records[0] = replace(b.run, model=max(served, key=lambda m: served[m]))


def parse_count(text: str | None) -> int | None:
    """'1.2k' -> 1200, '5,359' -> 5359."""
    if not text:
        return None
    text = text.replace(",", "")
    return round(float(text[:-1]) * 1000) if text.endswith("k") else round(float(text))


def _is_path(line: str) -> bool:
    name = line.strip().strip("`*:")
    return bool(name) and " " not in name and len(name) < 300 and not name.startswith(("#", "<", "=", ">"))


class AiderReader:
    format = "aider"
    version = 3  # 2: replies are requests before 0.46; the unquoted Cost line of 0.51 on is no assistant text
    # 3: each request at the main model announced last (/model switches it); the run's model served most; a
    # history under the default name is named after its project folder

    def sniff(self, head: str, path: Path) -> bool:
        lines = head.lstrip("\ufeff\n").splitlines()
        # the session header, or (when a damaged byte hides it) the version banner aider prints right after it
        return any(HEADER_RE.match(line) for line in lines[:5]) or any(VERSION_RE.match(ln) for ln in lines[:40])

    def read(self, ctx: ReadContext) -> Iterator[Record]:
        lines, bad = _decoded_lines(read_log(ctx.path))
        yield from bad
        starts = [i for i, line in enumerate(lines) if HEADER_RE.match(line)] or [0]
        if starts[0] > 0 and any(line.strip() for line in lines[: starts[0]]):
            starts.insert(0, 0)
        for n, (begin, end) in enumerate(zip(starts, starts[1:] + [len(lines)], strict=True), start=1):
            yield from _Session(ctx, n, lines, begin, end).read()


def _decoded_lines(raw: bytes) -> tuple[list[str], list[BadRecord]]:
    """The file's lines as text (UTF-16 by its BOM, else UTF-8 without BOM); a line that is not valid UTF-8 is
    quarantined and read with U+FFFD in place of the bad bytes (so the markdown structure around it holds): one bad
    byte costs one line, not the file."""
    if raw[:2] in UTF16_BOMS:
        return raw.decode("utf-16", "replace").splitlines(), []
    lines, bad = [], []
    for n, line in enumerate(raw.removeprefix(UTF8_BOM).splitlines(), start=1):
        try:
            lines.append(line.decode("utf-8"))
        except UnicodeDecodeError as exc:
            bad.append(
                BadRecord(
                    n,
                    f"not UTF-8 ({exc.reason} at byte {exc.start}); read with U+FFFD in its place",
                    line.decode("utf-8", "replace"),
                )
            )
            lines.append(line.decode("utf-8", "replace"))
    return lines, bad


class _Session:
    def __init__(self, ctx: ReadContext, n: int, lines: list[str], begin: int, end: int) -> None:
        self.lines, self.begin, self.end = lines, begin, end
        header = HEADER_RE.match(lines[begin])
        model = version = command = None
        for line in lines[begin:end]:
            if not model and (m := MODEL_RE.match(line)):
                model = m.group(1)
            if not version and (m := VERSION_RE.match(line)):
                version = m.group(1)
            if not command and re.match(r"^> \S*aider(?:\s|$)", line):
                command = line[2:].strip()
        metadata: dict = {"aider_version": version} if version else {}
        metadata["history_limit"] = history_limit(version, command)
        self.usage_printed = prints_usage(version, lines[begin:end])
        if not self.usage_printed:
            metadata["usage_logged"] = False
        self.b = RunBuilder(
            Run(
                run_id=run_id(ctx, n),
                format="aider",
                source_path=str(ctx.path),
                model=model,
                harness="aider",
                started_at=header.group(1) if header else None,
                metadata=metadata,
            )
        )
        self.reads_printed = printed_cache_usage(model)
        self.model: str | None = None  # the main model the last banner announced (``/model`` switches it mid-session)
        self.chat: set[str] = set()  # files in the chat: their contents are sent, never logged
        self.last_console = ""
        self.cur: str | None = None
        self.in_block = False
        self.reflect = False  # after "> # 1 SEARCH/REPLACE block failed": aider's reply to the model, a user message
        self.buf: list[str] = []
        self.buf_line = 0
        self.after_tokens = False  # the line before was a Tokens line (its Cost line may follow unquoted)
        self.asked = False  # a user (or reflected) message since the last request: the next reply answers it

    def read(self) -> Iterator[Record]:
        start = self.begin + (1 if HEADER_RE.match(self.lines[self.begin]) else 0)
        for index in range(start, self.end):
            self.line(self.lines[index].rstrip(), index + 1)
        self.flush()
        _most_served_model(self.b)
        yield from self.b

    def switch(self, kind: str, line_no: int) -> None:
        if self.cur != kind:
            self.flush()
            self.cur, self.buf_line = kind, line_no

    def line(self, line: str, line_no: int) -> None:
        after_tokens, self.after_tokens = self.after_tokens, False
        if after_tokens and COST_RE.match(line):
            return  # the rest of the usage report, which the Tokens line's request already holds
        if self.in_block:  # inside SEARCH/REPLACE even ">>>>>>> REPLACE" belongs to the assistant
            self.buf.append(line)
            self.in_block = not line.startswith(">>>>>>> REPLACE")
        elif ANSWER_RE.match(line):
            self.switch("console", line_no)
            self.buf.append(line[5:])
        elif line.startswith("####"):
            self.switch("user", line_no)
            self.buf.append(line[5:] if line.startswith("#### ") else line[4:])
        elif line.startswith(">"):
            self.reflect = bool(FAILED_RE.match(line))
            if m := MODEL_RE.match(line):
                self.model = m.group(1)
                self.reads_printed = printed_cache_usage(self.model)
            if m := TOKENS_RE.match(line):
                if self.cur != "assistant":
                    self.flush()
                try:
                    sent, write, hit, received = (parse_count(g) for g in m.groups())
                except ValueError as exc:
                    self.b.records.append(
                        BadRecord(line_no, f"token counts not readable ({exc}); request kept without usage", line)
                    )
                    sent = write = hit = received = None
                if sent is not None and self.reads_printed:  # no cache figure printed: none was read or written
                    write, hit = write or 0, hit or 0
                uncached = sent - (write or 0) - (hit or 0) if sent is not None and (write or hit) else None
                if sent is not None and (half := resolution(m.group(1))):
                    self.b.run.metadata.setdefault("usage_resolution", []).append([self.b.step, half])
                self.b.request(
                    line=line_no,
                    model=self.model,
                    prompt_tokens=sent,
                    output_tokens=received,
                    cache_read=hit,
                    cache_write=write,
                    input_tokens=uncached,
                )
                self.flush()
                self.after_tokens = True
            elif line.startswith("> Tokens:"):  # a usage line in a form not known: still a request
                if self.cur != "assistant":
                    self.flush()
                reason = (
                    "aider usage line not in a known form ('> Tokens: N sent, M received'); request kept without usage"
                )
                self.b.records.append(BadRecord(line_no, reason, line))
                self.b.request(line=line_no, model=self.model)
                self.flush()
            elif (m := ADDED_RE.match(line)) and not OUTPUT_RE.match(m.group(1).strip()):
                self.flush()
                self.b.call("read", {"path": m.group(1).strip()}, line=line_no, text=line[2:])
                self.joins(m.group(1).strip(), line_no, "file added to the chat")
            else:
                self.switch("console", line_no)
                self.buf.append(line[2:] if line.startswith("> ") else line[1:])
                self.chat_change(line, line_no)
            self.last_console = line[2:].strip()
        elif not line.strip():
            if self.cur:
                self.buf.append("")
        else:
            self.switch("user" if self.reflect else "assistant", line_no)
            self.buf.append(line)
            self.in_block = self.cur == "assistant" and line.startswith("<<<<<<< SEARCH")

    def chat_change(self, line: str, line_no: int) -> None:
        """The files in the chat as a console line changes them (the line itself stays console text, so a damaged
        one changes nothing but its own block)."""
        if (m := CONFIRM_RE.match(line)) and (m.group(1).lower() or "yes" * ("[Yes]" in line)) in YES:
            if self.last_console:  # the file is named on the console line above the question
                self.joins(self.last_console, line_no, "file added to the chat")
        elif m := DROPPED_RE.match(line):
            self.chat.discard(m.group(1).strip())
            self.unlogged(line_no, "file dropped from the chat: its contents, never logged, leave the prompt")
        elif (m := APPLIED_RE.match(line)) and m.group(1) not in self.chat:
            self.joins(m.group(1), line_no, "file edited into the chat")  # aider adds what it creates or may edit

    def joins(self, path: str, line_no: int, how: str) -> None:
        """File ``path`` joins the chat: its contents are in every request from the next on."""
        if path not in self.chat:
            self.chat.add(path)
            self.unlogged(line_no, f"{how}: its contents are sent, never logged")

    def unlogged(self, line_no: int, reason: str) -> None:
        """Note content of unknown size entering or leaving the prompt at the next request (none before the
        first: it is part of the fitted prefix); ``varies``: it stays in the prompt and changes with every edit."""
        notes = self.b.run.metadata.setdefault("unlogged", [])
        if self.b.step and not any(n["step"] == self.b.step and n["reason"] == reason for n in notes):
            notes.append({"step": self.b.step, "line": line_no, "reason": reason, "varies": True})

    def flush(self) -> None:
        text = "\n".join(self.buf).strip()
        kind, self.cur, self.buf = self.cur, None, []
        if not text:
            return
        if kind == "user":
            self.b.new_turn()
            self.b.add("user_text", "user", text, line=self.buf_line)
            self.asked = True
        elif kind == "console":
            self.b.result(text, tool_name="aider", line=self.buf_line)
        elif kind == "assistant":
            if not self.usage_printed and self.asked:  # before 0.46: the reply is the request's only trace
                self.b.request(line=self.buf_line, model=self.model)
            self.asked = False
            self.assistant(text.split("\n"))

    def assistant(self, lines: list[str]) -> None:
        """Prose as assistant_text, each SEARCH/REPLACE block as an ``edit`` call on its file."""
        text: list[str] = []
        path: str | None = None
        i, n = 0, len(lines)
        while i < n:
            if not lines[i].startswith("<<<<<<< SEARCH"):
                text.append(lines[i])
                i += 1
                continue
            if text and text[-1].lstrip().startswith("```"):
                text.pop()
            if text and _is_path(text[-1]):
                path = text.pop().strip().strip("`*:")
            start = i
            search: list[str] = []
            replace: list[str] = []
            i += 1
            while i < n and not lines[i].startswith("======="):
                search.append(lines[i])
                i += 1
            i += 1
            while i < n and not lines[i].startswith(">>>>>>> REPLACE"):
                replace.append(lines[i])
                i += 1
            i += 1
            if i < n and lines[i].strip() == "```":
                i += 1
            if path is None:  # no file named: not an edit aider would apply, keep it as prose
                text.extend(lines[start:i])
                continue
            self.prose(text)
            text = []
            self.b.call(
                "edit", {"path": path, "search": "\n".join(search), "replace": "\n".join(replace)}, line=self.buf_line
            )
        self.prose(text)

    def prose(self, lines: list[str]) -> None:
        if text := "\n".join(lines).strip():
            self.b.add("assistant_text", "assistant", text, line=self.buf_line)


READER = AiderReader()
