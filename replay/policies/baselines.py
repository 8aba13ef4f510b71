"""Baselines: full history (no policy) and drop-oldest."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from replay.jit import compiled
from replay.policies.base import CompiledPolicy
from replay.policies.config import PolicyConfig, knob
from replay.policies.kernel import (
    P_POLICY,
    P_RESERVE,
    P_WINDOW,
    S_END,
    S_POLICY,
    drop,
    est_of,
    est_total,
    pinned,
    prefix_end,
)
from replay.policies.space import Knob
from replay.policies.view import DROPPED


@dataclass(frozen=True)
class FullConfig(PolicyConfig):
    """Send everything, every time."""

    kind = "full"
    estimator: Literal["chars/4", "chars/3", "real"] = "real"


class Full(CompiledPolicy):
    name = "full"
    Config = FullConfig
    config: FullConfig  # PolicyBase.__init__ checks the instance is a Config
    kernel = None  # no setup, no decide: the view is the whole history


@dataclass(frozen=True)
class DropOldestConfig(PolicyConfig):
    """Drop the oldest items (calls with their results) until the estimate fits the window minus reserve."""

    kind = "drop_oldest"
    estimator: Literal["chars/4", "chars/3", "real"] = "real"
    margin: float = knob(0.0, 0.0, 0.9, "safety margin on the estimate (fraction)")
    keep_first: int = knob(1, 0, 1000, "leading non-system items never dropped")


(P_MARGIN, P_KEEP_FIRST) = range(P_POLICY, P_POLICY + 2)
S_FROM = S_POLICY  # every item from the first droppable position up to here is dropped (drops are for good)


class DropOldest(CompiledPolicy):
    name = "drop_oldest"
    Config = DropOldestConfig
    config: DropOldestConfig  # PolicyBase.__init__ checks the instance is a Config
    space = (
        Knob("margin", 0.0, 0.3, 0.1, weight=2, prefer="high"),
        Knob("keep_first", 0, 4, 1, integer=True, weight=1, step=1),
    )

    def knobs(self, p: np.ndarray, budget) -> None:
        p[P_MARGIN], p[P_KEEP_FIRST] = self.config.margin, self.config.keep_first


@compiled(borrowed=True)
def decide(p, r, st):
    """Over (window - reserve) / (1 + margin) by estimate: drop from the oldest item after the prefix and the first
    ``keep_first`` items, with call/result partners, until the excess is gone; never the newest output's call.
    The search starts after the items dropped before (S_FROM), so a request's work is what it drops."""
    limit = (p[P_WINDOW] - p[P_RESERVE]) / (1 + p[P_MARGIN])
    if not est_total(st) > limit:
        return
    end = st.s[S_END]
    excess = est_total(st) - limit
    first = max(prefix_end(r, st) + np.int64(p[P_KEEP_FIRST]), st.s[S_FROM])
    while first < end - 1 and st.forms[first] == DROPPED:
        first += 1
    st.s[S_FROM] = first
    for q in range(first, end - 1):
        if excess <= 0:
            break
        if st.forms[q] == DROPPED or pinned(r, q):
            continue
        partner = r.pair[q]
        cost = est_of(st, q) + (est_of(st, partner) if 0 <= partner < end and st.forms[partner] != DROPPED else 0)
        if partner >= end - 1 and partner >= 0:
            break  # never drop a call whose result is the newest output
        drop(r, st, q)
        excess -= cost


POLICIES = [Full, DropOldest]
