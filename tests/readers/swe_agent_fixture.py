"""Small SWE-agent 1.1 ``.traj`` files in the shape its writer produces (sweagent/agent/agents.py and types.py at
SWE-agent 1.1.0 read; texts and numbers made up).

``DefaultAgent.get_trajectory_data``: ``{"trajectory", "history", "info", "replay_config" (a JSON string),
"environment"}``. History entries carry ``agent`` and ``message_type``; ``put_demos_in_history`` adds the
demonstration's entries with ``is_demo``. A step is ``{"action", "observation", "response", "thought",
"execution_time", "state", "query", "extra_info"}``, ``query`` being the (processed) messages that call was sent;
a response rejected and asked again is a step of its own with no history entry, and the re-ask's query ends with
the rejected output and the error message. ``RetryAgent.get_trajectory_data``: ``{"attempts": [...]}`` plus a
copy of the chosen attempt whose ``info`` holds ``best_attempt_idx``, the total ``model_stats`` and
``rloop_model_stats``.
"""

from __future__ import annotations

import copy
import json
from typing import Any

SYSTEM = "You are an autonomous programmer."
ERROR = "Your last output did not use any tool calls! Please make sure your output includes exactly one call."


def _call(call_id: str, command: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "bash", "arguments": json.dumps({"command": command})},
    }


def _action(text: str, command: str, call_id: str, demo: bool = False) -> dict[str, Any]:
    entry = {
        "role": "assistant",
        "content": text,
        "thought": text,
        "action": command,
        "agent": "main",
        "tool_calls": [_call(call_id, command)],
        "message_type": "action",
        "thinking_blocks": [],
    }
    return entry | {"is_demo": True} if demo else entry


def _observation(text: str, call_id: str, demo: bool = False) -> dict[str, Any]:
    entry = {
        "role": "tool",
        "content": text,
        "agent": "main",
        "message_type": "observation",
        "tool_call_ids": [call_id],
    }
    return entry | {"is_demo": True} if demo else entry


def _step(response: str, action: str, observation: str, query: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "action": action,
        "observation": observation,
        "response": response,
        "thought": response,
        "execution_time": 0.2,
        "state": {"working_dir": "/testbed"},
        "query": copy.deepcopy(query),
        "extra_info": {},
    }


def _elide(messages: list[dict[str, Any]], index: int) -> list[dict[str, Any]]:
    """``last_n_observations``' form of entry ``index`` in a prompt."""
    sent = copy.deepcopy(messages)
    sent[index]["content"] = f"Old environment output: ({len(sent[index]['content'].splitlines())} lines omitted)"
    return sent


def _last_n(history: list[dict[str, Any]], n: int = 1) -> list[dict[str, Any]]:
    """The prompt ``last_n_observations`` (polling 1) makes of ``history``: of the non-demonstration observations,
    all but the first (the instance template) and the last ``n`` elided."""
    observed = [i for i, e in enumerate(history) if e["message_type"] == "observation" and not e.get("is_demo")]
    sent = history
    for i in observed[1 : max(0, len(observed) - n)]:
        sent = _elide(sent, i)
    return copy.deepcopy(sent)


def attempt(n_demo_steps: int = 2, requery: bool = True, messages: bool = False) -> dict[str, Any]:
    """One agent run: demonstration steps in the history, step 1, a response rejected and re-asked (``requery``),
    step 2, then ``submit``; last_n_observations with n=1 elides step 1's output in the last call's prompt.
    ``messages``: as 1.0 wrote steps (``messages``, the processed history when the step was appended)."""
    history: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM, "agent": "main", "message_type": "system"}]
    history.append(
        {"role": "user", "content": "Demo task", "agent": "main", "message_type": "observation", "is_demo": True}
    )
    for d in range(n_demo_steps):
        history += [_action(f"Demo step {d}", "ls", f"demo_{d}", True), _observation("a.py", f"demo_{d}", True)]
    history.append({"role": "user", "content": "Fix issue 7.", "agent": "main", "message_type": "observation"})
    trajectory = []
    steps = [("Look at the file.", "cat a.py"), ("Edit it.", "sed -i s/x/y/ a.py"), ("Submit.", "submit")]
    outputs = ["x = 1\nprint(x)", "", "diff --git a/a.py b/a.py"]
    calls = 0
    for n, ((text, command), output) in enumerate(zip(steps, outputs, strict=True)):
        query = _elide(history, len(history) - 3) if n == 2 else history
        if n == 1 and requery:
            trajectory.append(_step("I will edit it now.", "", "", query))
            if messages:
                trajectory[-1]["messages"] = _last_n(history)
            query = [
                *history,
                {"role": "assistant", "content": "I will edit it now."},
                {"role": "user", "content": ERROR},
            ]
            calls += 1
        trajectory.append(_step(text, command, output, query))
        calls += 1
        history += [_action(text, command, f"call_{n}"), _observation(f"OBSERVATION:\n{output}", f"call_{n}")]
        if messages:
            trajectory[-1]["messages"] = _last_n(history)
    if messages:
        for step in trajectory:
            del step["query"]
    config = {
        "agent": {
            "name": "main",
            "history_processors": [{"type": "last_n_observations", "n": 1, "polling": 1}],
            "model": {"name": "claude-sonnet-4-20250514", "per_instance_cost_limit": 3.0},
            "max_requeries": 3,
            "type": "default",
        },
    }
    info = {
        "swe_agent_hash": "unavailable",
        "swe_agent_version": "1.1.0",
        "swe_rex_version": "1.2.0",
        "submission": "diff --git a/a.py b/a.py",
        "exit_status": "submitted",
        "model_stats": {"instance_cost": 0.05, "tokens_sent": 9000, "tokens_received": 300, "api_calls": calls},
    }
    return {
        "trajectory": trajectory,
        "history": history,
        "info": info,
        "replay_config": json.dumps(config),
        "environment": "main",
    }


def retry_run() -> dict[str, Any]:
    """A RetryAgent's file: two attempts (the second chosen), the chosen one copied to the top level."""
    attempts = [attempt(0, False), attempt(0, True)]
    data: dict[str, Any] = {"attempts": attempts} | copy.deepcopy(attempts[1])
    data["info"]["best_attempt_idx"] = 1
    data["info"]["rloop_model_stats"] = {
        "instance_cost": 0.01,
        "tokens_sent": 2000,
        "tokens_received": 50,
        "api_calls": 2,
    }
    data["info"]["model_stats"] = {"instance_cost": 0.1, "tokens_sent": 18000, "tokens_received": 600, "api_calls": 7}
    return data


def ended_without_reply(doc: dict[str, Any], exit_status: str, message: str) -> dict[str, Any]:
    """``doc`` ended as ``forward_with_handling``'s ``handle_error_with_autosubmission`` ends a run whose call got no
    reply (1.1: thought and output the exit message, no action, then the autosubmission's observation); the call is
    not in ``model_stats``."""
    out = copy.deepcopy(doc)
    entry = {"role": "assistant", "content": message, "thought": message, "action": "", "agent": "main"}
    out["history"] += [
        entry | {"message_type": "action"},
        {
            "role": "user",
            "content": "OBSERVATION:\nExited (autosubmitted)",
            "agent": "main",
            "message_type": "observation",
        },
    ]
    out["trajectory"].append(_step(message, "", "Exited (autosubmitted)", []))
    out["info"]["exit_status"] = f"submitted ({exit_status})"
    return out
