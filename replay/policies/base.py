"""Policy base: per-run state as numpy arrays, triggers split from decisions, one View per request."""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, TypeAlias

import numpy as np

from replay.errors import ReplayError
from replay.policies.config import PolicyConfig
from replay.policies.kernel import (
    ESTIMATORS,
    N_PARAMS,
    P_CODE,
    P_ESTIMATOR,
    P_RESERVE,
    P_WINDOW,
    S_CHANGED_FROM,
    S_DIRTY,
    S_EMERGENCY,
    S_END,
    S_K,
    S_SUM_AT,
    S_SUM_EST,
    S_SUM_ID,
    S_SUM_TOK,
    S_SUMMARISED,
    S_TOT_EST,
    S_TOT_TOK,
    S_VIEW_TOK,
    SUMMARY_MADE,
)
from replay.policies.space import Knob
from replay.policies.view import DROPPED
from replay.run_arrays import TOOL_DEFS, TOOL_RESULT, RunArrays

DEFAULT_WINDOW = 200_000  # every command's default context window (tokens)
WINDOW_HELP = f"Context window, tokens (the same default, {DEFAULT_WINDOW:,}, in every command)."


@dataclass(frozen=True, slots=True)
class Budget:
    """The hard limit: a prompt overflows when prompt + reserve > window."""

    window: int = DEFAULT_WINDOW
    reserve: int = 0

    def __post_init__(self) -> None:
        for key in ("window", "reserve"):
            value = getattr(self, key)
            try:
                whole = operator.index(value)  # ints and numpy ints; not bools-as-numbers, floats or strings
            except TypeError:
                whole = None
            if whole is None or isinstance(value, bool):
                raise ReplayError(f"{key}={value!r}: expected a whole number of tokens")
        if self.window <= 0:
            raise ReplayError(f"window={self.window}: must be at least 1 token")
        if not 0 <= self.reserve < self.window:
            raise ReplayError(
                f"reserve={self.reserve}: allowed 0 to window - 1 ({self.window - 1:,}); the reserve is "
                "kept free for the reply, so it must leave room for a prompt"
            )

    @property
    def usable(self) -> int:
        return self.window - self.reserve


class PolicyBase:
    """Everything the project knows about a policy, on its class: the name, the typed knobs (``Config``, whose
    docstring is the help text), the tuning space `replay tune` sweeps (``space``) and the knobs that are triggers
    bound to the window (``limits``). The registry (``replay.policies.registry``) gives built-ins their ``code``."""

    name: ClassVar[str] = "base"
    Config: ClassVar[type[PolicyConfig]] = PolicyConfig
    replays_recorded: ClassVar[bool] = False  # True only for the policy that replays the log's own events
    space: ClassVar[tuple[Knob, ...]] = ()  # what `replay tune` sweeps; empty: not tunable
    code: ClassVar[int] = -1  # set by the registry for a registered compiled policy

    @classmethod
    def help(cls) -> str:
        """One line: the first paragraph of the config's docstring."""
        doc = (cls.Config.__doc__ or cls.__doc__ or "").strip()
        return " ".join(doc.split("\n\n")[0].split())

    def limits(self, window: int) -> list[tuple[str, float]]:
        """(knob, tokens at which it fires) for each trigger of this configuration that is bound to the window
        (`replay tune` warns when one cannot fire below window - reserve)."""
        return []

    def __init__(self, config: PolicyConfig | None = None) -> None:
        self.config = config if config is not None else self.Config()
        if not isinstance(self.config, self.Config):
            raise TypeError(f"{self.name}: config must be {self.Config.__name__}")


class CompiledPolicy(PolicyBase):
    """A built-in policy: typed knobs and one compiled definition, ``setup`` and ``decide`` in its module
    (``replay.policies.kernel``), which ``replay.simulator.kernels.driver`` runs for per-request views and sweeps
    alike. Subclasses write their knobs into the parameter vector (``knobs``) and, when a decision depends on tool
    names, the per-tool flags (``tool_flags``).

    ``kernel``: the module whose ``setup``/``decide`` the driver runs for this policy (default: the class's own
    module; None: neither, the view is the whole history)."""

    kernel: ClassVar[str | None] = ""

    @classmethod
    def kernel_module(cls) -> str | None:
        """The module holding this policy's compiled ``setup``/``decide`` (None: it has none)."""
        return cls.__module__ if cls.kernel == "" else cls.kernel

    def params(self, budget: Budget) -> np.ndarray:
        """The parameter vector the compiled definition reads (the simulation's own entries left 0)."""
        if self.code < 0:
            raise ReplayError(
                f"policy {self.name}: a compiled policy that is not registered has no code; add its module to "
                "POLICY_MODULES in replay/policies/__init__.py and run `python -m replay.policies.generate`"
            )
        p = np.zeros(N_PARAMS, dtype=np.float64)
        p[P_CODE], p[P_WINDOW], p[P_RESERVE] = self.code, budget.window, budget.reserve
        p[P_ESTIMATOR] = ESTIMATORS[getattr(self.config, "estimator", "chars/4")]
        self.knobs(p, budget)
        return p

    def knobs(self, p: np.ndarray, budget: Budget) -> None:
        """Write the policy's knobs into ``p[P_POLICY:]`` (the layout is the module's)."""

    def tool_flags(self, tool_names: tuple[str, ...]) -> np.ndarray:
        """Per tool name, the ``TF_*`` bits this configuration sets (replay.policies.kernel)."""
        return np.zeros(len(tool_names), dtype=np.int8)


class Policy(PolicyBase):
    """A policy written in Python (a user policy by import path): subclasses set ``Config`` and ``name``, override
    ``setup`` and ``stages``; never mutate the run. Slower than the compiled built-ins: every request calls back
    into Python.

    It runs in the same compiled request loop as the built-ins (``replay.simulator.kernels.driver.run_kernel``):
    the loop appends each request's items, drops orphaned results and what the server no longer counts, emits the
    view, charges the cache and counts; only the decision is this class's. The loop's specialisation for policies
    written in Python (``replay.policies.python_kernel``) enters ``numba.objmode`` to call ``attach`` once per run
    and ``advance`` before every request. ``forms``, ``ftok`` and ``fest`` are the loop's own state arrays, shared:
    change them through the helpers below, which also keep the first changed position (``dirty``) that the cache
    re-reads from."""

    # -- called by the compiled loop -----------------------------------------------------------
    def attach(self, run: RunArrays, budget: Budget, forms: np.ndarray, ftok: np.ndarray, fest: np.ndarray) -> None:
        """Start a run: the loop's state arrays (every form costs the item, by the policy's estimator, until
        ``setup`` defines it), then ``setup``."""
        self.run, self.budget = run, budget
        self.forms, self.ftok, self.fest = forms, ftok, fest
        self.idx = np.arange(run.n_items)
        self.summary_at, self.summary_id, self.summary_tokens, self.summary_est = -1, 0, 0, 0
        self.dirty, self.end, self.k = 0, 0, 0
        self.flags = {"emergency": False, "summarised": False}
        self.setup()

    def advance(self, s: np.ndarray) -> None:
        """Request ``s[S_K]``, its items appended (``s``: the loop's scalars, ``replay.policies.kernel``): run the
        stages, then hand the loop the view's totals, summary, flags and first changed position."""
        self.k, self.end, self.dirty = int(s[S_K]), int(s[S_END]), int(s[S_DIRTY])
        self.flags = {"emergency": False, "summarised": False}
        for trigger, decide in self.stages():
            if trigger():
                decide()
        e = self.end
        s[S_TOT_TOK] = s[S_VIEW_TOK] = int(self.ftok[self.forms[:e], self.idx[:e]].sum())
        s[S_TOT_EST] = int(self.seg_est().sum())
        s[S_DIRTY] = self.dirty
        s[S_CHANGED_FROM] = 0  # the view is compared whole: a form may have been set without a helper
        s[S_SUM_AT], s[S_SUM_ID], s[S_SUM_TOK], s[S_SUM_EST] = (
            self.summary_at,
            self.summary_id,
            self.summary_tokens,
            self.summary_est,
        )
        s[S_EMERGENCY] = int(self.flags["emergency"])
        s[S_SUMMARISED] = SUMMARY_MADE if self.flags["summarised"] else 0

    # -- to override ---------------------------------------------------------------------------
    def setup(self) -> None:
        """Precompute form costs for this run."""

    def stages(self) -> list[tuple[Callable[[], bool], Callable[[], None]]]:
        """(trigger, decide) pairs, run in order before every request."""
        return []

    # -- helpers for decisions -----------------------------------------------------------------
    def define(self, form: int, real: np.ndarray, est: np.ndarray) -> None:
        """Every item's ``form`` costs (real, est) from now on; a visible item whose real cost changes marks the
        view changed from there (as the compiled ``set_cost``)."""
        e, old = self.end, self.ftok[form].copy()
        self.ftok[form], self.fest[form] = real, est
        shown = np.flatnonzero((self.forms[:e] == form) & (self.ftok[form, :e] != old[:e]))
        if len(shown):
            self.dirty = min(self.dirty, int(shown[0]))

    def set_forms(self, positions: np.ndarray, form: int) -> None:
        positions = np.asarray(positions, dtype=np.int64)
        if len(positions):
            changed = positions[self.forms[positions] != form]
            if len(changed):
                self.forms[changed] = form
                self.dirty = min(self.dirty, int(changed.min()))

    def set_summary(self, at: int, real: int, est: int) -> None:
        at = min(at, self.end - 1)
        self.dirty = min(self.dirty, at if self.summary_at < 0 else min(at, self.summary_at))
        self.summary_at, self.summary_tokens, self.summary_est = at, int(real), int(est)
        self.summary_id += 1
        self.flags["summarised"] = True

    def seg_est(self, end: int | None = None) -> np.ndarray:
        e = self.end if end is None else end
        return self.fest[self.forms[:e], self.idx[:e]]

    def est_total(self) -> int:
        return int(self.seg_est().sum()) + (self.summary_est if self.summary_at >= 0 else 0)

    def over(self, limit: float) -> bool:
        return self.est_total() > limit

    def results(self, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Positions of tool results in [lo, hi) of the history."""
        hi = self.end if hi is None else hi
        return lo + np.flatnonzero(self.run.kind[lo:hi] == TOOL_RESULT)

    def prefix_end(self) -> int:
        """Number of leading system/tool_defs items in the history (never trimmed)."""
        return min(self.run.first_body, self.end)

    def pair_safe_start(self, start: int) -> int:
        """Move a cut at ``start`` back until no item in [start, end) has its call/result partner before it."""
        while True:
            seg = self.run.pair[start : self.end]
            early = seg[(seg >= 0) & (seg < start)]
            if not len(early):
                return start
            start = int(early.min())

    def drop(self, positions: np.ndarray) -> None:
        """Drop items together with their call/result partners (alone where tool calls are text); harness prefix
        that starts mid-run stays (``kernel.pinned``)."""
        positions = np.asarray(positions, dtype=np.int64)
        positions = positions[self.run.kind[positions] != TOOL_DEFS]
        if self.run.text_tools:
            self.set_forms(positions, DROPPED)
            return
        partners = self.run.pair[positions]
        both = np.concatenate([positions, partners[(partners >= 0) & (partners < self.end)]])
        self.set_forms(np.unique(both), DROPPED)


AnyPolicy: TypeAlias = CompiledPolicy | Policy  # what make_policy gives: a built-in, or a policy written in Python
