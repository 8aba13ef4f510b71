"""Cache hits as each provider delivers them, on the real corpus (o200k counts): every run served by an automatic
prefix cache (OpenAI, Codex, Gemini, DeepSeek, OpenAI-compatible servers) replays its recorded cache-read share
within 5 points under its calibrated cache model (replay.simulator.cache_fit), a run whose server never read its
cache is simulated uncached, and a fit on the first half of a long run predicts the second half."""

from __future__ import annotations

import pytest

from replay.simulator.cache_fit import provider_cache
from replay.simulator.fidelity import _share, out_of_sample_share, replay_recorded
from replay.simulator.load import load_runs


@pytest.fixture(scope="module")
def corpus_runs(corpus_db):
    from replay.tokens.counting import count_items
    from replay.tokens.loading import load_tokenizer

    tok = load_tokenizer("o200k")
    count_items(corpus_db, tok)
    meta = {r[0]: r[1:] for r in corpus_db.execute("SELECT run_id, format, model FROM runs").fetchall()}
    return [(r, *meta[r.run_id]) for r in load_runs(corpus_db, tok.tokenizer_id)]


def _shares(run) -> tuple[float | None, float | None]:
    cols, _ = replay_recorded(run, run.cache_fit.name)
    return _share(cols, 0, run.n_requests, True), _share(cols, 0, run.n_requests, False)


def _named(corpus_runs, part: str):
    found = [r for r, _, _ in corpus_runs if part in r.run_id]
    assert found, part
    return found


def test_llama4_run_served_without_cache_is_simulated_uncached(corpus_runs):
    """The llama-4 runs record usage on every request and a cache read of 0 on all of them."""
    for run in _named(corpus_runs, "llama4"):
        assert run.cache_fit.source == "uncached" and run.cache_fit.name == "none"
        recorded, simulated = _shares(run)
        assert recorded == 0.0 and simulated == 0.0


def test_codex_run_within_5_points(corpus_runs):
    """346 requests; a quarter of them spill to a server holding only a shared harness prefix (2.5k-9.6k)."""
    run = _named(corpus_runs, "codex-pharma-platform")[0]
    recorded, simulated = _shares(run)
    assert abs(simulated - recorded) <= 0.05, (recorded, simulated)
    assert run.cache_fit.source == "fit" and 0.6 < run.cache_fit.hit_rate < 0.8


def test_deepseek_runs_within_5_points(corpus_runs):
    """One request each, sent after the same conversation's earlier calls: what was warm is the request's own
    read, counted in DeepSeek's 64-token units even where it ends inside a message."""
    for run in _named(corpus_runs, "deepseek"):
        assert run.cache_fit.name == "deepseek"
        recorded, simulated = _shares(run)
        assert abs(simulated - recorded) <= 0.05, (run.run_id, recorded, simulated)


def test_every_automatic_cache_run_within_5_points(corpus_runs):
    """Every run under an automatic cache (OpenAI, Codex, Gemini, DeepSeek, MiniMax outside Claude Code) whose log
    records cache reads: simulated share within 5 points of the recorded one, no exception."""
    rows = []
    for run, fmt, model in corpus_runs:
        if provider_cache(fmt, model) == "anthropic" or run.n_requests < 2:
            continue
        recorded, simulated = _shares(run)
        if not recorded:
            continue
        rows.append((run.run_id, recorded, simulated, run.cache_fit.label()))
    print("\n" + "\n".join(f"{r:.3f} {s:.3f} {i} {lab}" for i, r, s, lab in rows))
    off = [r for r in rows if abs(r[2] - r[1]) > 0.05]
    assert not off, off
    assert len(rows) >= 10


def test_fit_on_the_first_half_predicts_the_second(corpus_runs):
    """Runs of 40 requests or more with a fit of their own: the share of their second half, simulated under a fit
    on the first half only, within 10 points of the recorded one (measured: 7.5 on the Codex run, 8.7 and 1.3 on
    the mini-swe-agent and Cline runs; early requests miss more often than later ones)."""
    scored = []
    for run, fmt, model in corpus_runs:
        if run.cache_fit.source != "fit" or run.n_requests < 40:
            continue
        recorded, simulated = out_of_sample_share(run, run.cache_fit.name, provider_cache(fmt, model))
        scored.append((run.run_id, recorded, simulated))
    assert len(scored) >= 3, scored
    assert all(abs(s - r) <= 0.10 for _, r, s in scored), scored


def test_a_few_requests_fit_predicts_no_run_worse_than_the_provider(corpus_runs):
    """Out of sample, a hit rate from fewer than 20 informative requests gives way to the provider's (its TTL
    kept): the runs whose first half had 2-10 such requests were predicted 7.7-21.8 points off by their own fit
    (10.3-20.1 with a count of the requests that reached the cache); every one is now within 9 points, and no run
    with a predictive fit of its own moves."""
    expected = {  # run -> (informative requests in its first half, points off at most)
        "msa-live-gpt5mini-django__django-13590": (10, 1.0),  # 15.2 with its own 0.85 (one full miss of 10)
        "msa-live-gpt5mini-psf__requests-1142": (5, 3.0),  # 7.7
        "codex-tui-sessionlog-binary-size-gpt5-8b1342c8": (9, 5.0),  # 11.4
        "gemini-vct-init-v040": (2, 9.0),  # 21.8
        "msa-live-gpt5mini-mwaskom__seaborn-3069": (21, 2.0),  # its own fit: 1.8
    }
    from replay.simulator.cache_fit import fit_run

    for part, (informative, points) in expected.items():
        (run,) = [r for r in _named(corpus_runs, part) if r.run_id.startswith(part) and "/" not in r.run_id]
        fmt, model = next((f, m) for r, f, m in corpus_runs if r is run)
        first = fit_run(run, provider_cache(fmt, model), upto=run.n_requests // 2)
        assert first is not None and first.informative == informative, (part, first)
        recorded, simulated = out_of_sample_share(run, run.cache_fit.name, provider_cache(fmt, model))
        assert abs(simulated - recorded) <= points / 100, (part, recorded, simulated)
