"""A run too short to fit a scale of its own takes its model's prior (replay.tokens.calibrate.prior_scales), on real
Claude Code sub-agents of the corpus cut to their first three requests: a sub-agent that ends early, the shape of
most of Claude Code's short sub-agent files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from replay.ingest import ingest
from replay.store import open_store
from replay.tokens import DEFAULT_OVERHEAD, load_tokenizer
from replay.tokens.calibrate import TARGET_MEDIAN, fit_usage
from replay.tokens.counting import count_items
from replay.tokens.log_checks import SUBAGENT_NOTICE

SESSION = "ccl-worktrees-ef958aa1"  # a Claude Opus 4.7 session and its five sub-agents
SHORT = f"{SESSION}-sub-agent-a36efb2a1231c41e2.jsonl"


def first_requests(src: Path, dst: Path, n: int) -> None:
    """Write ``src``'s lines up to its ``n``-th request's response (a transcript that ended there)."""
    lines, ids = [], []
    for line in src.read_text().splitlines(keepends=True):
        record = json.loads(line)
        message = record.get("message") or {}
        if record.get("type") == "assistant" and message.get("usage") and message.get("id") not in ids:
            ids.append(message.get("id"))
            if len(ids) > n:
                break
        lines.append(line)
    dst.write_text("".join(lines))


@pytest.fixture(scope="module")
def fitted(corpus, tmp_path_factory):
    logs = tmp_path_factory.mktemp("prior")
    for src in sorted((corpus / "claude-code").glob(f"{SESSION}-*.jsonl")):
        if src.name != SHORT:
            (logs / src.name).write_bytes(src.read_bytes())
    first_requests(corpus / "claude-code" / SHORT, logs / f"short-{SHORT}", 3)
    con = open_store(logs / "s.duckdb")
    ingest(con, [logs])
    tok = load_tokenizer("o200k")
    count_items(con, tok)
    yield con, tok.tokenizer_id, fit_usage(con, tok.tokenizer_id, DEFAULT_OVERHEAD)
    con.close()


def test_a_three_request_sub_agent_fits_at_its_models_scale(fitted):
    """The three-request sub-agent has its first attachments (unlogged, ~2.5k tokens from request 1) and no
    requests left for a scale beside them. Fitted without them, at a scale of its own (1.87), it was 7.0% off at
    the median; at the median scale of the session's other Opus 4.7 runs, with them, it is within the target."""
    _, _, (_, runs, fits) = fitted
    short = runs.filter(runs["run_id"].str.starts_with("short-"))
    assert short["n_requests"].to_list() == [3]
    f, boundaries = fits[short["run_id"][0]]
    others = runs.filter(~runs["run_id"].str.starts_with("short-") & (runs["n_requests"] >= 10))
    assert f.scale == pytest.approx(float(np.median(others["scale"].to_numpy())))
    assert not f.scale_free and list(boundaries.values()) == [SUBAGENT_NOTICE] and f.offsets[0][1] > 1_000
    assert short["median_err"][0] <= TARGET_MEDIAN


def test_a_runs_prior_is_the_stores_whichever_runs_are_fitted_with_it(fitted):
    """Fitted alone (``fidelity --runs``, a shard of a sweep), the short run takes the same prior from the store's
    other runs, so its prompt model is the one the whole store's fit gives it."""
    con, tokenizer_id, (_, runs, fits) = fitted
    short = runs.filter(runs["run_id"].str.starts_with("short-"))["run_id"][0]
    _, _, alone = fit_usage(con, tokenizer_id, DEFAULT_OVERHEAD, [short])
    assert alone[short] == fits[short]
