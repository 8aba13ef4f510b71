"""On the real corpus (late results, parallel calls, sidechains), no policy ever splits a call from its result where
the two are an API pair. Runs whose tool calls are text (Cline's XML format, ``RunArrays.text_tools``) have no pair
to keep: Cline's truncation keeps the results opening the first kept message though their calls went."""

from __future__ import annotations

import numpy as np
import pytest

from replay.policies import Budget, make_policy, registry
from replay.policies.view import DROPPED
from replay.simulator.kernels.trace import views_of
from replay.simulator.load import load_runs


@pytest.fixture(scope="module")
def corpus_runs(corpus_db):
    return load_runs(corpus_db)


@pytest.mark.parametrize("name", sorted(registry()))
def test_no_call_split_from_its_result_on_the_corpus(corpus_runs, name):
    paired = [run for run in corpus_runs if not run.text_tools]
    assert len(paired) < len(corpus_runs)  # the two Cline logs
    for run in paired:
        for k, view in enumerate(views_of(run, make_policy(name), Budget(32_768, 4_096)).views):
            end = view.end
            calls = np.flatnonzero((run.pair[:end] >= 0) & (run.pair[:end] < end))
            dropped = view.forms == DROPPED
            split = calls[dropped[calls] != dropped[run.pair[calls]]]
            assert not len(split), f"{name} {run.run_id} request {k}: items {split[:4].tolist()} lost their partner"
