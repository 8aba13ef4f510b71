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


def test_descriptive_names_are_aliases_stored_under_one_name(tmp_path):
    """tiered_summary / sectioned_budget / spill_and_mark work wherever seed_a / seed_b / seed_c do, and what is
    stored (sweep ids, policy files) carries the one registered name."""
    from replay.policies import ALIASES, make_policy
    from replay.sweeps.policy_file import load_policy_file
    from replay.sweeps.spec import load_spec

    for alias, name in ALIASES.items():
        assert make_policy(alias).name == name and policy_class(alias) is policy_class(name)
    grid = (
        '[sweep]\npolicy = "{}"\nmode = "grid"\n[fixed]\nwindow = 130000\nreserve = 8000\n[grid]\nmargin = [0.1, 0.2]\n'
    )
    (tmp_path / "new.toml").write_text(grid.format("tiered_summary"))
    (tmp_path / "old.toml").write_text(grid.format("seed_a"))
    new, old = load_spec(tmp_path / "new.toml"), load_spec(tmp_path / "old.toml")
    assert new.policy == "seed_a" and new.sweep_id == old.sweep_id
    (tmp_path / "p.toml").write_text('[policy]\nname = "spill_and_mark"\n[params]\nwindow = 100000\n')
    assert load_policy_file(tmp_path / "p.toml").name == "seed_c"
    listing = CliRunner().invoke(app, ["policies"], env={"COLUMNS": "200"}).output
    assert "seed_a (also: tiered_summary)" in listing and "=(" not in listing and "='" not in listing
