"""What codex-rs sends the model of a tool output the rollout logs whole.

codex-rs records a tool output into the model's history through ``ContextManager::process_item``
(core/src/context_manager/history.rs), which cuts it to the turn's ``truncation_policy`` (logged on
``turn_context``: ``{"mode": "tokens" | "bytes", "limit": N}``) times 1.2, the allowance for serialisation
(``with_serialization_allowance``), while the rollout keeps the output as the tool produced it. The cut
(utils/string ``truncate_middle_with_token_budget`` / ``truncate_middle_chars``) keeps the first and last halves of
the budget, at 4 bytes a token for a token budget, with a ``…N tokens truncated…`` (``…N chars truncated…``)
marker between them; an output of content items spends one budget on its text parts in order
(utils/output-truncation ``truncate_function_output_items_with_policy``), later ones cut or omitted.

Later codex-rs (in 0.171.0) persists history-only metadata beside a response item's payload, and a tool may set
its own budget there: ``metadata.fallback_token_limit_override``, in tokens with the allowance already included
(codex-rs history ``CodexHarnessMetadata``; ``record_items_with_metadata`` uses it instead of the policy x 1.2;
MCP tools pass their server's ``output_token_limit``).

Rollouts of codex-rs 0.142 on (Codex Desktop 0.142-0.144 seen) log ``turn_context`` without ``truncation_policy``;
codex-rs still cuts every output to the model's policy from its model catalog (``ModelInfo.truncation_policy``).
For a turn that logs none, the bundled catalog's policy (codex-rs/models-manager/models.json at 069e6b19) is
used for the models listed in ``CATALOG_POLICIES``; another model's outputs are taken as sent.
"""

from __future__ import annotations

import math
from typing import Any

BYTES_PER_TOKEN = 4  # codex-rs APPROX_BYTES_PER_TOKEN
ALLOWANCE = 1.2  # with_serialization_allowance
# model slug -> its truncation_policy in codex-rs's bundled model catalog (models-manager/models.json)
CATALOG_POLICIES: dict[str, dict[str, Any]] = {
    "gpt-5.5": {"mode": "tokens", "limit": 10_000},
    "gpt-5.6-sol": {"mode": "tokens", "limit": 10_000},
}


def history_budget(policy: Any) -> tuple[str, int] | None:
    """``(mode, limit)`` of a logged ``truncation_policy`` with the serialisation allowance, or None when the log
    gives none (the output is then taken as sent)."""
    if not isinstance(policy, dict) or policy.get("mode") not in ("tokens", "bytes"):
        return None
    limit = policy.get("limit")
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        return None
    return policy["mode"], math.ceil(limit * ALLOWANCE)


def turn_budget(turn_context: dict) -> tuple[str, int] | None:
    """The history budget of a ``turn_context`` payload: its logged ``truncation_policy`` (``history_budget``),
    or, when it logs none, its model's policy in codex-rs's catalog (CATALOG_POLICIES), else None."""
    if "truncation_policy" in turn_context and turn_context["truncation_policy"] is not None:
        return history_budget(turn_context["truncation_policy"])
    return history_budget(CATALOG_POLICIES.get(str(turn_context.get("model"))))


def override_budget(metadata: Any) -> tuple[str, int] | None:
    """``("tokens", N)`` from a rollout line's ``metadata.fallback_token_limit_override`` (N tokens, allowance
    included), or None when the line sets none."""
    limit = metadata.get("fallback_token_limit_override") if isinstance(metadata, dict) else None
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 0:
        return None
    return "tokens", limit


def approx_tokens(text: str) -> int:
    """codex-rs ``approx_token_count``: UTF-8 bytes / 4, rounded up."""
    return -(-len(text.encode()) // BYTES_PER_TOKEN)


def _cut(data: bytes, keep: int) -> tuple[str, str]:
    """The first ``keep // 2`` and last ``keep - keep // 2`` bytes, each shortened to whole characters."""
    head, tail = data[: keep // 2], data[len(data) - (keep - keep // 2) :]
    return head.decode(errors="ignore"), tail.decode(errors="ignore")


def truncate_text(text: str, mode: str, budget: int) -> str:
    """``text`` as codex-rs cuts it to ``budget`` tokens (``mode`` "tokens") or bytes ("bytes")."""
    data = text.encode()
    keep = budget * BYTES_PER_TOKEN if mode == "tokens" else budget
    if len(data) <= keep or not text:
        return text
    head, tail = _cut(data, keep)
    if mode == "tokens":
        marker = f"…{-(-(len(data) - keep) // BYTES_PER_TOKEN)} tokens truncated…"
    else:
        marker = f"…{len(text) - len(head) - len(tail)} chars truncated…"
    return f"{head}{marker}{tail}"


def truncate_parts(parts: list[str], mode: str, budget: int) -> list[str]:
    """Text parts of a content-items output as sent: each kept while the budget lasts, the one that overruns it
    cut to what is left, later ones dropped and counted in a closing ``[omitted N text items ...]`` part."""
    out, remaining, omitted = [], budget, 0
    for text in parts:
        if not text:
            continue
        if remaining == 0:
            omitted += 1
            continue
        cost = approx_tokens(text) if mode == "tokens" else len(text.encode())
        if cost <= remaining:
            out.append(text)
            remaining -= cost
            continue
        out.append(truncate_text(text, mode, remaining))
        remaining = 0
    if omitted:
        out.append(f"[omitted {omitted} text items ...]")
    return out
