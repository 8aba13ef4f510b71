"""Policy base: per-run state as numpy arrays, triggers split from decisions, one View per request."""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar, TypeAlias

import numpy as np

from replay.errors import ReplayError
from replay.policies.config import PolicyConfig
from replay.policies.kernel import ESTIMATORS, N_PARAMS, P_CODE, P_ESTIMATOR, P_RESERVE, P_WINDOW
from replay.policies.space import Knob
from replay.policies.view import DROPPED, N_FORMS, ORIGINAL, View
from replay.run_arrays import TOOL_RESULT, RunArrays, chars4

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


def estimate(run: RunArrays, name: str, chars: np.ndarray | None = None) -> np.ndarray:
    """Token estimate per item by estimator ``name`` ('chars/4', 'chars/3' or 'real')."""
    c = run.chars if chars is None else chars
    if name == "real":
        return run.tokens.copy() if chars is None else chars4(c)
    return chars4(c) if name == "chars/4" else (np.asarray(c, dtype=np.int64) + 2) // 3


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
    ``setup`` and ``stages``; never mutate the run. Slower than the compiled built-ins: every request is a Python
    step.

    Why this loop (``step``, with ``replay.simulator.run._python_steps`` charging the cache) is a second copy of the
    compiled driver (``replay.simulator.kernels.driver.run_kernel``) and not a call into it: the driver is numba
    nopython code, specialised per policy code (``literally``) and dispatching to compiled ``setup``/``decide``
    through generated tables; it cannot call a Python object. Routing a Python policy through it would need (a) a
    driver specialisation whose decide step enters ``numba.objmode`` (free for the built-ins, whose
    specialisations never compile that branch) and (b) Python policies written against the driver's state arrays
    (``p, r, st``) instead of this class's forms and helpers: an API change for every user policy,
    ``examples/policies`` and ``docs/policies.md``. Until then tests/policies/test_examples.py holds the two
    together: the compiled twin of ``examples/policies/keep_recent.py`` gives its views, request by request."""

    # -- per run -------------------------------------------------------------------------------
    def reset(self, run: RunArrays, budget: Budget) -> None:
        n = run.n_items
        self.run, self.budget = run, budget
        self.forms = np.zeros(n, dtype=np.int8)
        self.ftok = np.zeros((N_FORMS, n), dtype=np.int64)
        self.fest = np.zeros((N_FORMS, n), dtype=np.int64)
        self.ftok[ORIGINAL] = run.tokens
        self.fest[ORIGINAL] = estimate(run, getattr(self.config, "estimator", "chars/4"))
        self.ftok[1:5], self.fest[1:5] = run.tokens, self.fest[ORIGINAL]  # until a form is defined
        self.idx = np.arange(n)
        self.summary_at, self.summary_id, self.summary_tokens, self.summary_est = -1, 0, 0, 0
        self.dirty, self.prev_end, self.end, self.k = 0, 0, 0, 0
        self.flags = {"emergency": False, "summarised": False}
        self.setup()
        if not self.replays_recorded:  # the harness's own summaries and re-sent copies are not this policy's
            gone = run.events.recorded_only
            self.ftok[:, gone], self.fest[:, gone] = 0, 0

    def setup(self) -> None:
        """Precompute form costs for this run."""

    def define(self, form: int, real: np.ndarray, est: np.ndarray) -> None:
        self.ftok[form], self.fest[form] = real, est

    def stages(self) -> list[tuple[Callable[[], bool], Callable[[], None]]]:
        """(trigger, decide) pairs, run in order before every request."""
        return []

    def step(self, k: int) -> View:
        """Advance to request k (0, 1, 2... in order) and return V_k."""
        self.k, self.end = k, int(self.run.req_end[k])
        self.flags = {"emergency": False, "summarised": False}
        self.drop_orphans()
        self.server_drops()
        for trigger, decide in self.stages():
            if trigger():
                decide()
        return self.emit()

    def server_drops(self) -> None:
        """Items the server no longer counts from this request on, whatever the policy sends (an earlier turn's
        reasoning: ``RunArrays.gone_at``)."""
        gone = self.run.gone_at[: self.end]
        self.set_forms(np.flatnonzero((gone >= 0) & (gone <= self.k) & (self.forms[: self.end] != DROPPED)), DROPPED)

    def drop_orphans(self) -> None:
        """A result arriving after its call was dropped is dropped too: a call is never split from its result (but
        where tool calls are text, ``RunArrays.text_tools``)."""
        r = self.run
        if r.text_tools:
            return
        new = np.arange(self.prev_end, self.end)
        late = new[(r.kind[new] == TOOL_RESULT) & (r.pair[new] >= 0) & (r.pair[new] < new)]
        self.set_forms(late[self.forms[r.pair[late]] == DROPPED], DROPPED)

    # -- helpers for decisions -----------------------------------------------------------------
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
        """Drop items together with their call/result partners (alone where tool calls are text)."""
        positions = np.asarray(positions, dtype=np.int64)
        if self.run.text_tools:
            self.set_forms(positions, DROPPED)
            return
        partners = self.run.pair[positions]
        both = np.concatenate([positions, partners[(partners >= 0) & (partners < self.end)]])
        self.set_forms(np.unique(both), DROPPED)

    def emit(self) -> View:
        e = self.end
        forms = self.forms[:e].copy()
        view = View(
            k=self.k,
            end=e,
            forms=forms,
            seg_tokens=self.ftok[forms, self.idx[:e]],
            seg_est=self.fest[forms, self.idx[:e]],
            summary_at=self.summary_at,
            summary_id=self.summary_id,
            summary_tokens=self.summary_tokens,
            summary_est=self.summary_est,
            dirty_from=min(self.dirty, self.prev_end),
            **self.flags,
        )
        self.prev_end, self.dirty = e, e
        return view


AnyPolicy: TypeAlias = CompiledPolicy | Policy  # what make_policy gives: a built-in, or a policy written in Python
