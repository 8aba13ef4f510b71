"""The cache model of each run, calibrated from its recorded cache reads the way the prompt prefix is calibrated.

Which model: the one of the provider that served the run (``provider_cache``). Its parameters, in this order:

1. ``uncached``: every request with usage recorded a cache read of 0 where the provider's cache would have read
   something: the server had no cache (a self-hosted model, a proxy without one). Simulated with no cache. Not
   under explicit breakpoints whose log records a write: that server caches (``_wrote``).
2. ``fit``: an automatic cache (OpenAI, Gemini, DeepSeek) with enough informative requests of its own, also on a
   run flagged unreconstructable: its recorded reads are still the server's, and the fit matches a share of the
   prompt, which content the log lacks moves on both sides (the provider's default hit rate of 1 is no better
   guess: gemini-cli sessions whose CLI logs no tool calls read 0.78-0.83 of their prompts where the default
   replays 0.94-0.95, costing 13-41% too little). Replayed under the recorded policy, each
   request k has the prefix its conversation left cached (``m_k``, every request reaching the server that holds
   it) and the warm prefix alone (``w_k``, what a request that spills reads). A request is informative when
   m_k exceeds w_k by at least one cache step; it *reached* the conversation's server when its recorded read is
   past halfway from w_k to m_k (as shares of the recorded and the replayed prompt).
   ``hit_rate`` is the one at which the replay's expected reads, as a share of its prompt, equal the share of
   the recorded prompt the log shows read (matched in tokens: a miss on a short prompt costs less than one on a
   long prompt, a partial read is part of a hit); how many informative requests reached it is kept for the label.
   ``ttl`` is the provider's default unless a request after a longer idle gap still reached the conversation's
   prefix; then the shortest documented retention covering that gap, or the gap itself past them all (DeepSeek
   documents none: "hours to days"; olivia215215/cabinet-governance 14e0e1d0 read its 70,272-token prefix after
   44.5 h).
3. ``default``: the model's documented defaults (hit rate 1), also for a run with no informative request of its
   own: a fit pooled over other runs would depend on which runs are loaded together (a ``--runs`` pattern, a
   sweep's shard), and one run's figures must not. One informative request is enough for a fit, as a request
   per term is for the prompt's: gemini-cli sessions of two requests whose second missed the cache replayed at
   the default 10-43% under their recorded usage (LAF-US/IDAHO-VAULT 2026-03-29T01-38: -10.4%, its fit 0.0%).
   Anthropic runs stay here: explicit breakpoints and the TTL their log records (``replay.simulator.fidelity``)
   leave nothing to fit.

``fit_run(..., upto=k)`` fits on the first k requests only: ``replay fidelity`` scores such a fit on the rest of the
run (out of sample), so the fit cannot echo the share it is judged on. A hit rate from fewer than
``MIN_PREDICTIVE`` informative requests reproduces the requests it came from but does not predict others: one
request's hit or miss moves it by more than 1/20, the 5-point target on a share (msa-live django: one full miss on
a 53k prompt among 10 made its first half's rate 0.85, the second half read 98.6%). ``predictive`` keeps such a
fit's TTL (an observed reach across a gap is a fact) and takes the provider's documented hit rate.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from replay.metrics.prices import DEFAULT_PRICING
from replay.policies import Budget, make_compiled
from replay.run_arrays import RunArrays
from replay.simulator.caches import CacheModel, OpenAIAuto, anthropic_min_cacheable, make_cache, minimum_written
from replay.simulator.kernels.caches import cache_params
from replay.simulator.kernels.corpus import trace_kernel
from replay.simulator.kernels.dispatched import kernel_params
from replay.simulator.kernels.driver import T_CACHED, T_PROMPT, T_WRITTEN
from replay.simulator.kernels.packed import pack
from replay.simulator.provider_caches import provider_cache_of
from replay.simulator.run_start import warm_tokens, with_start
from replay.simulator.server_cache import with_reads_past_conversation, with_server_cache

AUTOMATIC = ("openai", "deepseek", "gemini")
RETENTION = (600.0, 3600.0, 86_400.0)  # OpenAI: 5-10 min idle, up to 1 h off-peak, 24 h extended retention
MIN_INFORMATIVE = 1  # informative requests a run (or a model of it) needs for a fit of its own
MIN_PREDICTIVE = 20  # informative requests a fitted hit rate needs to predict requests it was not fitted on
NEVER = 1e12  # a TTL no gap reaches
_BIG = Budget(10**9, 0)


@dataclass(frozen=True)
class CacheFit:
    """One run's cache model: its name (``none``: served uncached), best-effort hit rate, TTL (None: the model's
    default), where they came from and how many informative requests the fit counted (reached / informative)."""

    name: str
    hit_rate: float = 1.0
    ttl: float | None = None
    source: str = "default"
    reached: int = 0
    informative: int = 0
    # per model the log names that has informative requests of its own: (model, hit rate, informative requests);
    # its requests reach their server at that rate (each model is served, and cached, apart: ``model_rates``)
    by_model: tuple[tuple[str, float, int], ...] = ()
    # Anthropic: the minimum cacheable prefix where the log's own writes show a smaller one than the model's
    # documented minimum (``written_minimum``); 0: the documented one
    min_tokens: int = 0

    def request_rates(self, models: tuple[str | None, ...]) -> np.ndarray:
        """Per request (``models``: the model each names), the hit rate of its model where ``by_model`` has one,
        -1 (the run's ``hit_rate``) elsewhere."""
        rates = {m: rate for m, rate, _ in self.by_model}
        return np.array([rates.get(m, -1.0) if m else -1.0 for m in models], dtype=np.float64)

    def cache(self) -> CacheModel:
        """A fresh cache model with these parameters."""
        if self.name not in AUTOMATIC:
            return make_cache(self.name, **({"min_cacheable": self.min_tokens} if self.min_tokens else {}))
        params = {"hit_rate": self.hit_rate} | ({"ttl": self.ttl} if self.ttl is not None else {})
        return make_cache(self.name, **params)

    def label(self) -> str:
        """One line for tables: model, parameters, source."""
        if self.name not in AUTOMATIC:
            shown = f"; min {self.min_tokens:,} as its writes show" if self.min_tokens else ""
            return f"{self.name} ({self.source}{shown})"
        ttl = self.ttl if self.ttl is not None else getattr(make_cache(self.name), "ttl", 0.0)
        counts = f", {self.reached}/{self.informative} reached" if self.source == "fit" else ""
        own = "".join(f", {m} {rate:.2f}" for m, rate, _ in self.by_model)
        return f"{self.name} hit_rate={self.hit_rate:.2f}{own} ttl={ttl:g}s ({self.source}{counts})"


def predictive(fit: CacheFit) -> CacheFit:
    """``fit`` as a prediction for requests it was not fitted on: a hit rate from fewer than MIN_PREDICTIVE
    informative requests gives way to the provider's documented one (1), its TTL kept."""
    if fit.source != "fit":
        return fit
    if fit.informative < MIN_PREDICTIVE:
        return replace(fit, hit_rate=1.0, source="default", by_model=())
    return replace(fit, by_model=tuple(m for m in fit.by_model if m[2] >= MIN_PREDICTIVE))


def provider_cache(fmt: str, model: str | None) -> str:
    """The cache model of the provider that served a run (replay.simulator.provider_caches, the one definition
    billing prices it by): Anthropic's for Claude models; else, for a harness whose requests take ``cache_control``
    breakpoints (Claude Code), the provider's breakpoint model where its API has one (MiniMax's
    Anthropic-compatible endpoint; an undocumented provider is taken to honour them), otherwise the automatic
    cache of the model's provider in the price data (OpenAI's rules for an undocumented provider)."""
    name = (model or "").lower()
    if "claude" in name or "anthropic" in name:
        return "anthropic"
    prices = DEFAULT_PRICING.prices(model)
    own = provider_cache_of(prices.provider, prices.cache_read is not None)
    return (own.explicit or own.automatic) if fmt.startswith("claude") else own.automatic


def recorded_hits(run: RunArrays, caches: list[CacheModel], column: int | None = None) -> list[np.ndarray]:
    """Per-request cached tokens of ``run`` replayed under its recorded policy, one array per cache model
    (``column``: another per-request column of the trace, replay.simulator.kernels.driver.T_*), from the warm
    prefix its log shows."""
    policy = make_compiled("recorded")
    packed = pack([replace(run, warm=warm_tokens(run), cache_fit=None)])  # each cache's own hit rate throughout
    p = kernel_params(policy, _BIG)
    tflag = packed.tool_flags(policy.tool_flags(packed.tool_names))
    col = T_CACHED if column is None else column
    return [
        trace_kernel(policy.code, policy.name, p, cache_params(c, run.model), packed.arrays, tflag, 0)[1][:, col].copy()
        for c in caches
    ]


def _reached(
    read: np.ndarray, rec_prompt: np.ndarray, cold: np.ndarray, full: np.ndarray, prompt: np.ndarray
) -> np.ndarray:
    """Requests whose recorded read, as a share of the recorded prompt, is past halfway from the warm prefix to
    the conversation's cached prefix, as shares of the replayed prompt (shares: a prompt the log under- or
    over-counts by a constant does not decide)."""
    return read / np.maximum(rec_prompt, 1) >= (cold + full) / 2 / prompt


def _recorded(run: RunArrays, upto: int | None) -> np.ndarray:
    """Requests with recorded prompt and cache-read usage (the first ``upto`` only)."""
    have = (run.rec_prompt > 0) & (run.rec_cache_read >= 0)
    if upto is not None:
        have[upto:] = False
    return have


def _wrote(run: RunArrays, name: str, have: np.ndarray) -> bool:
    """Under explicit breakpoints (``anthropic``), the log records a cache write on a request with usage: the
    server caches, though it read nothing back (LAF-US/IDAHO-VAULT 5c04fe06: two requests of Haiku 4.5 that each
    wrote their whole prompt; replayed uncached, their writes were priced as input, -19%)."""
    return name == "anthropic" and len(run.rec_write) == run.n_requests and bool((run.rec_write[have] > 0).any())


def _never_wrote(run: RunArrays, name: str, have: np.ndarray) -> bool:
    """Under explicit breakpoints (``anthropic``), the log records a cache write of 0 on every request with usage
    where the cache model would have written: the harness set no breakpoint (OpenHands through a LiteLLM proxy
    without prompt caching), so nothing was cached even on a run too short to show a read."""
    if name != "anthropic" or len(run.rec_write) != run.n_requests:
        return False
    written = recorded_hits(run, [make_cache(name)], T_WRITTEN)[0]
    would = have & (written > 0)
    return bool(would.any()) and bool((run.rec_write[would] == 0).all())


def fit_run(run: RunArrays, name: str, upto: int | None = None) -> CacheFit | None:
    """The run's own fit under cache model ``name`` (see the module docstring), from its first ``upto`` requests;
    None when its reads say too little (the caller takes the model's defaults)."""
    have = _recorded(run, upto)
    if not have.any():
        return None
    rec = run.rec_cache_read
    if not (rec[have] > 0).any():
        if _wrote(run, name, have):  # that server caches: what it lost is the log's (replay.simulator.server_cache)
            return None
        mechanical = recorded_hits(run, [make_cache(name)])[0]
        if (mechanical[have] > 0).any() or _never_wrote(run, name, have):
            return CacheFit("none", source="uncached")
        return None
    if name not in AUTOMATIC:
        return None
    base = make_cache(name)
    assert isinstance(base, OpenAIAuto)
    cold, unlimited, default = recorded_hits(run, [replace(base, hit_rate=0.0), replace(base, ttl=NEVER), base])
    prompt = np.maximum(recorded_hits(run, [make_cache("none")], T_PROMPT)[0], 1)
    step = max(base.step, 1)
    gap = np.diff(run.req_ts, prepend=np.nan)
    reached_long = (
        have
        & (default < unlimited)
        & (unlimited - cold >= step)
        & _reached(rec, run.rec_prompt, cold, unlimited, prompt)
    )
    ttl = base.ttl
    if reached_long.any():
        longest = float(np.nanmax(gap[reached_long]))
        # past every documented retention, the gap the log shows the prefix survived
        ttl = next((t for t in RETENTION if t >= longest and t > base.ttl), longest)
        default = recorded_hits(run, [replace(base, ttl=ttl)])[0]
    informative = have & (default - cold >= step)
    if informative.sum() < MIN_INFORMATIVE:
        return None
    reached = int(_reached(rec, run.rec_prompt, cold, default, prompt)[informative].sum())
    n = int(informative.sum())
    share = float(rec[have].sum() / run.rec_prompt[have].sum())
    cache = replace(base, ttl=ttl)
    rate = hit_rate_for_share(run, cache, have, prompt, share)
    by_model = model_rates(run, cache, have, informative, prompt)
    return CacheFit(name, rate, None if ttl == base.ttl else ttl, "fit", reached, n, by_model)


def model_rates(
    run: RunArrays, cache: OpenAIAuto, have: np.ndarray, informative: np.ndarray, prompt: np.ndarray
) -> tuple[tuple[str, float, int], ...]:
    """Each model's own hit rate on a run whose log names more than one (empty otherwise): the provider serves, and
    caches, each model on servers of its own (a switch reads nothing the other model cached:
    kernels.caches.switch_drops), so how often a request reaches the server holding its conversation is the
    model's, not the run's. One rate over both prices the misses at the wrong model: a gemini-cli session that
    moved from gemini-2.5-pro to gemini-2.5-flash-lite read 83% of its pro prompts and 49% of its flash-lite ones,
    and one rate of 76% billed it 7.7% over its recorded usage. A model with no informative request of its own
    keeps the run's rate."""
    models = run.req_model if len(run.req_model) == run.n_requests else ()
    names = sorted({m for m in models if m})
    if len(names) < 2:
        return ()
    out = []
    for name in names:
        own = have & np.array([m == name for m in models])
        n = int((own & informative).sum())
        if n < MIN_INFORMATIVE:
            continue
        share = float(run.rec_cache_read[own].sum() / run.rec_prompt[own].sum())
        out.append((name, hit_rate_for_share(run, cache, own, prompt, share), n))
    return tuple(out)


GRID = np.linspace(0.0, 1.0, 101)


def hit_rate_for_share(run: RunArrays, cache: OpenAIAuto, have: np.ndarray, prompt: np.ndarray, share: float) -> float:
    """The hit rate at which the replay's expected cache reads, as a share of its prompt over the requests ``have``,
    equal the recorded ``share`` (the share grows with the hit rate; 0 or 1 at the ends; linear between the
    points of a 0.01 grid). Matched in tokens, not in requests: misses the log shows on short prompts cost less
    than misses on long ones, and a partial read (Gemini) is a part of a hit, not a whole one."""
    total = float(prompt[have].sum())
    shares = np.array([h[have].sum() / total for h in recorded_hits(run, [replace(cache, hit_rate=q) for q in GRID])])
    if share <= shares[0]:
        return 0.0
    if share >= shares[-1]:
        return 1.0
    i = int(np.searchsorted(shares, share))  # shares[i - 1] < share <= shares[i]
    lo, hi = shares[i - 1], shares[i]
    return round(float(GRID[i - 1] + (GRID[i] - GRID[i - 1]) * (share - lo) / max(hi - lo, 1e-12)), 4)


def request_ttls(run: RunArrays, fmt: str, name: str) -> np.ndarray:
    """Per request, the default TTL of the cache of the provider serving its model where that is not the run's cache
    model ``name`` (0 elsewhere; empty when no request has one): a Cline task that moved from xAI's grok to Claude
    through one router (a real task: Anthropic's 5 minutes lost a prefix after 586 s idle that xAI's automatic cache,
    the run's, would have kept). The cache model itself stays the run's: its entries are the same prefixes."""
    models = run.req_model
    if len(models) != run.n_requests:
        return np.zeros(0, np.float64)
    ttl = {}  # per model the log names: its provider's TTL where that is not the run's cache model, else 0
    for model in set(models) - {None, ""}:
        other = provider_cache(fmt, model)
        ttl[model] = float(getattr(make_cache(other), "ttl", 0.0)) if other != name else 0.0
    out = np.array([ttl.get(model, 0.0) for model in models], dtype=np.float64)
    return out if out.any() else np.zeros(0, np.float64)


def written_minimum(run: RunArrays) -> int:
    """Anthropic's minimum cacheable prefix as the run's log shows it, when under its model's documented one (0:
    the documented one). A request that wrote cache held a prefix of its read plus its write at its last breakpoint,
    so the server's minimum is no more than that: the austinweitao/claude-backup workflow agents on claude-opus-4-8
    write prefixes of 1,267 to 2,415 tokens, where the table's 4,096 for Opus 4.5 on would cache nothing."""
    if len(run.rec_write) != run.n_requests or len(run.rec_cache_read) != run.n_requests:
        return 0
    wrote = run.rec_write > 0
    if not wrote.any():
        return 0
    documented = anthropic_min_cacheable(run.model)
    shown = minimum_written(documented, int((run.rec_cache_read[wrote] + run.rec_write[wrote]).min()))
    return shown if shown < documented else 0


def fit_caches(runs: list[RunArrays], formats: dict[str, str]) -> list[RunArrays]:
    """``runs`` with their cache model (``RunArrays.cache_fit``): their own fit, uncached, or the default; how each
    starts under its provider's cache (``replay.simulator.run_start``), the TTL of the requests another provider
    served (``request_ttls``) and what the server's cache did on its own (``replay.simulator.server_cache``); each
    run from its own log alone."""
    out = []
    for r in runs:
        fmt = formats.get(r.run_id, "")
        name = provider_cache(fmt, r.model)
        r = replace(with_start(r, name), req_ttl=request_ttls(r, fmt, name))
        if name in AUTOMATIC:  # fitted with what other requests wrote, as it is replayed
            r = with_reads_past_conversation(r)
        fit = fit_run(r, name) or CacheFit(name)
        if fit.name == "anthropic":
            fit = replace(fit, min_tokens=written_minimum(r))
        out.append(with_server_cache(replace(r, cache_fit=fit)))
    return out
