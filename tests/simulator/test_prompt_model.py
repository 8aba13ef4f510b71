"""The prompt model: the harness prefix, the calibrated scale and the log's own context events enter every
simulation, so the simulated prompt is the one the server counted."""

from __future__ import annotations

import numpy as np
import pytest

from replay.policies import Budget, make_policy
from replay.simulator.caches import make_cache
from replay.simulator.fidelity import TARGET_MEDIAN, TARGET_P95, prompt_errors, replay_recorded
from replay.simulator.load import apply_prompt, load_runs
from replay.simulator.prompt import FIT, NONE, PromptModel, prompt_models
from replay.simulator.run import simulate_run

from .synth import synth_run

# Runs with per-request usage whose per-request error misses the targets, each with its cause in the log.
EXPLAINED: dict[str, str] = {
    "codex-tui-sessionlog-binary-size-gpt5.jsonl": "the TUI log records nothing of the main session's first request "
    "(its first user message is logged after it), so the prefix fitted over all requests over-counts request 0 "
    "by 15% (p95 10.05%); requests 1-19 are within 10%, median 2.1%",
}
FORMATS = ("claude-code", "codex-rollout", "codex-tui", "mini-swe-agent", "cline", "gemini-cli")


@pytest.fixture(scope="module")
def legacy_runs(corpus_db):
    from replay.tokens.counting import count_items
    from replay.tokens.loading import load_tokenizer

    tok = load_tokenizer("claude-legacy")
    count_items(corpus_db, tok)
    fmt = dict(corpus_db.execute("SELECT run_id, format FROM runs").fetchall())
    src = dict(corpus_db.execute("SELECT run_id, source_path FROM runs").fetchall())
    return [(src[r.run_id].rsplit("/", 1)[-1], fmt[r.run_id], r) for r in load_runs(corpus_db, tok.tokenizer_id)]


def test_recorded_policy_reproduces_the_recorded_prompt_per_request(legacy_runs):
    """Every run with per-request usage (3 requests or more) in the harness formats: median <= 3%, p95 <= 10%."""
    rows = []
    for name, fmt, run in legacy_runs:
        if fmt not in FORMATS or (run.rec_prompt > 0).sum() < 3:
            continue
        cols, _ = replay_recorded(run, "none")
        err = prompt_errors(cols)
        ok = np.median(err) <= TARGET_MEDIAN and np.quantile(err, 0.95) <= TARGET_P95
        rows.append(
            (
                name,
                run.run_id,
                float(np.median(err)),
                float(np.quantile(err, 0.95)),
                ok,
                run.prompt_source,
                run.unreconstructable,
            )
        )
    print(
        "\n"
        + "\n".join(
            f"{'ok ' if ok else 'OFF'} {n} {rid[-12:]}: median {m:.2%} p95 {p:.2%} ({s}) {why}"
            for n, rid, m, p, ok, s, why in rows
        )
    )
    assert len(rows) >= 40
    assert all(r[5] == FIT for r in rows)
    # a miss is allowed only where calibration finds, mechanically, that the log cannot give the server's prompt,
    # or where the cause is measured and named above
    missed = [r for r in rows if not r[4] and not r[6] and not any(r[0].startswith(k) for k in EXPLAINED)]
    assert not missed, missed
    assert sum(bool(r[6]) for r in rows) <= 2


def test_full_history_without_the_prompt_model_is_far_below_the_server(legacy_runs, corpus_db):
    """The log's items alone are about half of what Claude Code's server counted: the prefix is what was missing."""
    name, _, run = next(r for r in legacy_runs if r[0].startswith("ccl-sample-37f83ec9"))
    bare = next(
        r for r in load_runs(corpus_db, run.token_source.split(":", 1)[1], "%ccl-sample-37f83ec9%", prompt=False)
    )
    with_prefix, _ = replay_recorded(run, "none")
    without, _ = replay_recorded(bare, "none")
    assert run.prefix_tokens > 10_000 and bare.prefix_tokens == 0
    assert np.median(prompt_errors(with_prefix)) < 0.01 < 0.3 < np.median(prompt_errors(without))


def _user_items(run, system_at: int = -1) -> list[dict]:
    """Store-shaped items of a synthetic ``run``: user messages, the one at ``system_at`` a logged system message."""
    return [
        {
            "seq": i,
            "step": int(s),
            "kind": "system" if i == system_at else "user_text",
            "role": "system" if i == system_at else "user",
            "chars": int(c),
            "tokens": int(t),
            "tool_name": None,
            "call_id": None,
            "resource": None,
            "access": None,
            "is_error": False,
            "ts": None,
            "turn": 1,
            "content_hash": None,
            "lines": 1,
        }
        for i, (s, c, t) in enumerate(zip(run.step, run.chars, run.tokens, strict=True))
    ]


def test_prefix_is_an_item_every_policy_budgets_against():
    """A policy that budgets against the window counts the prefix: with it, the same run overflows and compacts."""
    run = synth_run(30, seed=3)
    items = _user_items(run)
    with_prefix = apply_prompt([dict(it) for it in items], PromptModel(prefix=40_000, source=FIT))
    assert with_prefix[0]["kind"] == "system" and with_prefix[0]["tokens"] == 40_000
    assert with_prefix[0]["chars"] == 160_000  # chars/4 sees exactly the prefix
    assert [it["tokens"] for it in with_prefix[1:]] == [it["tokens"] + 4 for it in items]  # template per message
    from replay.run_arrays import build

    reqs = [{"step": int(k), "ts": None, "prompt_tokens": None} for k in run.req_step]
    budget = Budget(200_000, 0)
    peak = {}
    for label, its in (("bare", items), ("prefix", with_prefix)):
        arrays = build("p", [dict(it) for it in its], reqs, "real:synthetic")
        cols, row = simulate_run(arrays, make_policy("auto_compact", {"threshold": 0.8}), make_cache("none"), budget)
        peak[label] = (int(cols["prompt_tokens"].max()), row["summaries"])
    assert peak["prefix"][0] >= peak["bare"][0] + 30_000 or peak["prefix"][1] > peak["bare"][1]


def test_runs_without_usage_take_a_profile_or_say_none(corpus_db):
    ids = [r[0] for r in corpus_db.execute("SELECT run_id FROM runs WHERE n_requests > 0").fetchall()]
    models = prompt_models(corpus_db, None, ids)
    fmt = dict(corpus_db.execute("SELECT run_id, format FROM runs").fetchall())
    usage = {r[0] for r in corpus_db.execute("SELECT DISTINCT run_id FROM requests WHERE prompt_tokens > 0").fetchall()}
    for rid, pm in models.items():
        if rid in usage:
            assert pm.source == FIT, rid
        else:
            assert pm.source in (NONE, f"profile:{fmt[rid]}", f"log:{fmt[rid]}", f"totals:{fmt[rid]}"), (rid, pm.source)
    override = prompt_models(corpus_db, None, ids, override=1234)
    assert all(pm.prefix == 1234 for rid, pm in override.items() if rid not in usage)


def test_a_tokenizer_without_counts_is_an_error_not_chars4(corpus_db):
    from replay.errors import ReplayError

    with pytest.raises(ReplayError, match="no token counts for tokenizer 'o200k'"):
        load_runs(corpus_db, "o200k", "%ccl-sample%")


def test_harness_prefix_that_starts_mid_run_outlives_every_policys_trimming():
    """A model switch's own prefix and the schemas a tool search loaded are tool definitions sent from their step
    on, which no policy trims: a Claude Code compaction left LAF-US/IDAHO-VAULT 05541cb5's /model-switch segment
    (8,602 tokens) and its tool loads out of the prompt after it (-26% at request 95). A system message logged
    mid-run is a message: a policy may drop it (Codex re-sends its developer instructions after a compaction)."""
    from replay.policies.view import DROPPED
    from replay.run_arrays import TOOL_DEFS, build
    from replay.simulator.billing import billing_for
    from replay.simulator.run import charged_views

    run = synth_run(40, seed=5)
    items = _user_items(run, system_at=30)
    switch, load = int(run.step[20]), int(run.step[25])
    model = PromptModel(
        prefix=20_000, source=FIT, unlogged=((switch, 8_000, "model switch"), (load, 1_500, "tool-reference"))
    )
    placed = apply_prompt([dict(it) for it in items], model)
    pinned = [p for p, it in enumerate(placed) if it["kind"] == "tool_defs"]
    assert [placed[p]["tokens"] for p in pinned] == [8_000, 1_500]
    logged_system = next(p for p, it in enumerate(placed) if it["seq"] == 30)
    reqs = [{"step": int(k), "ts": None, "prompt_tokens": None} for k in run.req_step]
    arrays = build("p", placed, reqs, "real:synthetic")
    assert (arrays.kind[pinned] == TOOL_DEFS).all()
    budget = Budget(60_000, 0)
    for name, knobs in (("auto_compact", {"threshold": 0.5}), ("drop_oldest", {}), ("claude-code-2.1.74", {})):
        policy = make_policy(name, knobs)
        steps, _ = charged_views(arrays, policy, budget, billing_for(arrays.model, make_cache("none")))
        views = [view for view, _, _ in steps]
        assert any((v.forms[: v.end] == DROPPED).any() for v in views), name  # it trimmed
        late = [v for v in views if v.end > max(pinned)]
        assert late and all((v.forms[pinned] != DROPPED).all() for v in late), name
        assert any(v.end > logged_system and v.forms[logged_system] == DROPPED for v in views), name


def test_unlogged_content_follows_the_items_of_its_step():
    """What a harness attaches before a request (a sub-agent's first attachments, a compaction's re-attached files)
    follows the response and results logged at that step: placed before them, it cut the cached prefix of a cache
    that holds the previous response (olivia215215/cabinet-governance agent-a8a5c2ea on DeepSeek: its second
    request read 6,976 of the 7,424 tokens it read)."""
    items = [
        {"seq": i, "step": s, "kind": k, "role": "user", "chars": 400, "tokens": 100, "tool_name": None, "turn": 1}
        for i, (s, k) in enumerate([(0, "user_text"), (1, "assistant_text"), (1, "tool_result"), (2, "user_text")])
    ]
    placed = apply_prompt(items, PromptModel(prefix=1_000, source=FIT, unlogged=((1, 300, "subagent attachments"),)))
    kinds = [(it["step"], it["kind"]) for it in placed]
    assert placed[4]["turn"] == 1  # the user turn of the items it follows
    # a prefix change at the next step comes after it: steps never decrease (LAF-US/IDAHO-VAULT's Gemini session
    # 2026-04-03T20-32, a model switch at the step after unlogged content, failed to load)
    switched = PromptModel(
        prefix=1_000, source=FIT, unlogged=((1, 300, "subagent attachments"), (2, 500, "model switch"))
    )
    steps = [it["step"] for it in apply_prompt([dict(it) for it in items], switched)]
    assert steps == [0, 0, 1, 1, 1, 2, 2]
    assert kinds == [
        (0, "system"),
        (0, "user_text"),
        (1, "assistant_text"),
        (1, "tool_result"),
        (1, "attachment"),
        (2, "user_text"),
    ]
