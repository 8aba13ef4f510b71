"""What `replay check` prints besides its verdict: the setup both sides ran under, a sentence per failing rule,
and the JSON and JUnit forms CI systems read."""

from __future__ import annotations

import json
from collections.abc import Callable
from xml.etree import ElementTree as ET

import polars as pl

from replay.metrics.coverage import CostCover
from replay.sweeps.gate import METRICS, CheckResult, worsening
from replay.sweeps.policy_file import PolicyFile
from replay.untrusted import for_markdown, for_xml

# what a per-run metric counts, for the sentence that explains its failure
MEANING = {
    "overflow_incidents": "requests whose prompt + reply reserve exceeds the window",
    "evicted_failures": "failed tool results the policy hid (placeholder or dropped) while the run went on",
    "repeat_evicted": "re-reads of content the policy had evicted from the prompt",
}


def _counts(df: pl.DataFrame, col: str, by_source: bool = False) -> str:
    """'a (3 runs), b (1 run)' for a column's values, most frequent first; 'n/a' when the column is absent.
    ``by_source``: group 'source: detail' values by their source."""
    if col not in df.columns or df.is_empty():
        return "n/a"
    values = df[col]
    if values.dtype.is_integer():
        values = values.map_elements(lambda v: f"{v:,}", return_dtype=pl.Utf8)
    values = values.cast(pl.Utf8).fill_null("none")
    if by_source:
        values = values.str.split(":").list.first()
    vc = values.value_counts(sort=True)
    parts = [(v, n) for v, n in vc.iter_rows()]
    if len(parts) == 1:
        return str(parts[0][0])
    return ", ".join(f"{v} ({n} run{'s' if n != 1 else ''})" for v, n in parts)


def setup(df: pl.DataFrame, name: str) -> dict[str, str]:
    """What one side ran under: policy, window, reserve, token source, cache model and price source per run."""
    return {
        "policy": name,
        "window": _counts(df, "window"),
        "reserve": _counts(df, "reserve"),
        "token_source": _counts(df, "token_source"),
        "cache_model": _counts(df, "cache_model"),
        "price_source": _counts(df, "price_source", by_source=True),
    }


def money(usd: float) -> str:
    """Dollars to the cent."""
    return f"-${-usd:,.2f}" if usd < 0 else f"${usd:,.2f}"


def explain_metric(r: dict, n_runs: int) -> str:
    """One sentence on why an aggregate metric failed its tolerance."""
    m, kind = r["metric"], METRICS[r["metric"]][1]
    base, cand = r["baseline"], r["candidate"]
    if m == "cost_usd":
        said = f"{money(base)} -> {money(cand)}"
    elif kind == "abs":
        said = f"{base:.4g} -> {cand:.4g}"
    else:
        said = f"{base:,.6g} -> {cand:,.6g}"
    limit = f"{100 * r['tolerance']:g}%" if kind == "rel" else f"{r['tolerance']:g} absolute"
    worse = f"{100 * r['worse_by']:.1f}%" if kind == "rel" else f"{r['worse_by']:.4g}"
    return f"{m} over all {n_runs} runs: {said}, worse by {worse}; tolerance {limit}"


def explain_run(r: dict, tolerance: float, quote: Callable[[str], str] = str) -> str:
    """One sentence on why a run failed a per-run rule (``quote``: how the run id enters the output format)."""
    m = r["metric"]
    worse = worsening(m, r["baseline"], r["candidate"])
    by = f"worse by {100 * worse:.0f}% of the baseline" if r["baseline"] else "none in the baseline"
    return (
        f"{quote(r['run_id'])}: {m} {r['baseline']:,.0f} -> {r['candidate']:,.0f} ({r['delta']:+,.0f}), "
        f"{MEANING.get(m, m)}; {by}, tolerance {100 * tolerance:g}% per run"
    )


def failures(result: CheckResult, n_runs: int, quote: Callable[[str], str] = str) -> list[str]:
    """A sentence per failing rule: aggregate metrics first, then runs (``quote``: see :func:`explain_run`)."""
    out = [explain_metric(r, n_runs) for r in result.metrics.filter(pl.col("regressed")).iter_rows(named=True)]
    tol = dict(zip(result.metrics["metric"], result.metrics["tolerance"], strict=True))
    out += [
        explain_run(r, tol.get(r["metric"], METRICS[r["metric"]][2]), quote)
        for r in result.runs.filter(pl.col("regressed"))
        .sort(["metric", "delta"], descending=[False, True])
        .iter_rows(named=True)
    ]
    return out


def to_json(result: CheckResult, sides: dict[str, dict[str, str]], n_runs: int) -> str:
    """The whole result as one JSON document (verdict, setup, metrics, changed runs, failure sentences)."""
    changed = result.runs.filter(pl.col("delta") != 0)
    return json.dumps(
        {
            "regressed": result.regressed,
            "runs": n_runs,
            "setup": sides,
            "metrics": result.metrics.to_dicts(),
            "changed_runs": changed.to_dicts(),
            "failures": failures(result, n_runs),
        },
        default=str,
    )


def to_junit(result: CheckResult, n_runs: int) -> str:
    """JUnit XML: one test case per gated metric, one per run and per-run rule; a failure element says why."""
    suite = ET.Element("testsuite", name="replay check")
    tol = dict(zip(result.metrics["metric"], result.metrics["tolerance"], strict=True))
    cases = 0
    for r in result.metrics.iter_rows(named=True):
        case = ET.SubElement(suite, "testcase", classname="replay.check.metrics", name=r["metric"])
        cases += 1
        if r["regressed"]:
            ET.SubElement(case, "failure", message=explain_metric(r, n_runs), type="regression")
    for r in result.runs.filter(pl.col("metric") != "repeat_evicted").iter_rows(named=True):
        case = ET.SubElement(suite, "testcase", classname=for_xml(f"replay.check.runs.{r['run_id']}"), name=r["metric"])
        cases += 1
        if r["regressed"]:
            ET.SubElement(
                case, "failure", message=for_xml(explain_run(r, tol.get(r["metric"], 0.0))), type="regression"
            )
    n_fail = sum(1 for _ in suite.iter("failure"))
    suite.set("tests", str(cases))
    suite.set("failures", str(n_fail))
    suite.set("errors", "0")
    return ET.tostring(suite, encoding="unicode", xml_declaration=True)


def _num(metric: str, x: float) -> str:
    if metric.startswith("cost"):
        return money(x)
    return f"{x:,.4g}" if abs(x) < 10 else f"{x:,.0f}"


def markdown(
    result: CheckResult,
    base: PolicyFile,
    cand: PolicyFile,
    n_runs: int,
    sides: dict[str, dict[str, str]],
    cover: CostCover | None = None,
) -> str:
    """A PR-ready report: verdict, what both sides ran under, metric table, why each failing rule failed, the runs
    that changed."""
    verdict = "❌ **regression**" if result.regressed else "✅ **no regression**"
    out = [
        f"## replay check: {verdict}",
        "",
        f"Baseline {for_markdown(str(base.path or base.name))} vs candidate "
        f"{for_markdown(str(cand.path or cand.name))} over {n_runs} recorded runs. "
        "Replay is counterfactual: the recorded actions stay fixed, so these are cost and exposure "
        "figures, not solve rates.",
        "",
        "| setup | baseline | candidate |",
        "|---|---|---|",
    ]
    b, c = sides["baseline"], sides["candidate"]
    for key, label in (
        ("policy", "policy"),
        ("window", "window (tokens)"),
        ("reserve", "reply reserve (tokens)"),
        ("token_source", "token source"),
        ("cache_model", "cache model"),
        ("price_source", "price source"),
    ):
        out.append(f"| {label} | {for_markdown(b[key])} | {for_markdown(c[key])} |")
    if b["cache_model"] != c["cache_model"]:
        out += [
            "",
            "> The two sides run under different cache models: cache_hit_rate, uncached_tokens and cost_usd "
            "compare caches as well as policies.",
        ]
    out += [
        "",
        "Costs in US dollars to the cent"
        + (f", over {cover.label()}" if cover and cover.total else "")
        + "; uncached_tokens: prompt tokens not read from the cache (cache writes included)."
        + ("".join(f" {for_markdown(line)}." for line in cover.lines()) if cover else ""),
        "",
        "| metric | baseline | candidate | delta | tolerance | status |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for r in result.metrics.iter_rows(named=True):
        m = r["metric"]
        status = "regressed" if r["regressed"] else "ok"
        out.append(
            f"| {m} | {_num(m, r['baseline'])} | {_num(m, r['candidate'])} | {_num(m, r['delta'])} "
            f"| {r['tolerance']:g} | {status} |"
        )
    why = failures(result, n_runs, for_markdown)
    if why:
        out += ["", "### Why it fails", ""] + [f"- {line}" for line in why]
    changed = result.runs.filter(pl.col("delta") != 0)
    if changed.height:
        out += [
            "",
            "### Runs that changed",
            "",
            "| run | metric | baseline | candidate | delta | gate |",
            "|---|---|---:|---:|---:|---|",
        ]
        for r in changed.sort(["regressed", "delta"], descending=True).head(40).iter_rows(named=True):
            gate = "regressed" if r["regressed"] else ""
            m = r["metric"]
            out.append(
                f"| {for_markdown(r['run_id'])} | {m} | {_num(m, r['baseline'])} | {_num(m, r['candidate'])} "
                f"| {_num(m, r['delta'])} | {gate} |"
            )
    return "\n".join(out) + "\n"
