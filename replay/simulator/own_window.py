"""A run replayed on its harness's own window: what ``replay fidelity`` checks, and what ``replay simulate`` gives a
user who names the run's own policy without choosing a window.

A run loaded with ``own_windows`` (replay.simulator.load) carries the preset of the harness that recorded it
(``RunArrays.own_preset``: ``harness_preset`` of the run's model) and, per request, the window, limit and trigger of
the preset of the model that served it where those are not the run's (replay.simulator.request_windows: a Claude
Code ``/model`` switch, a Codex turn's logged ``model_context_window``, a Codex ``comp_hash`` change that compacts
at once). Under the ``recorded`` policy or that preset by name, the run is replayed on that preset's window (and,
for the preset, the knobs the run's model sets, under the user's ``--set``) with those per-request values, as
fidelity replays it. Under any other policy, or with a window the user chose, the budget's window holds for every
request. A preset whose limit does not depend on the window (OpenHands, SWE-agent: ``BIG``) keeps the budget's.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from replay.policies import PRESETS, Budget, canonical, make_policy
from replay.policies.base import AnyPolicy
from replay.run_arrays import RunArrays
from replay.simulator.harness_preset import BIG

RECORDED = "recorded"


@dataclass(frozen=True)
class OwnWindows:
    """Replay each run on its harness's own window when ``policy`` (a name as the user gave it) is ``recorded`` or
    that run's own preset; ``sets``: the user's knob values, which win over the preset's and the model's."""

    policy: str
    sets: dict = field(default_factory=dict)

    @staticmethod
    def can_be_own(policy: str, sets: dict) -> bool:
        """Whether ``policy`` may be some run's own (``recorded`` or a harness preset) with no window fixed by a
        knob (``context_window``)."""
        return canonical(policy) in (RECORDED, *PRESETS) and not sets.get("context_window")

    def settings(self, run: RunArrays, policy: AnyPolicy, budget: Budget) -> tuple[RunArrays, AnyPolicy, Budget]:
        """The run, policy and budget ``run`` is replayed with: on its own preset's window (and that preset's knobs
        for its model) where it is replayed on its harness's own policy, else ``policy`` and ``budget`` for every
        request (the run without its per-request windows)."""
        own = run.own_preset
        name = canonical(self.policy)
        if own is None or name not in (RECORDED, own[0]):
            return plain(run), policy, budget
        preset, window, knobs = own
        chosen = policy if name == RECORDED else make_policy(preset, {**knobs, **self.sets})
        return run, chosen, budget if window == BIG.window else Budget(window, budget.reserve)


def own_choice(run: RunArrays) -> tuple[str, Budget, dict] | None:
    """The run's own preset as ``harness_preset`` gives it (name, the window it ran against, the knobs its model
    sets), as ``load_runs(own_windows=True)`` chose it; None when the log does not say enough for one."""
    if run.own_preset is None:
        return None
    name, window, knobs = run.own_preset
    return name, Budget(window, 0), knobs


def plain(run: RunArrays) -> RunArrays:
    """``run`` with no per-request window, limit or trigger of its own: the budget's and the policy's hold."""
    if not len(run.req_window) and not len(run.req_limit) and not len(run.req_trigger):
        return run
    return replace(
        run,
        req_window=np.zeros(0, np.int64),
        req_limit=np.zeros(0, np.float64),
        req_trigger=np.zeros(0, np.int64),
    )
