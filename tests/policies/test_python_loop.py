"""A policy written in Python runs in the compiled request loop of the built-ins: everything but its decision (the
view, the orphan and server drops, the cache, the counts, the rows) is that loop's."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from replay.policies import Budget, Policy, make_policy
from replay.policies.view import PLACEHOLDER
from replay.run_arrays import RecordedEvents
from replay.simulator.caches import make_cache
from replay.simulator.kernels.trace import views_of
from replay.simulator.run import simulate_run
from replay.testing import synth_run


class SendsEverything(Policy):
    """Never changes a form: the full history, written in Python."""

    name = "sends_everything"


@pytest.mark.parametrize("cache", ["anthropic", "openai", "none"])
def test_a_python_no_op_is_the_full_history_request_by_request(cache: str) -> None:
    run = synth_run(50, seed=4)
    budget = Budget(40_000, 4_000)
    mine, row = simulate_run(run, SendsEverything(), make_cache(cache), budget)
    full, full_row = simulate_run(run, make_policy("full"), make_cache(cache), budget)
    own = {"est_tokens"}  # the estimate is each policy's own (this one: chars/4)
    assert mine.keys() == full.keys() and all((mine[c] == full[c]).all() for c in full.keys() - own), cache
    assert row["overflow_incidents"] > 0 and row.keys() == full_row.keys()
    same = [k for k in row if row[k] == full_row[k] or (row[k] != row[k] and full_row[k] != full_row[k])]  # NaN
    assert set(row) - set(same) <= own


class RepricesPlaceholders(Policy):
    """Placeholders for the first two results at request 3; at request 6 every placeholder costs 1 token."""

    name = "reprices"

    def setup(self) -> None:
        self.define(PLACEHOLDER, np.minimum(self.run.tokens, 50), np.minimum(self.run.tokens, 50))

    def stages(self):
        return [(lambda: self.k == 3, self.shrink), (lambda: self.k == 6, self.reprice)]

    def shrink(self) -> None:
        self.set_forms(self.results()[:2], PLACEHOLDER)

    def reprice(self) -> None:
        ones = np.ones(self.run.n_items, np.int64)
        self.define(PLACEHOLDER, ones, ones)


def test_redefining_a_shown_form_marks_the_view_changed_there() -> None:
    run = synth_run(10, seed=2)
    views = views_of(run, RepricesPlaceholders(), Budget()).views
    first = int(np.flatnonzero(views[3].forms == PLACEHOLDER)[0])
    assert views[6].seg_tokens[first] == 1 and views[5].seg_tokens[first] == min(run.tokens[first], 50)
    assert views[6].dirty_from <= first < views[5].end  # the cache re-reads from the repriced item


class KeepsRecorded(SendsEverything):
    """The full history including what the harness's own events added (as the built-in ``recorded`` sees it)."""

    name = "keeps_recorded"
    replays_recorded = True


def test_the_harness_own_items_count_only_for_a_policy_that_replays_them() -> None:
    base = synth_run(12, seed=5)
    marked = np.zeros(base.n_items, dtype=bool)
    marked[[3, 4]] = True  # as if the harness re-sent these after a summary of its own
    run = dataclasses.replace(base, recorded=RecordedEvents.empty(base.n_items))
    run = dataclasses.replace(run, recorded=dataclasses.replace(run.events, recorded_only=marked))
    dropped, kept = (views_of(run, p, Budget()).views[-1] for p in (SendsEverything(), KeepsRecorded()))
    assert (dropped.seg_tokens[[3, 4]] == 0).all() and (kept.seg_tokens[[3, 4]] == run.tokens[[3, 4]]).all()
    assert kept.prompt_tokens - dropped.prompt_tokens == run.tokens[[3, 4]].sum() > 0
