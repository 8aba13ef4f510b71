"""A run's cache hit rate is fitted per model when its log names more than one: Gemini serves, and caches, each
model apart, so a Gemini CLI session that moved from gemini-2.5-pro to gemini-2.5-flash-lite (ten times cheaper)
reads each model's prompts at that model's own rate, and ``simulate --policy recorded`` bills what its recorded
usage cost (one rate pooled over both moved the misses onto the dear model: +7.7% on a real session)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from replay.ingest import ingest
from replay.policies import Budget, make_policy
from replay.simulator.cache_fit import MIN_PREDICTIVE, CacheFit, predictive
from replay.simulator.load import load_runs
from replay.simulator.run import simulate_run
from replay.store import open_store
from replay.tokens.counting import count_items
from replay.tokens.loading import load_tokenizer

HIDDEN = 6000  # the CLI's system prompt and tool declarations: sent, never recorded
WORDS = 1300  # o200k tokens of a user turn ("word" repeated: one token a word)
PRO, LITE = "gemini-2.5-pro", "gemini-2.5-flash-lite"


def _text(n: int, salt: int) -> str:
    return f"turn {salt}: " + " ".join(["word"] * n)


def switched_session(path: Path, per_model: int = 16) -> Path:
    """A Gemini CLI JSONL chat recording (ChatRecordingService: a header line, then message records and ``$set``
    patches of ``lastUpdated``) of ``per_model`` requests on gemini-2.5-pro, then as many on gemini-2.5-flash-lite
    after ``/model``. The server read the previous prompt of the same model on every request but each eighth under
    pro, on every other request under flash-lite, and nothing on the first request after the switch."""
    lines = [
        {
            "sessionId": "5e551011-0000-4000-8000-000000000002",
            "projectHash": "0" * 64,
            "startTime": "2026-04-25T10:00:00.000Z",
            "lastUpdated": "2026-04-25T10:00:00.000Z",
            "kind": "main",
        }
    ]
    logged, prev = 0, 0
    for k in range(2 * per_model):
        model = PRO if k < per_model else LITE
        user = _text(WORDS + 37 * (k % 5), k)
        logged += WORDS + 37 * (k % 5) + 3
        prompt = HIDDEN + logged
        own = k - (0 if model == PRO else per_model)
        hit = own > 0 and (own % 8 if model == PRO else own % 2)
        cached = prev if hit else 0
        ts = f"2026-04-25T10:{k // 6:02d}:{(k % 6) * 10:02d}.000Z"
        lines.append({"id": f"u{k}", "timestamp": ts, "type": "user", "content": [{"text": user}]})
        lines.append({"$set": {"lastUpdated": ts}})
        tokens = {"input": prompt, "output": 150, "cached": cached, "thoughts": 33, "tool": 0, "total": prompt + 183}
        reply = {"id": f"g{k}", "timestamp": ts, "type": "gemini", "content": _text(150, 1000 + k)}
        lines.append(reply | {"thoughts": [], "tokens": tokens, "model": model})
        lines.append({"$set": {"lastUpdated": ts}})
        logged += 183
        prev = prompt
    out = path / "session-2026-04-25T10-00-5e551011.jsonl"
    out.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return out


@pytest.fixture(scope="module")
def replayed(tmp_path_factory):
    logs = tmp_path_factory.mktemp("switched")
    con = open_store(tmp_path_factory.mktemp("store") / "s.duckdb")
    ingest(con, [switched_session(logs)])
    tok = load_tokenizer("o200k")
    count_items(con, tok)
    (run,) = load_runs(con, tok.tokenizer_id)
    con.close()
    cols, row = simulate_run(run, make_policy("recorded", {}), None, Budget(200_000))
    return run, cols, row


def _share(run, cols, model: str) -> tuple[float, float]:
    own = np.array([m == model for m in run.req_model]) & (run.rec_prompt > 0)
    recorded = run.rec_cache_read[own].sum() / run.rec_prompt[own].sum()
    return float(recorded), float(cols["cached_tokens"][own].sum() / cols["prompt_tokens"][own].sum())


def test_each_model_reads_its_own_share(replayed):
    run, cols, _ = replayed
    fit = run.cache_fit
    assert fit.name == "gemini" and fit.source == "fit"
    rates = {m: rate for m, rate, _ in fit.by_model}
    assert set(rates) == {PRO, LITE} and rates[PRO] > rates[LITE] + 0.2, fit.label()
    for model in (PRO, LITE):
        recorded, simulated = _share(run, cols, model)
        assert abs(simulated - recorded) <= 0.05, (model, recorded, simulated)


def test_recorded_policy_bills_the_recorded_usage(replayed):
    _, _, row = replayed
    assert row["billed_cost_usd"] == pytest.approx(row["recorded_cost_usd"], rel=0.03)


def test_a_model_rate_predicts_only_from_enough_requests():
    fit = CacheFit("gemini", 0.8, None, "fit", 30, MIN_PREDICTIVE + 10, ((PRO, 0.9, MIN_PREDICTIVE), (LITE, 0.5, 9)))
    assert predictive(fit).by_model == ((PRO, 0.9, MIN_PREDICTIVE),)
    few = CacheFit("gemini", 0.8, None, "fit", 10, MIN_PREDICTIVE - 1, ((PRO, 0.9, 12),))
    assert predictive(few).by_model == () and predictive(few).hit_rate == 1.0
    assert list(fit.request_rates((PRO, None, LITE, "gemini-3-flash-preview"))) == [0.9, -1.0, 0.5, -1.0]
