"""Names that explain themselves: each policy's description says what it does (and, for the seed policies, where
it comes from); calibrate's and fidelity's one-line help each state its job."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from replay.cli import app
from replay.policies import policy_class, registry


@pytest.mark.parametrize("name", sorted(registry()))
def test_each_policy_describes_what_it_does(name: str):
    doc = (policy_class(name).Config.__doc__ or "").strip()
    assert len(doc.split()) >= 4 and not re.fullmatch(r"Seed policy [A-C]\.", doc), (name, doc)
    if name in ("seed_a", "seed_b", "seed_c"):
        assert "seed policy" in doc.lower() and doc.split()[0].lower() != "seed", doc  # what first, origin after


def test_calibrate_and_fidelity_each_state_their_job_in_one_line():
    res = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "80"})
    lines = {line.split()[0]: line for line in res.output.splitlines() if line.strip() and line.startswith("  ")}
    assert "Check a tokenizer against recorded usage." in lines["calibrate"]
    assert "Check the simulator against recorded runs." in lines["fidelity"]
