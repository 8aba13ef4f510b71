"""Which model call each SWE-agent trajectory step is (``.traj`` ``trajectory`` against ``history``).

From 1.0 (sweagent/agent/agents.py, ``forward_with_handling``), a response SWE-agent rejects (format error,
blocked command, bash syntax error) is re-asked: the rejected step is appended to ``trajectory``
(``add_step_to_trajectory``) but never to ``history``, which holds only the steps that were accepted. Every model
call is then a trajectory step, and an accepted step's ``response`` is its history entry's ``content``.
Demonstrations put into the history step by step (``put_demos_in_history``) are ``is_demo`` entries: they were
never a call of this run and have no trajectory step.

The prompt a step records: ``query`` (1.1) is the messages sent for that very call; ``messages`` (1.0) is the
processed history when the step was appended, i.e. after an accepted step (the next call's prompt) and before
a rejected one (that call's own prompt, without the re-ask's rejected output and error message).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from replay.readers.base import text_of


@dataclass
class StepPlan:
    """The re-asked calls: how many came before each accepted history entry, and which steps they are (step k is
    the run's call k)."""

    requeried: dict[int, int] = field(default_factory=dict)  # history index (len(history): the end) -> calls
    rejected: set[int] = field(default_factory=set)  # trajectory steps whose response was re-asked


def plan_steps(history: list[Any], trajectory: Any) -> StepPlan | None:
    """The calls the trajectory records, matched in order to the history's own assistant entries; None when some
    assistant entry matches no step (then steps and entries cannot be told apart, nothing is re-asked)."""
    entries = [
        (i, text_of(e.get("content")))
        for i, e in enumerate(history)
        if isinstance(e, dict) and e.get("role") == "assistant" and not e.get("is_demo")
    ]
    steps = trajectory if isinstance(trajectory, list) else []
    plan, matched = StepPlan(), 0
    for n, step in enumerate(steps):
        response = text_of(step.get("response")) if isinstance(step, dict) else None
        if matched < len(entries) and response == entries[matched][1]:
            matched += 1
            continue
        at = entries[matched][0] if matched < len(entries) else len(history)
        plan.requeried[at] = plan.requeried.get(at, 0) + 1
        plan.rejected.add(n)
    if matched < len(entries):
        return None
    return plan


def prompts(trajectory: list[Any], plan: StepPlan | None, n_requests: int) -> list[tuple[int, list[Any]]]:
    """(request, messages sent) for each request whose prompt a step records (``query``, or 1.0's ``messages``):
    step k is request k (every step is a call)."""
    rejected = plan.rejected if plan is not None else set()
    found = []
    for k, step in enumerate(trajectory):
        if not isinstance(step, dict):
            continue
        if isinstance(step.get("query"), list):
            request, messages = k, step["query"]
        elif isinstance(step.get("messages"), list):
            request, messages = (k if k in rejected else k + 1), step["messages"]
        else:
            continue
        if request < n_requests:
            found.append((request, messages))
    return found
