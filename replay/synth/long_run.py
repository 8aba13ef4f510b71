"""Long synthetic runs in the canonical arrays, for scaling benchmarks: the length of a run is the only thing that
grows, so time per request should not."""

from __future__ import annotations

import random

from replay.run_arrays import RunArrays, build

TOOLS = {"read": "Read", "write": "Edit", "exec": "Bash", "search": "Grep"}


def long_run(
    n_requests: int,
    seed: int = 0,
    result_chars: tuple[int, int] = (200, 12_000),
    files: int = 300,
    error_rate: float = 0.05,
    user_every: int = 40,
) -> RunArrays:
    """A run of ``n_requests`` requests: system and tool definitions, then per request one tool call and its result
    (results of ``result_chars`` characters, a user message every ``user_every`` requests). Token counts are
    chars / 3-4.5 (real-looking, fixed by ``seed``); requests are 20 s apart; the model is a Claude model, so the
    provider's own cache model is Anthropic's."""
    rng = random.Random(f"long-run:{seed}:{n_requests}")
    items: list[dict] = [
        {"step": 0, "kind": "system", "chars": 8_000},
        {"step": 0, "kind": "tool_defs", "chars": 12_000},
        {"step": 0, "kind": "user_text", "chars": 600, "turn": 1},
    ]
    reqs: list[dict] = []
    turn = 1
    for k in range(n_requests):
        reqs.append({"step": k, "ts": None})
        if k and k % user_every == 0:
            turn += 1
            items.append({"step": k + 1, "kind": "user_text", "chars": rng.randint(50, 2_000), "turn": turn})
        acc = rng.choice(["read", "read", "read", "write", "exec", "exec", "search"])
        res = f"src/f{rng.randrange(files)}.py" if acc in ("read", "write") else None
        call = f"c{k}"
        items.append(
            {
                "step": k + 1,
                "kind": "tool_call",
                "chars": 3_000 if acc == "write" else rng.randint(60, 300),
                "tool_name": TOOLS[acc],
                "call_id": call,
                "resource": res,
                "access": acc,
                "turn": turn,
            }
        )
        items.append(
            {
                "step": k + 1,
                "kind": "tool_result",
                "chars": rng.randint(*result_chars),
                "call_id": call,
                "resource": res,
                "access": acc,
                "is_error": rng.random() < error_rate,
                "turn": turn,
            }
        )
    for it in items:
        it["tokens"] = max(1, int(it["chars"] / rng.uniform(3.0, 4.5)))
    run = build(f"long-{seed}-{n_requests}", items, reqs, "real:synthetic", model="claude-sonnet-4-5")
    run.req_ts[:] = [1_700_000_000 + 20.0 * k for k in range(n_requests)]
    return run
