"""Record-level isolation, fuzzed on real corpus files of every format (engine: tests/readers/damage.py).

Each example damages one record of a pristine file (truncate, bad byte, flipped bit, NaN / -5 / 1e400 / "x" /
10**30 in a usage number, a duplicated line, 100,000-deep nesting, a value of the wrong type) and asserts: no
exception escapes the reader, every row of the other records is still read, the damaged record is quarantined with
its line where the damage makes it unreadable, and no implausible usage number is stored.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay.readers.base import IDENTITY_KEYS
from tests.readers import damage as D

# Per format: 13 formats x 80 examples take ~20 s on one core (CI). A longer run outside CI:
# REPLAY_FUZZ_EXAMPLES=1000 python -m pytest tests/readers/test_fuzz_records.py
EXAMPLES = int(os.environ.get("REPLAY_FUZZ_EXAMPLES", "80"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
DOCUMENT_DAMAGES = ("truncate", "deep", "wrong_type", *D.NUMBER_VALUES)


@pytest.fixture(scope="module")
def pristine(corpus) -> dict[str, D.Result]:
    return {fmt: D.read(corpus / rel) for fmt, rel in D.FILES.items()}


@pytest.mark.parametrize("fmt", [f for f in D.FILES if f in D.JSONL])
@SETTINGS
@given(data=st.data())
def test_one_damaged_line_costs_only_that_line(corpus, pristine, fmt, data):
    src = corpus / D.FILES[fmt]
    lines = D.lines_of(src)
    how = data.draw(st.sampled_from(D.TEXT_DAMAGES if fmt == "aider" else D.LINE_DAMAGES), label="damage")
    k = data.draw(st.integers(1, len(lines)), label="line")
    pick = data.draw(st.integers(0, 10**6), label="pick")
    with tempfile.TemporaryDirectory() as tmp:
        problems = D.check_line(pristine[fmt], lines, k, how, pick, Path(tmp) / src.name)
    assert not problems, f"{fmt} {how} at line {k}: {problems}"


@pytest.mark.parametrize("fmt", [f for f in D.FILES if f not in D.JSONL])
@SETTINGS
@given(how=st.sampled_from(DOCUMENT_DAMAGES), pick=st.integers(0, 10**6))
def test_one_damaged_value_never_fails_the_document(corpus, pristine, fmt, how, pick):
    src = corpus / D.FILES[fmt]
    with tempfile.TemporaryDirectory() as tmp:
        problems = D.check_document(pristine[fmt], src.read_bytes(), how, pick, Path(tmp) / src.name)
    assert not problems, f"{fmt} {how} (pick {pick}): {problems}"


# Found by longer runs (REPLAY_FUZZ_EXAMPLES=300 and 1000): a list as an inspect_ai message id, an OpenAI role or
# a Cline message type (hashed as a key), a string as an inspect_ai token count (used in arithmetic before the
# builder's check), a bool as an inspect_ai model output, a number as an OpenAI response's choices.
@pytest.mark.parametrize(
    ("fmt", "how", "pick"),
    [
        ("inspect_ai", "wrong_type", 1388),
        ("openai_messages", "wrong_type", 3768),
        ("inspect_ai", "string", 992),
        ("inspect_ai", "wrong_type", 2672),
        ("openai_messages", "wrong_type", 26501),
        ("cline", "wrong_type", 85),
    ],
)
def test_damages_found_by_longer_runs(corpus, pristine, tmp_path, fmt, how, pick):
    src = corpus / D.FILES[fmt]
    assert D.check_document(pristine[fmt], src.read_bytes(), how, pick, tmp_path / src.name) == []


def test_an_unreadable_line_between_a_codex_call_and_compacted_keeps_the_request(corpus, pristine, tmp_path):
    """The fixture's line 88 sits between a token_count (87) and a `compacted` line (89): cut short, it must not
    turn the agent's request at line 87 into the summariser's call (found by REPLAY_FUZZ_EXAMPLES=1000)."""
    src = corpus / D.FILES["codex_rollout"]
    assert D.check_line(pristine["codex_rollout"], D.lines_of(src), 88, "truncate", 0, tmp_path / src.name) == []


@pytest.mark.parametrize("encoding", ["utf-8-bom", "utf-16"])
@pytest.mark.parametrize("fmt", list(D.FILES))
def test_bom_and_utf16_files_read_like_the_original(corpus, pristine, tmp_path, fmt, encoding):
    src = corpus / D.FILES[fmt]
    raw = src.read_bytes()
    out = tmp_path / src.name
    out.write_bytes(b"\xef\xbb\xbf" + raw if encoding == "utf-8-bom" else raw.decode("utf-8").encode("utf-16"))
    res = D.read(out)
    assert res.rows == pristine[fmt].rows and not res.bad


@pytest.mark.parametrize("fmt", ["claude_code", "codex_rollout", "copilot_cli", "openhands_v1"])
def test_duplicated_lines_are_dropped_and_counted(corpus, pristine, tmp_path, fmt):
    src = corpus / D.FILES[fmt]
    lines = D.lines_of(src)
    out = tmp_path / src.name
    out.write_bytes(b"".join(lines) + b"".join(lines))  # the whole log appended to itself
    res = D.read(out)
    assert res.rows == pristine[fmt].rows
    with_identity = [
        ln
        for ln in lines
        if ln.strip() and isinstance(obj := json.loads(ln), dict) and not IDENTITY_KEYS.isdisjoint(obj)
    ]
    assert res.duplicates == len(with_identity) > 0
