"""Codex rollout lines as codex-rs 0.171.0 writes them (``RolloutLine``: timestamp, ordinal, type, payload and, for a
response item, history-only ``metadata`` beside the payload)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from replay.model import Item, Run
from replay.readers.base import ReadContext
from replay.readers.codex_rollout import READER as ROLLOUT

# the session_meta line every rollout here opens with
META = ("session_meta", {"id": "s", "cli_version": "0.171.0", "base_instructions": {"text": "You are Codex"}}, None)


def rollout_171(tmp_path: Path, lines: list[tuple[str, dict, dict | None]]) -> Path:
    """A rollout file: one line per (type, payload, metadata), numbered by ``ordinal``."""
    path = tmp_path / "rollout-2026-11-20T00-00-00-019a.jsonl"
    rows = []
    for k, (kind, payload, metadata) in enumerate(lines):
        row: dict[str, Any] = {"timestamp": f"2026-11-20T00:00:{k:02d}.000Z", "ordinal": k, "type": kind}
        row["payload"] = payload
        if metadata is not None:
            row["metadata"] = metadata
        rows.append(json.dumps(row))
    path.write_text("\n".join(rows) + "\n")
    return path


def token_count(total: int, prompt: int, output: int = 10) -> tuple[str, dict, None]:
    last = {
        "input_tokens": prompt,
        "cached_input_tokens": 0,
        "output_tokens": output,
        "reasoning_output_tokens": 0,
        "total_tokens": prompt + output,
    }
    info = {"total_token_usage": {**last, "total_tokens": total}, "last_token_usage": last}
    return "event_msg", {"type": "token_count", "info": {**info, "model_context_window": 258_400}}, None


def items(path: Path) -> list[Item]:
    return [r for r in ROLLOUT.read(ReadContext(path=path, file_hash="0" * 32)) if isinstance(r, Item)]


def test_tool_output_cut_to_its_own_fallback_token_limit(tmp_path: Path) -> None:
    """codex-rs 0.171 records a tool output into history cut to ``metadata.fallback_token_limit_override`` tokens
    (allowance included) when the line sets one, else to the turn's policy x 1.2. Read with the turn's policy only,
    an output whose tool allows more was counted cut short."""
    long = "x" * 30 + "y" * 40 + "z" * 30  # 100 bytes; the turn's 10 x 1.2 = 12 tokens keeps 48 of them
    path = rollout_171(
        tmp_path,
        [
            META,
            ("turn_context", {"model": "gpt-6-sol", "truncation_policy": {"mode": "tokens", "limit": 10}}, None),
            (
                "response_item",
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
                None,
            ),
            (
                "response_item",
                {"type": "function_call", "name": "mcp__db__dump", "arguments": "{}", "call_id": "c1"},
                None,
            ),
            ("response_item", {"type": "custom_tool_call", "name": "exec", "input": "x", "call_id": "c2"}, None),
            ("response_item", {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c3"}, None),
            token_count(100, 90),
            (
                "response_item",
                {"type": "function_call_output", "call_id": "c1", "output": long},
                {"client_authored": False, "fallback_token_limit_override": 20},  # 80 bytes kept
            ),
            (
                "response_item",
                {"type": "custom_tool_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": long}]},
                {"client_authored": False, "fallback_token_limit_override": 12_000},
            ),
            (
                "response_item",
                {"type": "function_call_output", "call_id": "c3", "output": long},
                {"client_authored": False},
            ),
            token_count(300, 190),
        ],
    )
    results = [i.text for i in items(path) if i.kind == "tool_result"]
    assert results[0] == "x" * 30 + "y" * 10 + "…5 tokens truncated…" + "y" * 10 + "z" * 30
    assert results[1] == long, "under its own 12,000-token budget: sent whole"
    assert results[2] == "x" * 24 + "…13 tokens truncated…" + "z" * 24, "no override: the turn's policy x 1.2"


def test_harness_authored_configuration_update_is_sent(tmp_path: Path) -> None:
    """codex-rs 0.171 keeps a ``configuration_update`` item (a mid-session reasoning-effort change) in the history it
    sends when the line's metadata marks it harness-authored, and drops one without the mark."""
    update = {"type": "configuration_update", "reasoning": {"effort": "high"}}
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go on"}]}
    path = rollout_171(
        tmp_path,
        [
            META,
            ("turn_context", {"model": "gpt-6-sol"}, None),
            ("response_item", update, {"client_authored": False, "harness_authored_configuration": True}),
            ("response_item", {**update, "reasoning": {"effort": "low"}}, {"client_authored": False}),
            ("response_item", user, None),
            token_count(100, 90),
        ],
    )
    sent = [(i.kind, i.text) for i in items(path) if i.kind != "system" or i.text != "You are Codex"]
    assert sent[:2] == [("system", '{"reasoning": {"effort": "high"}}'), ("user_text", "go on")]


def usage_record(response_id: str, prompt: int, cached: int, written: int, output: int) -> tuple[str, dict, None]:
    """A ``token_usage_record`` line: one response's usage beside the turn's and the thread's running totals."""
    usage = {
        "input_tokens": prompt,
        "cached_input_tokens": cached,
        "cache_write_input_tokens": written,
        "output_tokens": output,
        "reasoning_output_tokens": 0,
        "total_tokens": prompt + output,
    }
    ids = {"thread_id": "t", "turn_id": "u", "session_id": "s", "root_turn_id": "u", "response_id": response_id}
    return "token_usage_record", {**ids, "usage": usage, "turn_token_usage": usage, "thread_token_usage": usage}, None


def test_remote_compaction_usage_from_its_token_usage_record(tmp_path: Path) -> None:
    """Remote compaction v2 persists its call's usage only as a ``token_usage_record`` (no token_count) and names
    the response on the ``compacted`` line; a later one may carry the record itself (``latest_token_usage_record``).
    Read without them, the compactions had no usage and the bill left their calls out."""
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go on"}]}
    summary = {"type": "context_compaction", "encrypted_content": "gAAAA"}
    _, embedded, _ = usage_record("resp_c2", 7_000, 6_000, 0, 200)
    path = rollout_171(
        tmp_path,
        [
            META,
            ("turn_context", {"model": "gpt-6-sol"}, None),
            ("response_item", user, None),
            usage_record("resp_a", 5_000, 0, 0, 100),
            token_count(5_100, 5_000, 100),
            usage_record("resp_c1", 5_200, 4_000, 700, 300),  # the compaction's call: no token_count follows
            (
                "compacted",
                {
                    "message": "",
                    "replacement_history": [user, summary],
                    "window_number": 2,
                    "compaction_response_id": "resp_c1",
                },
                None,
            ),
            ("response_item", user, None),
            usage_record("resp_b", 800, 0, 0, 50),
            token_count(5_950, 800, 50),
            ("response_item", {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"}, None),
            ("response_item", {"type": "function_call_output", "call_id": "c1", "output": "ok"}, None),
            (
                "compacted",
                {
                    "message": "",
                    "replacement_history": [user, summary],
                    "window_number": 3,
                    "compaction_response_id": "resp_c2",
                    "latest_token_usage_record": embedded,
                },
                None,
            ),
            ("response_item", user, None),
            token_count(6_900, 900, 50),
        ],
    )
    (run,) = [r for r in ROLLOUT.read(ReadContext(path=path, file_hash="0" * 32)) if isinstance(r, Run)]
    events = run.metadata["context_events"]
    assert [e.get("usage") for e in events] == [
        {"input": 500, "cache_read": 4_000, "cache_write": 700, "output": 300, "prompt": 5_200},
        {"input": 1_000, "cache_read": 6_000, "cache_write": 0, "output": 200, "prompt": 7_000},
    ]


def test_summariser_token_count_keeps_its_cache_writes(tmp_path: Path) -> None:
    """A local compaction's call logs a token_count whose ``cache_write_input_tokens`` are inside its input: the
    event's usage keeps them (the uncached input already leaves them out, so dropping them lost their bill)."""
    last = {
        "input_tokens": 9_000,
        "cached_input_tokens": 6_000,
        "cache_write_input_tokens": 2_000,
        "output_tokens": 400,
        "reasoning_output_tokens": 0,
        "total_tokens": 9_400,
    }
    info = {"total_token_usage": {**last, "total_tokens": 19_400}, "last_token_usage": last}
    path = rollout_171(
        tmp_path,
        [
            META,
            (
                "response_item",
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "x"}]},
                None,
            ),
            token_count(10_000, 9_000),
            ("event_msg", {"type": "token_count", "info": info}, None),
            ("compacted", {"message": "SUMMARY", "replacement_history": []}, None),
        ],
    )
    (run,) = [r for r in ROLLOUT.read(ReadContext(path=path, file_hash="0" * 32)) if isinstance(r, Run)]
    (event,) = run.metadata["context_events"]
    assert event["usage"] == {"input": 1_000, "cache_read": 6_000, "cache_write": 2_000, "output": 400, "prompt": 9_000}
