"""Calibrating a run's cache model from its recorded cache reads (replay.simulator.cache_fit), on hand-made runs
whose every figure is worked out here."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from replay.policies import Budget, make_policy
from replay.run_arrays import build
from replay.simulator.cache_fit import CacheFit, fit_caches, fit_run
from replay.simulator.run import simulate_run


def _prompt(k: int) -> int:
    return 5000 + 1000 * k


def _run(reads: list[int], gaps: list[float] | None = None, model: str = "gpt-5", first: int = 4000):
    """A run growing by 1,000 tokens a request, each request recording ``reads``."""
    n = len(reads)
    items = [{"step": 0, "kind": "system", "chars": 4 * first, "tokens": first}]
    items += [{"step": k, "kind": "user_text", "chars": 4000, "tokens": 1000} for k in range(n)]
    ts = np.cumsum([0.0] + list(gaps or [10.0] * (n - 1)))
    reqs = [
        {
            "step": k,
            "ts": "2026-01-01T00:00:00+00:00",
            "prompt_tokens": first + 1000 * (k + 1),
            "cache_read": reads[k],
            "input_tokens": first + 1000 * (k + 1) - reads[k],
        }
        for k in range(n)
    ]
    run = build("r", items, reqs, "real:test", model)
    run.req_ts[:] = 1.7e9 + ts
    return run


def test_fit_matches_the_recorded_share_in_tokens():
    """Requests 1-9 could read the previous prompt; 6 of them did, 3 read only the warm 2,048 tokens. The hit rate
    is the one at which the replay reads the share of the prompt the log shows read, not the 6 of 9 requests that
    reached it (a count share gives too few reads: it puts misses on long prompts the log had on short ones)."""
    reads = [2048] + [(_prompt(k - 1) // 128 * 128 if k % 3 else 2048) for k in range(1, 10)]
    run = _run(reads)
    fit = fit_run(run, "openai")
    assert (fit.source, fit.reached, fit.informative) == ("fit", 6, 9) and fit.ttl is None
    cols, _ = simulate_run(replace(run, warm=2048), make_policy("recorded"), fit.cache(), Budget(10**9))
    recorded = sum(reads) / run.rec_prompt.sum()
    assert cols["cached_tokens"].sum() / cols["prompt_tokens"].sum() == pytest.approx(recorded, abs=5e-4)
    assert fit.hit_rate == pytest.approx(0.6726, abs=1e-4) and abs(fit.hit_rate - 6 / 9) > 0.005


def test_fit_lengthens_the_ttl_only_on_a_hit_after_a_long_idle_gap():
    reads = [0] + [_prompt(k - 1) // 128 * 128 for k in range(1, 6)]
    gaps = [10.0, 10.0, 1500.0, 10.0, 10.0]
    assert fit_run(_run(reads, gaps), "openai").ttl == 3600.0
    reads[3] = 0  # the read after the gap missed: nothing says the cache outlived the default
    assert fit_run(_run(reads, gaps), "openai").ttl is None


def test_a_hit_past_every_documented_retention_sets_the_ttl_to_its_gap():
    """olivia215215/cabinet-governance 14e0e1d0 (Claude Code driving deepseek-v4-pro) read its 70,272-token prefix
    after 44.5 h idle; a TTL capped at 24 h expired it, and the replay billed the session 58% over its usage. The
    kept prefix is also no loss the bill_gap explains."""
    from replay.simulator.cache_kept import cache_kept

    reads = [0] + [_prompt(k - 1) // 64 * 64 for k in range(1, 6)]
    gaps = [10.0, 10.0, 160_200.0, 10.0, 10.0]
    run = _run(reads, gaps, model="deepseek-v4-pro")
    fit = fit_run(run, "deepseek")
    assert fit.ttl == 160_200.0
    fitted = replace(run, cache_fit=fit, cache_ttl=3600.0, rec_write=np.zeros(6, np.int64))  # a zero write split
    cols, _ = simulate_run(fitted, make_policy("recorded"), fit.cache(), Budget(10**9))
    assert cols["cached_tokens"][3] == reads[3]
    assert len(cache_kept(fitted).past_ttl) == 0


def test_a_run_that_never_read_its_cache_is_uncached():
    run = _run([0] * 6)
    fit = fit_run(run, "openai")
    assert fit == CacheFit("none", source="uncached")
    cols, _ = simulate_run(run, make_policy("recorded"), fit.cache(), Budget(10**9))
    assert cols["cached_tokens"].sum() == 0
    assert fit_run(_run([0]), "openai") is None  # one request proves nothing


def test_a_runs_cache_comes_from_its_own_log_alone():
    """A run with no informative read takes the defaults, whatever other runs are loaded with it (a pooled
    profile made a sweep's shards disagree with the whole sweep)."""
    full = [0] + [_prompt(k - 1) // 128 * 128 for k in range(1, 6)]
    half = [0] + [_prompt(k - 1) // 128 * 128 if k % 2 else 0 for k in range(1, 6)]
    runs = [replace(r, run_id=f"r{i}") for i, r in enumerate([_run(full), _run(half), _run([2048])])]
    together = fit_caches(runs, {})
    assert [f.cache_fit.source for f in together] == ["fit", "fit", "default"]
    assert [fit_caches([r], {})[0].cache_fit for r in runs] == [f.cache_fit for f in together]


def test_one_informative_request_is_a_fit_of_its_own():
    """A two-request gemini-cli session whose second request missed the cache (LAF-US/IDAHO-VAULT
    2026-03-29T01-38: both read only the warm prefix) was replayed at the documented hit rate 1 and billed 10.4%
    under its recorded usage; its one informative request fits it: a hit rate of 0, the recorded share."""
    reads = [2048, 2048]
    run = _run(reads, model="gemini-2.5-pro")
    fit = fit_run(run, "gemini")
    assert fit is not None and (fit.source, fit.reached, fit.informative, fit.hit_rate) == ("fit", 0, 1, 0.0)
    cols, _ = simulate_run(replace(run, warm=2048), make_policy("recorded"), fit.cache(), Budget(10**9))
    assert cols["cached_tokens"].tolist() == reads
    hit = fit_run(_run([2048, _prompt(0) // 128 * 128], model="gemini-2.5-pro"), "gemini")
    assert hit is not None and (hit.reached, hit.informative) == (1, 1) and hit.hit_rate == pytest.approx(1, abs=0.005)


def test_a_run_flagged_unreconstructable_still_fits_its_own_reads():
    """The flag says the log lacks some of the prompt, not that the server's reads are unknown: the fit matches the
    recorded share as on any run (the documented default, every request reaching the cache, reads far more)."""
    reads = [2048] + [(_prompt(k - 1) // 128 * 128 if k % 3 else 2048) for k in range(1, 10)]
    flagged = replace(_run(reads), unreconstructable="content outside the log: at 9 of 10 requests")
    fit = fit_run(flagged, "openai")
    assert fit is not None and fit.source == "fit"
    assert fit == fit_run(_run(reads), "openai")
