"""Small mini-swe-agent trajectories in the shapes its writers produce (2.4.6 and 1.17.5 sources read; the
numbers and texts are made up).

2.x ``DefaultAgent.serialize``: ``{"info": {"model_stats", "config", "mini_version", "exit_status", "submission"},
"messages", "trajectory_format": "mini-swe-agent-1.1"}``; an assistant message is the provider's message with
``extra`` = {actions, response, cost, timestamp}; a rejected response (``FormatError``) is a user message with
``extra.interrupt_type`` and, from 2.3.1, the call's ``response`` (2.4.6: also ``cost``). Responses API models keep
the response object as the message and results as ``function_call_output`` items. 1.x messages carry
``timestamp`` beside role and content, and the format is ``mini-swe-agent-1``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

T0 = 1_760_000_000.0
SYSTEM = "You are a helpful assistant that can interact with a computer shell."
TASK = "Fix the failing test in tests/test_parse.py."


def _info(version: str, model_type: str, api_calls: int, cost: float) -> dict[str, Any]:
    return {
        "model_stats": {"instance_cost": cost, "api_calls": api_calls},
        "config": {
            "agent": {"system_template": SYSTEM, "instance_template": "{{task}}", "step_limit": 0, "cost_limit": 3.0},
            "agent_type": "minisweagent.agents.default.DefaultAgent",
            "model": {"model_name": "anthropic/claude-sonnet-4-5-20250929", "model_kwargs": {}},
            "model_type": model_type,
        },
        "mini_version": version,
        "exit_status": "Submitted",
        "submission": "diff --git a/x b/x\n",
    }


def chat_usage(prompt: int, read: int, write: int, output: int) -> dict[str, Any]:
    """LiteLLM's Chat Completions usage for an Anthropic model, as ``ModelResponse.model_dump`` writes it."""
    return {
        "completion_tokens": output,
        "prompt_tokens": prompt,
        "total_tokens": prompt + output,
        "completion_tokens_details": None,
        "prompt_tokens_details": {
            "audio_tokens": None,
            "cached_tokens": read,
            "text_tokens": None,
            "image_tokens": None,
            "cache_creation_tokens": write,
        },
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": read,
    }


def openrouter_usage(prompt: int, read: int, write: int, output: int) -> dict[str, Any]:
    """OpenRouter's usage accounting (``OpenRouterModel`` keeps the response JSON as it came)."""
    return {
        "prompt_tokens": prompt,
        "completion_tokens": output,
        "total_tokens": prompt + output,
        "cost": 0.01,
        "prompt_tokens_details": {"cached_tokens": read, "cache_write_tokens": write, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


def _chat_response(n: int, content: str, calls: list[dict], usage: dict) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{n}",
        "created": int(T0) + n,
        "model": "claude-sonnet-4-5-20250929",
        "object": "chat.completion",
        "system_fingerprint": None,
        "choices": [
            {
                "finish_reason": "tool_calls" if calls else "stop",
                "index": 0,
                "message": {
                    "content": content,
                    "role": "assistant",
                    "tool_calls": calls or None,
                    "function_call": None,
                },
            }
        ],
        "usage": usage,
    }


def _tool_call(call_id: str, command: str) -> dict[str, Any]:
    return {
        "function": {"arguments": json.dumps({"command": command}), "name": "bash"},
        "id": call_id,
        "type": "function",
    }


def _observation(call_id: str, output: str, at: float) -> dict[str, Any]:
    return {
        "content": f"<returncode>0</returncode>\n<output>\n{output}</output>",
        "extra": {"raw_output": output, "returncode": 0, "timestamp": at, "exception_info": None},
        "tool_call_id": call_id,
        "role": "tool",
    }


def toolcall_v2(path: Path, usages: list[dict[str, Any]], error_usage: dict[str, Any] | None) -> Path:
    """A 2.4.6 ``LitellmModel`` run: call 1 (ls), a rejected call (no tool call; its response kept when
    ``error_usage`` is given, else as 2.0-2.3.0 wrote it), call 2 (cat), call 3 (submit)."""
    commands = ["ls", "cat tests/test_parse.py", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"]
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]
    for n, (command, usage) in enumerate(zip(commands, usages, strict=True)):
        call_id = f"toolu_0{n + 1}"
        call = _tool_call(call_id, command)
        response = _chat_response(n, f"Step {n + 1}.", [call], usage)
        message = dict(response["choices"][0]["message"])
        message["extra"] = {
            "actions": [{"command": command, "tool_call_id": call_id}],
            "response": response,
            "cost": 0.01,
            "timestamp": T0 + 10 * n,
        }
        messages.append(message)
        if n < len(commands) - 1:
            messages.append(_observation(call_id, f"output of {command}\n", T0 + 10 * n + 1))
        if n == 0:
            error: dict[str, Any] = {
                "role": "user",
                "content": "No tool calls found in the response. Every response MUST include at least one tool call.",
                "extra": {"interrupt_type": "FormatError"},
            }
            if error_usage is not None:
                error["extra"] |= {"cost": 0.004, "response": _chat_response(9, "I think", [], error_usage)}
            messages.append(error)
    messages.append({"role": "exit", "content": "", "extra": {"exit_status": "Submitted", "submission": ""}})
    doc = {
        "info": _info("2.4.6", "minisweagent.models.litellm_model.LitellmModel", 4, 0.034),
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1.1",
    }
    path.write_text(json.dumps(doc, indent=2))
    return path


def _responses_response(n: int, command: str, input_tokens: int, cached: int, output: int) -> dict[str, Any]:
    """``ResponsesAPIResponse.model_dump`` of one call that ran ``command``."""
    return {
        "id": f"resp_{n}",
        "created_at": int(T0) + n,
        "error": None,
        "incomplete_details": None,
        "model": "gpt-5-mini-2025-08-07",
        "object": "response",
        "output": [
            {"id": f"rs_{n}", "summary": [{"text": f"Plan {n}", "type": "summary_text"}], "type": "reasoning"},
            {
                "id": f"msg_{n}",
                "content": [{"annotations": [], "text": f"Running {command}", "type": "output_text"}],
                "role": "assistant",
                "status": "completed",
                "type": "message",
            },
            {
                "arguments": json.dumps({"command": command}),
                "call_id": f"call_{n}",
                "name": "bash",
                "type": "function_call",
                "id": f"fc_{n}",
                "status": "completed",
            },
        ],
        "parallel_tool_calls": True,
        "status": "completed",
        "usage": {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": output,
            "output_tokens_details": {"reasoning_tokens": output // 2},
            "total_tokens": input_tokens + output,
        },
    }


def responses_v2(path: Path) -> Path:
    """A 2.4.6 ``LitellmResponseModel`` run: two calls, the first one's result a ``function_call_output``."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]
    for n, (command, usage) in enumerate([("ls", (1500, 0, 210)), ("git diff", (1900, 1408, 90))]):
        message = _responses_response(n, command, *usage)
        message["extra"] = {
            "actions": [{"command": command, "tool_call_id": f"call_{n}"}],
            "cost": 0.002,
            "timestamp": T0 + 10 * n,
        }
        messages.append(message)
        if n == 0:
            messages.append(
                {
                    "extra": {"raw_output": "a.py\n", "returncode": 0, "timestamp": T0 + 1, "exception_info": None},
                    "type": "function_call_output",
                    "call_id": "call_0",
                    "output": "<returncode>0</returncode>\n<output>\na.py\n</output>",
                }
            )
    messages.append({"role": "exit", "content": "", "extra": {"exit_status": "Submitted", "submission": ""}})
    doc = {
        "info": _info("2.4.6", "minisweagent.models.litellm_response_model.LitellmResponseModel", 2, 0.004),
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1.1",
    }
    path.write_text(json.dumps(doc, indent=2))
    return path


def textbased_v1(path: Path) -> Path:
    """A 1.17.5 run (``save_traj``): messages with ``timestamp``, ```bash blocks, usage in ``extra.response``; the
    second response has two blocks, so the agent answers with its format error (no command run)."""
    block = "THOUGHT: look around.\n\n```mswea_bash_command\nls\n```"
    usage = {"completion_tokens": 30, "prompt_tokens": 800, "total_tokens": 830, "prompt_tokens_details": None}
    response = _chat_response(0, block, [], usage)
    messages = [
        {"role": "system", "content": SYSTEM, "timestamp": T0},
        {"role": "user", "content": TASK, "timestamp": T0 + 0.1},
        {"role": "assistant", "content": block, "timestamp": T0 + 5.0, "extra": {"response": response}},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\na.py\n</output>", "timestamp": T0 + 6.0},
    ]
    two = "Both.\n\n```bash\nls\n```\n\n```bash\ncat a.py\n```"  # rejected: not exactly one action
    messages += [
        {
            "role": "assistant",
            "content": two,
            "timestamp": T0 + 9.0,
            "extra": {"response": _chat_response(1, two, [], usage)},
        },
        {
            "role": "user",
            "content": "Please always provide EXACTLY ONE action in triple backticks, found 2 actions.",
            "timestamp": T0 + 9.1,
        },
    ]
    doc = {
        "info": {
            "exit_status": "Submitted",
            "submission": "",
            "model_stats": {"instance_cost": 0.002, "api_calls": 2},
            "mini_version": "1.17.5",
            "config": {"model": {"model_name": "gpt-4o-mini"}, "model_type": "minisweagent.models.litellm_model"},
        },
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1",
    }
    path.write_text(json.dumps(doc, indent=2))
    return path
