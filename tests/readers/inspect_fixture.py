"""Hand-made inspect_ai eval logs in the shape inspect_ai 0.3.285's writer gives them (no corpus file copied).

What the writer does, as read in its source (``log/_condense.py``, ``event/_pool.py``, ``log/_recorders/eval.py``,
``event/_compaction.py``, ``model/_compaction/``):
- fields that are None are left out (``exclude_none``); ``EvalSpec`` starts with ``eval_set_id`` in an eval set;
- every model event's ``input`` becomes ``[]`` plus ``input_refs``, ``[start, end)`` ranges into the sample's
  ``events_data.messages``; a message goes in the pool once per content, its id left out of that comparison, so
  two messages that say the same share the first one's entry (and id); the provider request's messages likewise
  go to ``events_data.calls`` (``call.call_refs``, ``call.call_key``);
- a compaction: the summary strategy's own model call (the history so far plus a summarisation prompt), then a
  ``compaction`` event (type, tokens_before/after, source, metadata.strategy/trigger), then requests that send the
  system and input messages, a user message marked ``metadata.summary`` quoting the completion, and what follows;
- ``.eval``: a zip of ``_journal/start.json``, ``samples/<id>_epoch_<n>.json``, ``summaries.json`` and
  ``header.json`` (the header without samples), members zstd-compressed (method 93) from 0.3.208.
"""

from __future__ import annotations

import json
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any

import zstandard

VERSION = "0.3.285"
TS = "2026-11-02T09:{:02d}:00+00:00"


def system(text: str) -> dict:
    return {"id": "m-sys", "content": text, "role": "system"}


def user(mid: str, text: str, source: str | None = None, **extra: Any) -> dict:
    return {"id": mid, "content": text, **({"source": source} if source else {}), "role": "user", **extra}


def assistant(mid: str, text: str, call: tuple[str, str, dict] | None = None) -> dict:
    m: dict = {"id": mid, "content": text, "source": "generate", "role": "assistant", "model": "claude-sonnet-4-5"}
    if call:
        m["tool_calls"] = [{"id": call[0], "function": call[1], "arguments": call[2], "type": "function"}]
    return m


def tool(mid: str, call_id: str, text: str) -> dict:
    return {"id": mid, "content": text, "role": "tool", "tool_call_id": call_id, "function": "bash"}


TOOLS = [
    {
        "name": "bash",
        "description": "Run a command.",
        "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]},
    }
]


def anthropic_usage(read: int, write: int, fresh: int, out: int, context: int | None = None) -> dict:
    """ModelOutput's usage and context size as inspect_ai's Anthropic provider fills them (0.3.184 on)."""
    usage = {
        "input_tokens": fresh,
        "output_tokens": out,
        "total_tokens": fresh + read + write + out,
        "input_tokens_cache_write": write,
        "input_tokens_cache_read": read,
    }
    return {"usage": usage, "input_context_tokens": fresh + read + write if context is None else context}


def model_event(n: int, prompt: list[dict], reply: dict, usage: dict, model: str = "anthropic/claude-sonnet-4-5"):
    """A ModelEvent before condensing (the writer pools ``input`` and the request's ``messages``)."""
    return {
        "timestamp": TS.format(n),
        "working_start": float(n),
        "event": "model",
        "model": model,
        "input": prompt,
        "tools": TOOLS,
        "tool_choice": "auto",
        "config": {},
        "output": {
            "model": model.split("/", 1)[1],
            "choices": [{"message": reply, "stop_reason": "tool_calls" if reply.get("tool_calls") else "stop"}],
            "completion": reply["content"],
            **usage,
            "time": 1.5,
        },
        "call": {"request": {"model": model.split("/", 1)[1], "messages": [{"role": m["role"]} for m in prompt]}},
        "completed": TS.format(n),
        "working_time": 1.5,
    }


def compaction_event(n: int, kind: str, before: int, after: int, strategy: str, trigger: str = "threshold") -> dict:
    return {
        "timestamp": TS.format(n),
        "working_start": float(n),
        "event": "compaction",
        "type": kind,
        "tokens_before": before,
        "tokens_after": after,
        "source": "inspect",
        "metadata": {"strategy": strategy, "messages_before": 6, "messages_after": 3, "trigger": trigger},
    }


def condense(events: list[dict]) -> tuple[list[dict], dict]:
    """The writer's pooling: inputs and request messages to pools, by content (ids left out for messages)."""
    pool: list[dict] = []
    index: dict[str, int] = {}
    calls: list[Any] = []
    call_index: dict[str, int] = {}
    out = []
    for e in events:
        if e.get("event") != "model":
            out.append(e)
            continue
        refs = []
        for m in e["input"]:
            key = json.dumps({k: v for k, v in m.items() if k != "id"})
            if key not in index:
                index[key] = len(pool)
                pool.append(m)
            refs.append(index[key])
        crefs = []
        for c in e["call"]["request"]["messages"]:
            key = json.dumps(c, sort_keys=True)
            if key not in call_index:
                call_index[key] = len(calls)
                calls.append(c)
            crefs.append(call_index[key])
        request = {k: v for k, v in e["call"]["request"].items() if k != "messages"}
        call = {"request": request, "call_refs": ranges(crefs), "call_key": "messages"}
        out.append({**e, "input": [], "input_refs": ranges(refs), "call": call})
    return out, {"messages": pool, "calls": calls}


def ranges(indices: list[int]) -> list[list[int]]:
    out: list[list[int]] = []
    for i in indices:
        if out and out[-1][1] == i:
            out[-1][1] = i + 1
        else:
            out.append([i, i + 1])
    return out


SYS = system("You are a careful engineer working in a repository.")
TASK = user("m-task", "Make the test suite pass.", source="input")
A1 = assistant("m-a1", "Listing files.", ("c1", "bash", {"cmd": "ls"}))
T1 = tool("m-t1", "c1", "a.py\nb.py\ntest_a.py\n" * 40)
A2 = assistant("m-a2", "Reading a.py.", ("c2", "bash", {"cmd": "cat a.py"}))
T2 = tool("m-t2", "c2", "def f(x):\n    return x + 1\n" * 60)
PROMPT = user("m-ask", "Write a summary of the conversation so far for a colleague who will continue it.")
COMPLETION = "<summary>The task: make the tests pass. Files a.py, b.py, test_a.py; a.py defines f(x) = x + 1.</summary>"
SUMMARY = user("m-sum", f"Summary of the work so far:\n\n{COMPLETION}\n\nContinue.", metadata={"summary": True})
A3 = assistant("m-a3", "Running the tests.", ("c3", "bash", {"cmd": "pytest -q"}))
T3 = tool("m-t3", "c3", "1 failed, 3 passed")
A4 = assistant("m-a4", "The failure is in test_a.py; done for now.")
AGAIN1 = user("m-again-1", "Please continue.")
A5 = assistant("m-a5", "Looking again at test_a.py.")
AGAIN2 = user("m-again-2", "Please continue.")  # the same words: pooled with AGAIN1, its id then AGAIN1's
A6 = assistant("m-a6", "All tests pass now.")


def summary_sample() -> dict:
    """An agent whose history the summary strategy compacts before its third request (events as logged)."""
    u = anthropic_usage
    events = [
        model_event(1, [SYS, TASK], A1, u(0, 900, 3, 20)),
        model_event(2, [SYS, TASK, A1, T1], A2, u(900, 600, 3, 25)),
        model_event(3, [SYS, TASK, A1, T1, A2, T2, PROMPT], assistant("m-s", COMPLETION), u(1500, 900, 3, 60)),
        compaction_event(4, "summary", 2400, 400, "CompactionSummary"),
        model_event(5, [SYS, TASK, SUMMARY], A3, u(0, 450, 3, 22)),
        model_event(6, [SYS, TASK, SUMMARY, A3, T3], A4, u(450, 40, 503, 18, context=493)),
        model_event(7, [SYS, TASK, SUMMARY, A3, T3, A4, AGAIN1], A5, u(490, 30, 3, 12)),
        model_event(8, [SYS, TASK, SUMMARY, A3, T3, A4, AGAIN1, A5, AGAIN2], A6, u(520, 20, 3, 8)),
    ]
    # the 6th call made two requests (Anthropic's usage iterations): its input_tokens sum both requests' full-rate
    # input (3 + 500), input_context_tokens is the first request's size
    history = [SYS, TASK, A1, T1, A2, T2, SUMMARY, A3, T3, A4, AGAIN1, A5, AGAIN2, A6]
    return sample(1, events, history)


def edit_sample() -> dict:
    """The edit strategy clears the first tool result (a copy with a new id) before the third request."""
    cleared = {**T1, "id": "m-t1-cleared", "content": "(tool result cleared)"}
    u = anthropic_usage
    events = [
        model_event(1, [SYS, TASK], A1, u(0, 900, 3, 20)),
        model_event(2, [SYS, TASK, A1, T1], A2, u(900, 600, 3, 25)),
        compaction_event(3, "edit", 2400, 1100, "CompactionEdit"),
        model_event(4, [SYS, TASK, A1, cleared, A2, T2], A3, u(0, 1110, 3, 22)),
    ]
    return sample(2, events, [SYS, TASK, A1, T1, A2, T2, A3])


def sample(sid: int, events: list[dict], history: list[dict]) -> dict:
    condensed, pools = condense(events)
    return {
        "id": sid,
        "epoch": 1,
        "input": "Make the test suite pass.",
        "target": "",
        "messages": history,
        "output": {"model": "claude-sonnet-4-5", "choices": []},
        "scores": {},
        "metadata": {},
        "store": {},
        "events": condensed,
        "model_usage": {},
        "role_usage": {},
        "uuid": f"uuid-{sid}",
        "attachments": {},
        "events_data": pools,
    }


def eval_spec(model: str = "anthropic/claude-sonnet-4-5", version: str = VERSION) -> dict:
    return {
        "eval_set_id": "set-1",
        "eval_id": "ev-1",
        "run_id": "run-1",
        "created": "2026-11-02T09:00:00+00:00",
        "task": "fix_tests",
        "task_id": "t-1",
        "task_version": 0,
        "dataset": {"samples": 2},
        "model": model,
        "config": {},
        "packages": {"inspect_ai": version},
    }


def log(samples: list[dict], plan: dict | None = None, **spec: Any) -> dict:
    return {
        "version": 2,
        "status": "success",
        "eval": eval_spec(**spec),
        "plan": plan or {},
        "stats": {},
        "samples": samples,
    }


def write_json(path: Path, samples: list[dict], plan: dict | None = None, **spec: Any) -> Path:
    path.write_text(json.dumps(log(samples, plan, **spec), indent=2))
    return path


def write_eval(path: Path, samples: list[dict], zstd: bool = True, plan: dict | None = None, **spec: Any) -> Path:
    """The ``.eval`` archive: start journal, samples, summaries, header (as the recorder writes them in turn)."""
    doc = log(samples, plan, **spec)
    header = {k: v for k, v in doc.items() if k != "samples"}
    members = [("_journal/start.json", {"version": 2, "eval": doc["eval"], "plan": {}})]
    members += [(f"samples/{s['id']}_epoch_{s['epoch']}.json", s) for s in samples]
    members += [("summaries.json", [{"id": s["id"], "epoch": s["epoch"]} for s in samples]), ("header.json", header)]
    if not zstd:
        with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for name, value in members:
                zf.writestr(name, json.dumps(value))
        return path
    path.write_bytes(_zstd_zip([(name, json.dumps(value).encode()) for name, value in members]))
    return path


def _zstd_zip(members: list[tuple[str, bytes]]) -> bytes:
    """A zip whose members are zstd-compressed (method 93), as Python 3.14's zipfile or zipfile-zstd write it."""
    out, central = bytearray(), bytearray()
    for name, data in members:
        packed = zstandard.ZstdCompressor(level=3).compress(data)
        crc, fname = zlib.crc32(data), name.encode()
        offset = len(out)
        out += struct.pack(
            "<4sHHHHHIIIHH", b"PK\x03\x04", 63, 0, 93, 0, 0x5A21, crc, len(packed), len(data), len(fname), 0
        )
        out += fname + packed
        central += struct.pack(
            "<4sHHHHHHIIIHHHHHII",
            b"PK\x01\x02",
            63,
            63,
            0,
            93,
            0,
            0x5A21,
            crc,
            len(packed),
            len(data),
            len(fname),
            0,
            0,
            0,
            0,
            0,
            offset,
        )
        central += fname
    end = struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(members), len(members), len(central), len(out), 0)
    return bytes(out + central + end)


def google_sample(folded: bool, sid: int = 1) -> dict:
    """Two Gemini calls with thinking, usage as inspect_ai's Google provider fills it: before 0.3.245 output_tokens
    the candidates only (``folded`` False), from it candidates and thoughts; reasoning_tokens the thoughts,
    total_tokens the provider's total (both counted)."""
    model = "google/gemini-2.5-pro"
    a1 = {**A1, "model": "gemini-2.5-pro"}
    a2 = {**A2, "model": "gemini-2.5-pro", "tool_calls": []}

    def usage(prompt: int, cached: int, candidates: int, thoughts: int) -> dict:
        return {
            "usage": {
                "input_tokens": prompt - cached,
                "output_tokens": candidates + (thoughts if folded else 0),
                "total_tokens": prompt + candidates + thoughts,
                "input_tokens_cache_read": cached or None,
                "reasoning_tokens": thoughts,
            }
        }

    events = [
        model_event(1, [SYS, TASK], a1, usage(1200, 0, 30, 400), model),
        model_event(2, [SYS, TASK, a1, T1], a2, usage(1500, 1024, 20, 250), model),
    ]
    for e in events:
        e["output"]["usage"] = {k: v for k, v in e["output"]["usage"].items() if v is not None}
    return sample(sid, events, [SYS, TASK, a1, T1, a2])


def resolve(refs: list[list[int]], pool: list[dict]) -> list[dict]:
    return [m for start, end in refs for m in pool[start:end]]


def long_agent(count: Any, n: int = 24, compact_at: int = 14) -> dict:
    """A gpt-4o agent of ``n`` requests that the summary strategy compacts before request ``compact_at``; each
    request's recorded prompt is what it sent, counted with ``count`` (the server's tokenizer): 4 tokens a message
    and 3 a tool call over their text, 3 for the reply, and the tools as OpenAI declares them. Cache reads: the
    previous prompt in 128-token blocks, from 1,024 tokens."""
    from replay.readers.openai_tools import render_functions

    tools = 3 + count(render_functions(TOOLS))

    def size(m: dict) -> int:
        calls = m.get("tool_calls") or []
        return count(m["content"]) + 4 + sum(count(c["function"] + json.dumps(c["arguments"])) + 3 for c in calls)

    def usage(prompt: int, prev: int, out: int) -> dict:
        cached = min(prev, prompt) // 128 * 128 if prev >= 1024 else 0
        u = {"input_tokens": prompt - cached, "output_tokens": out, "total_tokens": prompt + out}
        return {"usage": {**u, "input_tokens_cache_read": cached}, "input_context_tokens": prompt}

    sent, history, events, prev = [SYS, TASK], [SYS, TASK], [], 0
    for i in range(n):
        if i == compact_at:
            ask = user("m-ask", "Summarise the conversation so far.")
            done = ", ".join(f"f{j}.py" for j in range(i))
            completion = f"<summary>Worked through {i} steps; files read: {done}.</summary>"
            before = tools + sum(size(m) for m in [*sent, ask])
            events.append(model_event(i, [*sent, ask], assistant("m-s", completion), usage(before, prev, 120)))
            events.append(compaction_event(i, "summary", before, 300, "CompactionSummary"))
            summary = user("m-sum", f"Summary so far:\n\n{completion}\n\nContinue.", metadata={"summary": True})
            history.append(summary)
            sent = [SYS, TASK, summary]
        a = {**assistant(f"a{i}", f"Step {i}: reading f{i}.py.", (f"c{i}", "bash", {"cmd": f"cat f{i}.py"}))}
        prompt = tools + sum(size(m) for m in sent)
        events.append(model_event(i % 60, list(sent), a, usage(prompt, prev, 40), "openai/gpt-4o"))
        prev = prompt
        result = tool(f"t{i}", f"c{i}", "".join(f"def fn_{i}_{j}(x):\n    return x * {j} + {i}\n" for j in range(40)))
        history += [a, result]
        sent = [*sent, a, result]
    for e in events:
        if e["event"] == "model":
            e["model"], e["output"]["model"] = "openai/gpt-4o", "gpt-4o"
    return sample(1, events, history)


SUMMARY_PROMPT = "Summarise the conversation so far; keep file names and decisions."


def react_plan(compaction: Any) -> dict:
    """The plan of a task whose solver is ``react(compaction=...)``: one step with every argument, defaults
    included (``EvalPlanStep.params``); ``compaction`` as the strategy's ``_repr_params_()`` gives it (0.3.209 on)."""
    params = {"name": None, "description": None, "prompt": None, "tools": [], "model": None, "attempts": 1}
    return {
        "name": "plan",
        "steps": [{"solver": "react", "params": {**params, "compaction": compaction}}],
        "config": {},
    }


def summary_params(threshold: float | int = 0.9) -> dict:
    """CompactionSummary(threshold=...)._repr_params_(): type, threshold, memory, model, instructions, prompt."""
    return {
        "type": "summary",
        "threshold": threshold,
        "memory": True,
        "model": None,
        "instructions": None,
        "prompt": SUMMARY_PROMPT,
    }


def threshold_agent(
    count: Any,
    limit: int,
    n: int = 30,
    native: bool = False,
    model: str = "openai/gpt-4o",
    preserve: float | None = None,
) -> dict:
    """A gpt-4o react() agent of ``n`` requests under CompactionSummary as inspect_ai runs it: before each call the
    last call's input_context_tokens plus the messages since (a fresh count after a compaction) against ``limit``;
    past it the summariser is called (system, input and history since the last summary, plus the prompt), a
    compaction event logged, and the next call sends the system and input messages and the summary. The task
    message is long (the issue text), so a compaction that dropped it would leave a far smaller prompt. Sizes are
    counted with ``count`` as OpenAI counts a chat request (4 a message, 3 a tool call, 3 for the reply).
    ``native``: CompactionNative on Anthropic (no summariser call logged; the next call sends the system messages,
    the provider's compaction block and "Please continue working.", as the provider's compact() returns them).
    ``preserve``: CompactionTrim (no summary: the newest share of the messages after the system and input ones
    stays, a tool result without its call dropped, again while still past the limit)."""
    from replay.readers.openai_tools import render_functions

    tools = 3 + count(render_functions(TOOLS))
    issue = user(
        "m-issue",
        "Fix the failing tests. " + " ".join(f"Traceback line {j}: x = f({j})" for j in range(150)),
        source="input",
    )

    def size(m: dict) -> int:
        calls = m.get("tool_calls") or []
        content = m["content"]
        if isinstance(content, list):  # a compaction block: its summary text
            content = "".join(p["data"]["compaction_metadata"]["content"] for p in content)
        return count(content) + 4 + sum(count(c["function"] + json.dumps(c["arguments"])) + 3 for c in calls)

    def usage(prompt: int, prev: int, out: int) -> dict:
        cached = min(prev, prompt) // 128 * 128 if prev >= 1024 else 0
        u = {"input_tokens": prompt - cached, "output_tokens": out, "total_tokens": prompt + out}
        return {"usage": {**u, "input_tokens_cache_read": cached}, "input_context_tokens": prompt}

    sent, history, events, prev = [SYS, issue], [SYS, issue], [], 0
    baseline: tuple[int, int] | None = None  # (tokens of the last call, messages it sent)
    compactions = 0
    for i in range(n):
        counted = baseline[0] + sum(size(m) for m in sent[baseline[1] :]) if baseline else tools + sum(map(size, sent))
        if counted > limit and preserve is not None:
            conv, total = sent[2:], counted
            for _ in range(4):  # the first trim and up to three more while past the limit and shrinking
                kept, calls = [], set()
                for m in conv[int(len(conv) * (1 - preserve)) :]:
                    if m["role"] == "assistant":
                        calls = {c["id"] for c in m.get("tool_calls") or []}
                    if m["role"] != "tool" or m["tool_call_id"] in calls:
                        kept.append(m)
                shrunk = tools + sum(map(size, [SYS, issue, *kept]))
                progress, conv, total = shrunk < total, kept, shrunk
                if total <= limit or not progress:
                    break
            sent = [SYS, issue, *conv]
            events.append(compaction_event(i, "trim", counted, total, "CompactionTrim"))
            baseline = None
        elif counted > limit:
            done = ", ".join(f"f{j}.py" for j in range(i))
            completion = f"<summary>Worked through {i} steps; files read: {done}.</summary>"
            if native:
                block = {"type": "anthropic_compact", "content": completion}
                summary = assistant(f"m-native{compactions}", "")
                summary["content"] = [{"type": "data", "data": {"compaction_metadata": block}}]
                sent = [SYS, summary, user(f"m-go{compactions}", "Please continue working.")]
            else:
                ask = user(f"m-ask{compactions}", SUMMARY_PROMPT)
                before = tools + sum(size(m) for m in [*sent, ask])
                reply = assistant(f"m-s{compactions}", completion)
                events.append(model_event(i, [*sent, ask], reply, usage(before, prev, 120)))
                summary = user(
                    f"m-sum{compactions}", f"Summary so far:\n\n{completion}\n\nContinue.", metadata={"summary": True}
                )
                sent = [SYS, issue, summary]
            after = tools + sum(map(size, sent))
            strategy = "CompactionNative" if native else "CompactionSummary"
            events.append(compaction_event(i, "summary", counted, after, strategy))
            history += sent[1:] if native else [summary]
            baseline, compactions = None, compactions + 1
        a = assistant(f"a{i}", f"Step {i}: reading f{i}.py.", (f"c{i}", "bash", {"cmd": f"cat f{i}.py"}))
        prompt = tools + sum(size(m) for m in sent)
        events.append(model_event(i % 60, list(sent), a, usage(prompt, prev, 40), model))
        prev, baseline = prompt, (prompt, len(sent))
        result = tool(f"t{i}", f"c{i}", "".join(f"def fn_{i}_{j}(x):\n    return x * {j} + {i}\n" for j in range(40)))
        history += [a, result]
        sent = [*sent, a, result]
    for e in events:
        if e["event"] == "model":
            e["model"], e["output"]["model"] = model, model.split("/", 1)[1]
    return sample(1, events, history)
