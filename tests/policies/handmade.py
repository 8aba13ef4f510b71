"""Hand-made runs for the preset tests: a system item of the harness prefix size, then requests of tool loops."""

from __future__ import annotations

from replay.run_arrays import RunArrays, build


def loop_run(
    results: list[int],
    prefix: int = 1_000,
    user: int = 100,
    call: int = 10,
    users_at: dict[int, int] | None = None,
    access: str = "read",
    lines: int = 3,
    thought: int = 0,
    extra: list[dict] | None = None,
) -> RunArrays:
    """Request k sees the prefix, a user message and the tool round trips of requests < k.

    ``results[k]``: tokens of the result of the call made after request k (appended at step k + 1);
    ``users_at``: {step: tokens} extra user messages appended at that step; ``thought``: tokens of an assistant
    text before each call (same response); ``extra``: further item dicts appended in order (keep steps sorted).
    Tokens are real (chars = 4 x tokens)."""
    items: list[dict] = [
        {"step": 0, "kind": "system", "chars": 4 * prefix, "tokens": prefix},
        {"step": 0, "kind": "user_text", "chars": 4 * user, "tokens": user, "turn": 1},
    ]
    users_at = users_at or {}
    for k, size in enumerate(results):
        step = k + 1
        if thought:
            items.append({"step": step, "kind": "assistant_text", "chars": 4 * thought, "tokens": thought})
        items.append(
            {
                "step": step,
                "kind": "tool_call",
                "chars": 4 * call,
                "tokens": call,
                "call_id": f"c{k}",
                "tool_name": "Read",
                "resource": f"f{k % 3}.py",
                "access": access,
            }
        )
        items.append(
            {
                "step": step,
                "kind": "tool_result",
                "chars": 4 * size,
                "tokens": size,
                "call_id": f"c{k}",
                "resource": f"f{k % 3}.py",
                "access": access,
                "lines": lines,
            }
        )
        if step in users_at:
            items.append({"step": step, "kind": "user_text", "chars": 4 * users_at[step], "tokens": users_at[step]})
    items.extend(extra or [])
    items.sort(key=lambda it: it["step"])
    reqs = [{"step": k} for k in range(len(results) + 1)]
    return build("handmade", items, reqs, "real:test")
