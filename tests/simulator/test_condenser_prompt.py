"""A summarisation call is charged the prompt its harness sends (replay.policies.condenser_prompt): OpenHands'
condensers send the forgotten events and the previous summary (the V1 SDK's written to the cache), Claude Code's
and Codex's compaction the whole conversation: read from the cache as the log's own summariser calls were, or
where the preset says the harness forks the conversation for it (Claude Code 2.1.38 on), else uncached. Real
logs, o200k counts."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from replay.metrics.bill import day_of
from replay.metrics.prices import DEFAULT_PRICING
from replay.policies import Budget, make_policy
from replay.policies.condenser_prompt import INSTRUCTION, V1_SDK
from replay.policies.presets import claude_code_preset
from replay.simulator.caches import AUTO
from replay.simulator.kernels.driver import T_PROMPT, T_SUM_OUT, T_SUM_READ, T_SUM_WRITE, T_SUMMARISED
from replay.simulator.kernels.packed import pack
from replay.simulator.kernels.trace import trace_run
from replay.simulator.load import load_runs
from replay.simulator.run import simulate_run
from replay.sweeps.adapter import resolve
from replay.sweeps.point_rows import point_frame
from replay.tokens.loading import load_tokenizer

BIG = Budget(200_000)
OHV1 = "openhands-v1/ohv1-bench-swe-sonnet4-81f92eeb"
PREVIEW = 500  # the SDK's N_CHAR_PREVIEW (openhands/sdk/event/base.py, September 2025)


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer("o200k")


@pytest.fixture(scope="module")
def runs(corpus_db, tok):
    from replay.tokens.counting import count_items

    count_items(corpus_db, tok)
    return {r.run_id: r for r in load_runs(corpus_db, tok.tokenizer_id)}


def _one(runs, part: str):
    found = [r for rid, r in runs.items() if rid.startswith(part)]
    assert len(found) == 1, (part, [r.run_id for r in found])
    return found[0]


def _preview(text: str) -> str:
    return text[:PREVIEW] + "..." if len(text) > PREVIEW else text


def _observation(obs: dict) -> str:
    """An observation's ``agent_observation`` text as the SDK's tools build it (execute_bash: the output within
    its prefix and suffix, then the working directory, interpreter and exit code lines; str_replace_editor: the
    error, else the output; the others: their content or output)."""
    if obs["kind"] == "ExecuteBashObservation":
        meta = obs["metadata"]
        text = f"{meta['prefix']}{obs['output']}{meta['suffix']}"
        if meta.get("working_dir"):
            text += f"\n[Current working directory: {meta['working_dir']}]"
        if meta.get("py_interpreter_path"):
            text += f"\n[Python interpreter: {meta['py_interpreter_path']}]"
        if meta.get("exit_code", -1) != -1:
            text += f"\n[Command finished with exit code {meta['exit_code']}]"
        return f"[There was an error during command execution.]\n{text}" if obs.get("error") else text
    if obs["kind"] == "StrReplaceEditorObservation" and obs.get("error"):
        return obs["error"]
    content = obs.get("content") or obs.get("output") or ""
    return "".join(c.get("text", "") for c in content) if isinstance(content, list) else content


def _event_text(event: dict) -> str:
    """An event as the SDK's ``str()`` shows it: an action's thought (previewed) and action class, not the call's
    arguments; an observation's tool and result (previewed)."""
    if event["kind"] == "ActionEvent":
        thought = " ".join(t["text"] for t in event["thought"])
        return f"ActionEvent (agent)\n  Thought: {_preview(thought)}\n  Action: {event['action']['kind']}"
    result = _preview(_observation(event["observation"]))
    return f"ObservationEvent (environment)\n  Tool: {event['tool_name']}\n  Result: {result}"


def _sdk_prompts(corpus: Path, count) -> list[int]:
    """Per condensation of the log, the o200k tokens of the message the SDK's condenser built from it: its
    instruction (INSTRUCTION, counted from the template), the previous summary and each forgotten event in tags."""
    events = [json.loads(p.read_text()) for p in sorted((corpus / OHV1).rglob("events/*.json"))]
    by_id = {e["id"]: e for e in events}
    out, previous = [], ""
    for cond in (e for e in events if e["kind"] == "Condensation"):
        shown = [_event_text(by_id[i]) for i in cond["forgotten_event_ids"] if i in by_id]
        text = previous + "".join(f"\n<EVENT>\n{s}\n</EVENT>\n" for s in shown)
        out.append(INSTRUCTION[V1_SDK] + count(text))
        previous = cond["summary"]
    return out


def test_recorded_condensations_send_what_the_sdk_sends(corpus, runs, tok):
    """ohv1-bench-swe-sonnet4's 4 condensations: the replay's summariser prompts are the SDK's (within 4% of the
    message rebuilt from the log's Condensation events), a quarter of the requests before them or less, and
    written to the cache as the log's calls were (4 uncached tokens each, the rest written). Before, each call was
    charged the whole previous prompt (172,842 tokens in all), uncached."""
    run = _one(runs, "ohv1-bench-swe-sonnet4")
    trace = trace_run(run, make_policy("recorded"), BIG)
    cols = trace.columns
    at = np.flatnonzero(cols[:, T_SUM_READ])
    assert at.tolist() == [step for step, _, _ in run.summariser_calls] == [40, 61, 82, 103]
    sent = cols[at, T_SUM_READ]
    for mine, sdk in zip(sent.tolist(), _sdk_prompts(corpus, tok.count), strict=True):
        assert abs(mine / sdk - 1) <= 0.04, (mine, sdk)
    assert (sent * 4 < cols[at - 1, T_PROMPT]).all()
    assert (cols[at, T_SUM_WRITE] == 1).all()
    assert all(counts[0] <= 4 and counts[2] > 0 for _, _, counts in run.summariser_calls)


def test_recorded_policy_reproduces_the_ohv1_bill(runs):
    """Like for like the replay of ohv1-bench-swe-sonnet4 is within 3% of its bill ($2.4498, the SDK's own
    accumulated cost; before: +14.7%), its summariser calls within 15% of the condenser's $0.115 (the rest is
    o200k against Claude's tokenizer: the rebuilt prompts count 19,169 o200k tokens where the calls record
    21,761), and ``bill_gap`` names no summariser gap."""
    run = _one(runs, "ohv1-bench-swe-sonnet4")
    row = simulate_run(run, make_policy("recorded"), None, BIG)[1]
    assert abs(row["billed_cost_usd"] / row["recorded_cost_usd"] - 1) <= 0.03, row["billed_cost_usd"]
    assert abs(row["summary_cost_usd"] / row["recorded_summary_cost_usd"] - 1) <= 0.15, row["summary_cost_usd"]
    assert "summariser" not in (row["bill_gap"] or "")


@pytest.mark.parametrize(("preset", "written"), [("openhands-v1", 1), ("openhands-v0", 0)])
def test_openhands_presets_charge_their_condensers_prompt(runs, preset, written):
    """The openhands presets users sweep: each summarisation call reads the forgotten events, the previous summary
    and the instruction (far less than the history), written to the cache under the V1 SDK, uncached under V0
    (its condenser turns prompt caching off); summary_cost_usd is those tokens at those rates plus the summaries."""
    run = _one(runs, "ohv1-bench-swe-sonnet4")
    policy = make_policy(preset)
    trace = trace_run(run, policy, BIG)
    cols = trace.columns
    at = np.flatnonzero(cols[:, T_SUMMARISED])
    assert len(at) >= 1
    sent = cols[at, T_SUM_READ]
    assert (sent > INSTRUCTION[V1_SDK]).all() and (sent * 2 < cols[at - 1, T_PROMPT]).all()
    assert (cols[at, T_SUM_WRITE] == written).all()
    out, row = simulate_run(run, policy, None, BIG)
    summaries = int(out["summary_tokens"][at].sum())
    uncached, cached = (0, int(sent.sum())) if written else (int(sent.sum()), 0)
    expected = (
        uncached * row["price_per_mtok"] + cached * row["cache_write_per_mtok"] + summaries * row["output_per_mtok"]
    ) / 1e6
    assert row["summary_cost_usd"] == pytest.approx(expected, rel=1e-9)


def test_v0_condenser_shows_more_of_each_event(runs):
    """The V0 server's condenser shows each event up to 10,000 characters with the call's arguments, the V1 SDK's
    a 500-character preview without them: for the same forgotten events V0's prompt is the larger."""
    run = _one(runs, "ohv1-bench-swe-sonnet4")
    same = {"max_size": "80", "keep_first": "4", "attachment_events": "0"}
    v0 = trace_run(run, make_policy("openhands", {**same, "prompt": "1"}), BIG).columns
    v1 = trace_run(run, make_policy("openhands", {**same, "prompt": "2"}), BIG).columns
    assert (v0[:, T_SUMMARISED] == v1[:, T_SUMMARISED]).all()
    at = np.flatnonzero(v0[:, T_SUMMARISED])
    assert (v0[at, T_SUM_READ] > v1[at, T_SUM_READ]).all()


@pytest.mark.parametrize("part", ["cc-jason-webtech", "codex-fixture-agentsessions-small-compacted"])
def test_compaction_reads_the_whole_conversation(runs, part):
    """Claude Code's and Codex's compaction keep their charge: the summariser reads the prompt of the request
    before it, uncached."""
    run = _one(runs, part)
    cols = trace_run(run, make_policy("recorded"), BIG).columns
    at = np.flatnonzero(cols[:, T_SUM_READ])
    assert len(at) >= 1 and (at > 0).all()
    assert (cols[at, T_SUM_READ] == cols[at - 1, T_PROMPT]).all()
    assert (cols[at, T_SUM_WRITE] == 0).all()


def test_sweep_rows_charge_the_condenser_as_simulate_does(runs):
    """The sweep kernels carry each run's condenser: the same summary cost as simulate, run by run and policy by
    policy."""
    chosen = [_one(runs, p) for p in ("ohv1-bench-swe-sonnet4", "cc-jason-webtech")]
    for name in ("recorded", "openhands-v1"):
        frame = point_frame(pack(chosen), resolve(name, {"window": 200_000}, AUTO))
        for run, row in zip(chosen, frame.iter_rows(named=True), strict=True):
            alone = simulate_run(run, make_policy(name), None, BIG)[1]
            assert row["summary_cost_usd"] == pytest.approx(alone["summary_cost_usd"], rel=1e-9), (name, run.run_id)


def test_a_summariser_call_is_priced_at_the_model_of_its_request(runs):
    """A harness summarises with the model it runs: a session that switched model compacts with the new one (a
    Codex session switched from gpt-5.5 to gpt-5.6-luna compacted with it; priced at the run's model, its replay
    came out 19% over the bill). The corpus's Codex session with two compactions, as a gpt-5 session switched to
    gpt-5-mini at the first: each summariser call costs its prompt and output at the model of the request it comes
    before, in simulate and in a compiled sweep alike."""
    found = _one(runs, "codex-pharma-platform")
    first = int(np.flatnonzero(trace_run(found, make_policy("recorded"), BIG).columns[:, T_SUMMARISED])[0])
    base = replace(found, model="gpt-5", req_model=("gpt-5",) * found.n_requests)
    models = tuple("gpt-5" if k < first else "gpt-5-mini" for k in range(found.n_requests))
    run = replace(base, req_model=models)
    cols = trace_run(run, make_policy("recorded"), BIG).columns
    at = np.flatnonzero(cols[:, T_SUMMARISED])
    assert len(at) == 2 and at[0] == first and (cols[at, T_SUM_WRITE] == 0).all()
    expected = 0.0
    for k in at:
        p = DEFAULT_PRICING.prices(models[k], day_of(float(run.req_ts[k])))
        expected += (cols[k, T_SUM_READ] * p.input + cols[k, T_SUM_OUT] * p.output) / 1e6
    row = simulate_run(run, make_policy("recorded"), None, BIG)[1]
    assert row["summary_cost_usd"] == pytest.approx(expected, rel=1e-9)
    own = simulate_run(base, make_policy("recorded"), None, BIG)[1]
    assert row["summary_cost_usd"] < own["summary_cost_usd"] / 2  # gpt-5-mini is far cheaper than the run's model
    swept = point_frame(pack([run]), resolve("recorded", {"window": 200_000}, AUTO)).row(0, named=True)
    assert swept["summary_cost_usd"] == pytest.approx(expected, rel=1e-9)


def test_a_forked_compaction_reads_the_cached_conversation(runs):
    """Claude Code sends its compaction's summary request as a fork of the conversation from 2.1.38 (the forks'
    transcripts read 94-99% of their prompt from the cache): its presets say so from that version, and the
    summariser call is then priced at the cache-read price. The corpus's 2.1.19 session with two compactions,
    replayed with and without the knob: the prompt costs the read price instead of the input price."""
    for version, forked in (("2.1.37", False), ("2.1.38", True), ("2.1.88", True), ("2.1.170", True)):
        name, params, _ = claude_code_preset(version, "claude-sonnet-4-5")
        assert make_policy(name, params).config.summary_reads_cache is forked, version
    run = _one(runs, "cc-jason-webtech")
    rows = {}
    for forked in (False, True):
        policy = make_policy("auto_compact", {"summary_reads_cache": forked})
        cols = trace_run(run, policy, BIG).columns
        at = np.flatnonzero(cols[:, T_SUMMARISED])
        assert len(at) >= 1
        prices = [DEFAULT_PRICING.prices(run.req_model[k], day_of(float(run.req_ts[k]))) for k in at]
        rate = [p.cache_read if forked else p.input for p in prices]
        expected = sum(
            (cols[k, T_SUM_READ] * r + cols[k, T_SUM_OUT] * p.output) / 1e6
            for k, r, p in zip(at, rate, prices, strict=True)
        )
        rows[forked] = simulate_run(run, policy, None, BIG)[1]["summary_cost_usd"]
        assert rows[forked] == pytest.approx(expected, rel=1e-9)
    assert rows[True] < rows[False] / 3


def test_the_harness_forks_its_summariser_whichever_policy_summarises(runs):
    """Whether a run's harness forks the conversation for its summariser call comes from the harness's own preset
    for the run's version (RunArrays.summary_reads_cache, set at load): Claude Code 2.1.38 on, so the recorded
    policy's compactions of such a session cost the read price too (LAF-US/IDAHO-VAULT 05541cb5, 2.1.92: its six
    summariser calls $2.63 uncached, $0.26 read)."""
    from replay.simulator.load import summariser_reads_cache

    run = _one(runs, "cc-jason-webtech")
    assert not run.summary_reads_cache  # 2.1.19
    for version, forked in (("2.1.19", False), ("2.1.38", True), ("2.1.92", True)):
        assert summariser_reads_cache("claude-code", {"cc_version": version}, run) is forked, version
    assert not summariser_reads_cache("codex-rollout", {"model_context_window": 272_000}, run)
    plain = simulate_run(run, make_policy("recorded"), None, BIG)[1]
    forked = simulate_run(replace(run, summary_reads_cache=True), make_policy("recorded"), None, BIG)[1]
    assert plain["summaries"] >= 1 and forked["summary_cost_usd"] < plain["summary_cost_usd"] / 3


def test_the_logs_own_summariser_calls_say_whether_they_read_the_cache(runs):
    """Codex 0.116's local compaction sends its prompt uncached (the corpus session records two calls that read
    nothing): a policy that says its summariser reads the cache does not make that run's calls cached. Calls that
    read part of their prompt (Codex's remote compaction: 81-90%) have a replay's calls read the same share."""
    found = _one(runs, "codex-pharma-platform")
    run = replace(found, model="gpt-5", req_model=("gpt-5",) * found.n_requests)  # its own model has no price
    assert run.summariser_calls and all(c[2][1] == 0 for c in run.summariser_calls)
    costs = [
        simulate_run(run, make_policy("auto_compact", {"summary_reads_cache": forked}), None, BIG)[1]
        for forked in (True, False)
    ]
    assert costs[0]["summaries"] >= 1 and costs[0]["summary_cost_usd"] == pytest.approx(costs[1]["summary_cost_usd"])
    remote = replace(
        run, summariser_calls=tuple((s, m, (20_000, 80_000, 0, 0, c[4])) for s, m, c in run.summariser_calls)
    )
    cols = trace_run(remote, make_policy("recorded"), BIG).columns
    p = DEFAULT_PRICING.prices("gpt-5", day_of(float(run.req_ts[0])))
    at = np.flatnonzero(cols[:, T_SUMMARISED])
    sent, out = cols[at, T_SUM_READ], cols[at, T_SUM_OUT]
    read = np.rint(0.8 * sent)
    expected = float(((sent - read) * p.input + read * p.cache_read + out * p.output).sum()) / 1e6
    row = simulate_run(remote, make_policy("recorded"), None, BIG)[1]
    assert row["summary_cost_usd"] == pytest.approx(expected, rel=1e-9)
