"""Synthetic runs: tool loops with reads, writes and failures, for policy tests that need no corpus."""

from __future__ import annotations

import random

from replay.run_arrays import RunArrays, build

SPANS = [(1, 2**62, None), (1, 100, None), (80, 200, None), (300, 400, None), (-50, -1, None)]


def synth_run(
    n_requests: int = 40,
    seed: int = 0,
    result_chars: tuple[int, int] = (200, 20_000),
    files: int = 6,
    parallel: bool = True,
    error_rate: float = 0.1,
    system_chars: int = 8_000,
    real_tokens: bool = True,
    ranges: bool = False,
) -> RunArrays:
    """A run of tool loops: system, user, then per request an assistant turn of calls and their results.

    ``ranges``: reads show one of a few line ranges of their file (whole, head, tail, a middle window)."""
    rng = random.Random(seed)
    items: list[dict] = [
        {"step": 0, "kind": "system", "chars": system_chars},
        {"step": 0, "kind": "user_text", "chars": 400, "turn": 1},
    ]
    reqs: list[dict] = []
    t0, cid = 1_700_000_000, 0
    for k in range(n_requests):
        reqs.append({"step": k, "ts": None, "prompt_tokens": None})
        reqs[-1]["ts_epoch"] = t0 + 20 * k
        n_calls = rng.choice([1, 1, 2]) if parallel else 1
        calls = []
        for _ in range(n_calls):
            cid += 1
            acc = rng.choice(["read", "read", "read", "write", "exec"])
            res = f"f{rng.randrange(files)}.py"
            calls.append((f"c{cid}", acc, res))
            items.append(
                {
                    "step": k + 1,
                    "kind": "tool_call",
                    "chars": 120 if acc != "write" else 3_000,
                    "tool_name": {"read": "Read", "write": "Edit", "exec": "Bash"}[acc],
                    "call_id": f"c{cid}",
                    "resource": res,
                    "access": acc,
                    "turn": 1,
                }
            )
            if ranges and acc == "read":
                items[-1]["span"] = rng.choice(SPANS)
        for c, acc, res in calls:
            chars = rng.randint(*result_chars) if acc != "write" else 80
            items.append(
                {
                    "step": k + 1,
                    "kind": "tool_result",
                    "chars": chars,
                    "call_id": c,
                    "resource": res,
                    "access": acc,
                    "is_error": rng.random() < error_rate,
                    "turn": 1,
                }
            )
        if real_tokens:
            for it in items[-2 * n_calls :]:
                it["tokens"] = max(1, int(it["chars"] / rng.uniform(3.0, 4.5)))
    if real_tokens:
        for it in items:
            it.setdefault("tokens", max(1, it["chars"] // 4))
    run = build(
        f"synth-{seed}", items, reqs, "real:synthetic" if real_tokens else "estimate:chars/4", model="claude-sonnet-4-5"
    )
    run.req_ts[:] = [r["ts_epoch"] for r in reqs]
    return run
