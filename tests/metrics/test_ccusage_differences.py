"""Why `replay runs` and ccusage differ on the corpus's Claude Code files (docs/cost.md, "The bill against ccusage"),
pinned from the files themselves, never from ccusage's output.

ccusage's Claude loader (ryoppippi/ccusage, ``rust/crates/ccusage/src/adapter/claude/mod.rs`` and ``types.rs``)
reads every line that holds ``"usage":{``, drops a line where one of a few fields (``id``, ``model``, ``requestId``,
``cache_creation_input_tokens`` ...) is ``null``, keys lines by ``message.id`` + ``requestId``, and of the lines of
one key keeps the one with the largest input + output + cache writes + cache reads (``should_replace_deduped_entry``).
It counts cache writes from the ``cache_creation`` split whenever the split is present (``cache_creation_token_count``),
``cache_creation_input_tokens`` only when it is absent. Its cost is then its table's rates times those counts; on
these files its rates are genai-prices' (checked by hand, docs/cost.md), so both sides are priced here by genai-prices.

replay bills the last line of each response (its settled usage) and ``cache_creation_input_tokens`` as the writes;
where a file's responses settle on a later line at another prompt than their stream's opening (MiniMax), a response
logged with only its opening (output 0, no stop reason) has no usage. The two rules give the same bill except where
a response's lines disagree or it never settled, which is what this test counts.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pytest
from genai_prices import Usage, calc_price

from replay.metrics.recorded_bill import request_bill, runs_bill

COUNTS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
NULLABLE_SKIP = {
    "id",
    "cwd",
    "model",
    "speed",
    "costUSD",
    "version",
    "sessionId",
    "requestId",
    "isApiErrorMessage",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
}


def _writes_by_split(u: dict) -> int:
    split = u.get("cache_creation")
    if isinstance(split, dict):
        return (split.get("ephemeral_5m_input_tokens") or 0) + (split.get("ephemeral_1h_input_tokens") or 0)
    return u.get("cache_creation_input_tokens") or 0


def _weight(u: dict) -> int:
    """ccusage's measure of which line of a response to keep."""
    return sum(u.get(k) or 0 for k in COUNTS[:3]) + _writes_by_split(u)


def _counts(u: dict) -> tuple:
    return (*(u.get(k) or 0 for k in COUNTS), _writes_by_split(u))


def _is_time(ts: object) -> bool:
    """ccusage skips a line whose timestamp does not parse."""
    try:
        datetime.fromisoformat(str(ts).replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _price(model: str, u: dict, writes: int) -> float:
    read = u.get("cache_read_input_tokens") or 0
    split = u.get("cache_creation") if isinstance(u.get("cache_creation"), dict) else {}
    usage = Usage(
        input_tokens=(u.get("input_tokens") or 0) + read + writes,
        cache_read_tokens=read,
        cache_write_tokens=writes,
        cache_write_1h_tokens=min(split.get("ephemeral_1h_input_tokens") or 0, writes),
        output_tokens=u.get("output_tokens") or 0,
    )
    return float(calc_price(usage, model).total_price)


@dataclass
class Comparison:
    """One file's responses under both rules."""

    responses: int = 0
    bill: float = 0.0  # replay's rule: the last line, cache_creation_input_tokens as writes
    ccusage_rule: float = 0.0
    dropped_writes: list[int] = field(default_factory=list)  # per response: writes its settled line's split hides
    earlier_line_kept: int = 0  # responses whose kept line is not the last (settled) one
    earlier_line_usd: float = 0.0  # what keeping it changes: its price less the settled line's (writes by split)
    unsettled: int = 0  # responses logged with only their stream's opening, in a file whose responses settle
    unsettled_usd: float = 0.0  # what ccusage bills for them (replay: no usage)


def _opening(m: dict) -> bool:
    return (m["usage"].get("output_tokens") or 0) == 0 and m.get("stop_reason") is None


def _prompt(u: dict) -> int:
    return sum(u.get(k) or 0 for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))


def compare(path: Path) -> Comparison:
    groups: dict[tuple, list[dict]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if '"usage":{' not in line and '"usage": {' not in line:
            continue
        if NULLABLE_SKIP & set(re.findall(r'"([^"]*)":\s*null', line)):
            continue
        obj = json.loads(line)
        msg = obj.get("message")
        if not isinstance(msg, dict) or not isinstance(msg.get("usage"), dict) or not _is_time(obj.get("timestamp")):
            continue
        if msg.get("model") in (None, "<synthetic>"):
            continue
        groups.setdefault((msg.get("id"), obj.get("requestId")), []).append(msg)
    out = Comparison(responses=len(groups))
    settles = any(
        _opening(ms[0]) and not _opening(ms[-1]) and _prompt(ms[0]["usage"]) != _prompt(ms[-1]["usage"])
        for ms in groups.values()
    )
    for msgs in groups.values():
        last = msgs[-1]
        kept = msgs[0]
        for m in msgs[1:]:
            if _weight(m["usage"]) > _weight(kept["usage"]):
                kept = m
        u = last["usage"]
        cc = _price(kept["model"], kept["usage"], _writes_by_split(kept["usage"]))
        out.ccusage_rule += cc
        if settles and all(_opening(m) for m in msgs):
            out.unsettled += 1
            out.unsettled_usd += cc
            continue
        out.bill += _price(last["model"], u, u.get("cache_creation_input_tokens") or 0)
        hidden = (u.get("cache_creation_input_tokens") or 0) - _writes_by_split(u)
        if hidden:
            out.dropped_writes.append(hidden)
        if _counts(kept["usage"]) != _counts(u):
            out.earlier_line_kept += 1
            out.earlier_line_usd += cc - _price(last["model"], u, _writes_by_split(u))
    return out


# file -> (responses, responses whose writes a zero split hides, those writes, responses keeping an earlier line,
# responses that never settled)
EXPLAINED = {
    "ccb-android-avd-3e89eb15-sub-wf_4af3c93a-ada-agent-a340795228348a5a6": (6, 6, 11_981, 5, 0),
    "ccb-android-avd-3e89eb15-sub-wf_f5b3cd7b-844-agent-ab9eaae030fe399d0": (31, 30, 41_012, 22, 0),
    "ccb-android-avd-opus-3e89eb15-main": (43, 43, 111_055, 0, 0),
    "ccb-android-avd-opus-c6455dae": (35, 33, 67_460, 17, 0),
    "ccb-avd-minimax-2764ab64": (161, 0, 0, 94, 2),
}


def claude_code_files(corpus: Path) -> list[Path]:
    return sorted((corpus / "claude-code").glob("*.jsonl"))


@pytest.fixture(scope="module")
def bills(corpus_db, corpus) -> dict[str, float]:
    """replay's stored bill per corpus Claude Code file (its main run and sidechains summed)."""
    per_run = runs_bill(request_bill(corpus_db))
    src = dict(corpus_db.execute("SELECT run_id, source_path FROM runs WHERE format = 'claude-code'").fetchall())
    out: dict[str, float] = {}
    for run_id, cost in per_run.select("run_id", "cost_usd").iter_rows():
        if run_id in src and cost is not None:
            name = Path(src[run_id]).name.removesuffix(".jsonl")
            out[name] = out.get(name, 0.0) + cost
    return out


def test_the_stored_bill_is_the_settled_line_of_each_response(corpus, bills):
    """replay's side of the comparison: the store's bill is each response's last line priced by genai-prices."""
    for path in claude_code_files(corpus):
        c = compare(path)
        if c.responses:
            assert bills[path.stem] == pytest.approx(c.bill, rel=1e-9, abs=1e-12), path.name


def test_the_rules_agree_wherever_a_response_lines_agree(corpus):
    agree = [p.stem for p in claude_code_files(corpus) if p.stem not in EXPLAINED]
    assert len(agree) == 22
    for path in claude_code_files(corpus):
        if path.stem in EXPLAINED:
            continue
        c = compare(path)
        assert (c.dropped_writes, c.earlier_line_kept, c.unsettled) == ([], 0, 0), path.name
        assert c.ccusage_rule == pytest.approx(c.bill, rel=1e-9, abs=1e-12), path.name


@pytest.mark.parametrize("name", sorted(EXPLAINED))
def test_each_difference_is_hidden_writes_and_earlier_lines(corpus, name):
    """A: writes beside a split of zeros (an Anthropic-compatible endpoint's ``cache_creation`` of zeros) that
    ccusage counts as none. B: a response whose first lines (stream start: output 0, or MiniMax's whole prompt as
    uncached input) outweigh its settled line, so ccusage keeps them. C: a MiniMax response logged with only its
    stream's opening, which ccusage bills and replay leaves without usage. Together they are the whole difference."""
    c = compare(Path(corpus) / "claude-code" / f"{name}.jsonl")
    responses, hidden_responses, hidden_tokens, earlier, unsettled = EXPLAINED[name]
    assert (c.responses, len(c.dropped_writes), sum(c.dropped_writes), c.earlier_line_kept, c.unsettled) == (
        responses,
        hidden_responses,
        hidden_tokens,
        earlier,
        unsettled,
    )
    write_rate = calc_price(Usage(input_tokens=10**6, cache_write_tokens=10**6), "claude-opus-4-8").total_price
    hidden_usd = sum(c.dropped_writes) * float(write_rate) / 1e6 if c.dropped_writes else 0.0
    assert c.bill - c.ccusage_rule == pytest.approx(hidden_usd - c.earlier_line_usd - c.unsettled_usd, abs=1e-9)
    assert abs(c.bill - c.ccusage_rule) / c.bill > 0.01  # each is a difference over 1%


def test_no_corpus_request_reaches_a_long_context_tier(corpus_db):
    """genai-prices charges a whole request at the tier above 200k input; ccusage charges each kind's tokens beyond
    200k at it. No corpus Claude Code request has 200k input, so the tier rules cannot explain a difference here."""
    most = corpus_db.execute(
        """SELECT max(coalesce(input_tokens, 0) + coalesce(cache_read, 0) + coalesce(cache_write, 0))
           FROM requests JOIN runs USING (run_id) WHERE format = 'claude-code'"""
    ).fetchone()[0]
    assert 150_000 < most < 200_000
