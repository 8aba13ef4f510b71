"""What `replay tune` says and writes about its choice (replay.sweeps.select): the findings as plain lines, the
policy files `replay check` gates (recommended.toml, defaults.toml, best_swept.toml), the front as CSV/Parquet and
the chart."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from replay.policies import policy_class
from replay.sweeps.policy_file import PolicyFile, dump_policy_file
from replay.sweeps.select import RULE, TuneResult, gate_excess
from replay.sweeps.spec import point_id


def _span(values) -> str:
    lo, hi = min(values), max(values)
    return f"{lo:,}" if lo == hi else f"{lo:,}-{hi:,}"


def _fmt_pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _metrics(r: dict[str, Any]) -> str:
    return (
        f"summaries/100 {r['summaries_per_100']:.2f}, cache hit {_fmt_pct(r['cache_hit_rate'])}, evicted repeat "
        f"reads {int(r['repeat_evicted'])}, cost ${r['cost_usd']:.2f}, overflow incidents "
        f"{int(r['overflow_incidents'])}"
    )


def named_runs(runs: list[tuple[str, int]], unfit: dict[str, int], top: int = 5) -> str:
    """'run (n), run (n*), ... and k more' (* : the harness prefix alone overflows at this window)."""
    shown = [f"{r} ({n:,}{'*' if r in unfit else ''})" for r, n in runs[:top]]
    more = f" and {len(runs) - top} more" if len(runs) > top else ""
    return ", ".join(shown) + more


TUNE_PRICE_HOW = "price them with --model NEW_MODEL, --prices FILE or --price input=USD --price output=USD (per Mtok)"


def summary_lines(res: TuneResult) -> list[str]:
    """Plain-text findings, also written as the policy file's header."""
    r, s = res.recommended, res.spec
    w, rs = s.fixed.get("window"), s.fixed.get("reserve")
    lines = [
        f"replay tune: {s.policy} for tokenizer {s.tokenizer or 'chars/4 (estimate)'}, window {w:,}, "
        f"reserve {rs:,}, cache {s.cache}" + (f", priced as {s.price_model}" if s.price_model else ""),
        *res.warnings,
        f"sweep {s.sweep_id}: {res.points.height} points x {int(res.points['runs'][0])} runs; "
        f"{int(res.points['gate_ok'].sum())} pass `replay check`'s default gate against the defaults",
        f"Pareto front: {res.front.height} points over summaries/100 (min), cache hit rate (max), "
        "evicted repeat reads (min), cost (min), among "
        + ("the points that pass the gate" if res.gate_passed else "all swept points (none passes the gate)")
        + " with "
        + (
            "zero overflow incidents"
            if (res.best_swept or res.recommended)["overflow_incidents"] == 0
            else "the fewest overflow incidents"
        ),
        f"rule: {RULE}",
    ]
    d = res.defaults
    if d:
        lines.append(f"defaults at this window: {_metrics(d)}")
    if not res.gate_passed:
        lines.append(f"WARNING: {res.why}{res.choice}")
    if r["point_id"] != "defaults":
        lines.append(f"recommended {r['point_id']}: {_metrics(r)}")
        lines.append("  " + ", ".join(f"{k} = {res.params[k]}" for k in s.swept_names if k in res.params))
    else:
        lines.append(f"recommended: the defaults: {_metrics(r)}")
        b = res.best_swept
        if b:
            lines.append(
                f"best swept point {b['point_id']} (best_swept.toml; fails the gate: "
                f"{b.get('gate_blockers') or '?'}): {_metrics(b)}"
            )
    if s.price_model:
        lines.append(
            f"note: the gate priced every run as {s.price_model}; `replay check` prices each run by its own "
            "model (or --prices/--price), so its cost rows can differ from these"
        )
    if r.get("unpriced_runs") or not res.cost_cover.complete:
        lines += [f"WARNING: {line}" for line in res.cost_cover.lines(TUNE_PRICE_HOW)]
    if res.overflowing:
        n = sum(c for _, c in res.overflowing)
        lines.append(
            f"WARNING: the recommendation still overflows {n:,} times in {len(res.overflowing)} run(s): "
            + named_runs(res.overflowing, res.unfittable)
            + (
                " (* : harness prefix alone overflows)"
                if any(x in res.unfittable for x, _ in res.overflowing[:5])
                else ""
            )
        )
    if res.unfittable:
        names = ", ".join(sorted(res.unfittable)[:5]) + (", ..." if len(res.unfittable) > 5 else "")
        lines.append(
            f"WARNING: {len(res.unfittable)} run(s) overflow under any policy at this window: the harness "
            f"prefix they send ({_span(res.unfittable.values())} tokens, "
            f"never trimmed) plus the reserve exceeds it: {names}"
        )
    edges = edge_knobs(res)
    if edges:
        lines.append(
            "note: the recommended point sits at the edge of the swept range for "
            + ", ".join(edges)
            + "; the optimum may lie beyond it"
        )
    return lines


def _failed(tol_text: str) -> str:
    """The gate rules a point fails, how much worse than the defaults it is on each and what the gate allows:
    'repeat_evicted +132% (allowed +5%), cache_hit_rate -1.5 pts (allowed -1.0)'."""
    from replay.sweeps.gate import METRICS

    parts = []
    for metric, excess in gate_excess(tol_text).items():
        allowed = METRICS[metric][2]
        worse = excess + allowed
        if METRICS[metric][1] == "abs":
            parts.append(f"{metric} -{100 * worse:.1f} pts (allowed -{100 * allowed:.1f})")
        else:
            parts.append(f"{metric} +{worse:.0%} (allowed +{allowed:.0%})")
    return ", ".join(parts)


def tradeoff(res: TuneResult) -> pl.DataFrame:
    """When no swept point passes the gate: the choices side by side, overflow incidents against cost against
    the gate's rules (which each fails, and how much worse than the defaults it is there). Rows: the defaults,
    the recommendation, the point nearest to passing, the cheapest swept point (each once)."""
    if res.gate_passed or res.defaults is None:
        return pl.DataFrame()
    clean = res.points.filter(pl.col("errors") == 0) if "errors" in res.points.columns else res.points
    cheapest = clean.drop_nulls("cost_usd").sort(["cost_usd", "point_id"]).head(1).to_dicts()
    rows: list[tuple[str, dict[str, Any]]] = [("defaults (the baseline)", {**res.defaults, "point_id": "defaults"})]
    if res.recommended["point_id"] != "defaults":
        rows.append(("recommended: fewest overflows", res.recommended))
    if res.nearest:
        rows.append(("nearest to passing", res.nearest))
    if cheapest:
        rows.append(("cheapest swept", cheapest[0]))
    seen: dict[str, int] = {}
    out: list[dict[str, Any]] = []
    for label, r in rows:
        pid = r["point_id"]
        if pid in seen:  # one row per point, its roles joined
            out[seen[pid]]["choice"] += f"; {label}"
            continue
        seen[pid] = len(out)
        tol = "" if pid == "defaults" else r.get("gate_tol") or ""
        out.append(
            {
                "choice": label,
                "point": pid[:8],
                "overflow_incidents": int(r["overflow_incidents"]),
                "cost_usd": None if r["cost_usd"] is None else round(float(r["cost_usd"]), 2),
                "rules_failed": len(gate_excess(tol)),
                "fails_on": _failed(tol) if pid != "defaults" else "-",
            }
        )
    return pl.DataFrame(out)


def answer(res: TuneResult) -> str:
    """The last line of `replay tune`: what to do, in one sentence a user can act on."""
    policy = res.files.get("policy", "recommended.toml")
    defaults = res.files.get("defaults", "defaults.toml")
    r, d = res.recommended, res.defaults or {}
    knobs = ", ".join(f"{k} = {res.params[k]}" for k in res.spec.swept_names if k in res.params)
    cost = "no price" if r.get("cost_usd") is None else f"${r['cost_usd']:.2f}"
    d_cost = "no price" if d.get("cost_usd") is None else f"${d['cost_usd']:.2f}"
    if res.gate_passed:
        return (
            f"ANSWER: use {policy} ({knobs}): it passes `replay check`'s gate against the defaults, "
            f"{int(r['overflow_incidents']):,} overflow incidents at {cost} (defaults: "
            f"{int(d.get('overflow_incidents', 0)):,} at {d_cost})"
        )
    near = res.nearest
    near_text = ""
    if near is not None:
        failed = _failed(near.get("gate_tol") or "")
        near_file = res.files.get("nearest", "nearest.toml")
        near_text = (
            f" The setting nearest to passing is point {near['point_id'][:8]} ({near_file}): it fails only on "
            f"{failed}, with {int(near['overflow_incidents']):,} overflow "
            f"incidents at " + ("no price" if near["cost_usd"] is None else f"${near['cost_usd']:.2f}") + "."
        )
    if r["point_id"] == "defaults":
        return (
            f"ANSWER: no swept setting passes the gate and none overflows less than the defaults: keep the "
            f"defaults ({policy}; {int(r['overflow_incidents']):,} overflow incidents at {cost}).{near_text}"
        )
    return (
        f"ANSWER: no swept setting passes the gate. Use {policy} ({knobs}) if fewer overflows matter more than "
        f"its regressions: {int(r['overflow_incidents']):,} overflow incidents vs the defaults' "
        f"{int(d.get('overflow_incidents', 0)):,}, {cost} vs {d_cost}; gate it with `replay check {defaults} "
        f"{policy} {r.get('gate_tol') or ''}`.".replace(" `.", "`.")
        + near_text
    )


def edge_knobs(res: TuneResult) -> list[str]:
    """Swept knobs (two or more values) whose recommended value is the lowest or highest swept (knobs with a
    tie-break preference, such as the margin, are left out: they often sit at an edge only by that preference)."""
    out = []
    preferred = {k.name for k in policy_class(res.spec.policy).space if k.prefer}
    for name, values in res.spec.grid.items():
        if len(values) < 2 or name in preferred or name not in res.params:
            continue
        if res.params[name] in (min(values), max(values)):
            side = "low" if res.params[name] == min(values) else "high"
            out.append(f"{name} = {res.params[name]} ({side} end)")
    return out


def policy_file(res: TuneResult, defaults: bool = False, best: bool = False, point: str | None = None) -> PolicyFile:
    """The recommendation (``defaults``: the policy's defaults at this window and reserve; ``best``: the best
    swept point when none passes the gate; ``point``: that swept point) as a policy file `replay simulate
    --policy-file`, `replay sweep` and `replay check` accept."""
    params = dict(res.spec.fixed) if defaults else dict(res.params)
    if best and res.best_swept:
        point = res.best_swept["point_id"]
    if point:
        params = {point_id(p): p for p in res.spec.points()}[point]
    return PolicyFile(
        name=res.spec.policy, params=params, cache=res.spec.cache, runs=res.spec.runs, tokenizer=res.spec.tokenizer
    )


def front_columns(res: TuneResult) -> list[str]:
    knobs = [k for k in res.spec.swept_names if k in res.front.columns]
    return [
        "point_id",
        *knobs,
        "summaries_per_100",
        "cache_hit_rate",
        "repeat_evicted",
        "cost_usd",
        "overflow_incidents",
        "runs_with_overflow",
        "emergencies",
        "repeat_evicted_tokens",
        "gate_ok",
    ]


def write_outputs(res: TuneResult, out_dir: Path) -> dict[str, Path]:
    """recommended.toml, defaults.toml (check's baseline), front.csv/.parquet, points.parquet, front.png/.svg
    under ``out_dir``."""
    from replay.reports import plots

    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    toml = out_dir / "recommended.toml"
    header = "\n".join([f"written by replay tune, {stamp}", *summary_lines(res)])
    toml.write_text(dump_policy_file(policy_file(res), header), encoding="utf-8")
    base = out_dir / "defaults.toml"
    base.write_text(
        dump_policy_file(
            policy_file(res, defaults=True),
            f"written by replay tune, {stamp}: "
            f"{res.spec.policy}'s defaults at this window and reserve (the baseline "
            "of: replay check defaults.toml recommended.toml)",
        ),
        encoding="utf-8",
    )
    fr = res.front.select([c for c in front_columns(res) if c in res.front.columns]).with_columns(
        (pl.col("point_id") == res.recommended["point_id"]).alias("recommended")
    )
    if res.best_swept:  # none passed the gate: the rule's choice, for a user who accepts its regressions
        best = out_dir / "best_swept.toml"
        best.write_text(
            dump_policy_file(
                policy_file(res, best=True),
                f"written by replay tune, {stamp}: the best "
                "swept point; it FAILS replay check's default gate against defaults.toml: "
                f"{res.best_swept.get('gate_blockers')}",
            ),
            encoding="utf-8",
        )
    if res.nearest and res.nearest["point_id"] != res.recommended["point_id"]:
        (out_dir / "nearest.toml").write_text(
            dump_policy_file(
                policy_file(res, point=res.nearest["point_id"]),
                f"written by replay tune, {stamp}: the swept point nearest to passing replay check's default "
                f"gate against defaults.toml; it fails {_failed(res.nearest.get('gate_tol') or '')}",
            ),
            encoding="utf-8",
        )
    files = {
        "policy": toml,
        "defaults": base,
        "front_csv": out_dir / "front.csv",
        "front_parquet": out_dir / "front.parquet",
        "points_parquet": out_dir / "points.parquet",
    }
    fr.write_csv(files["front_csv"])
    fr.write_parquet(files["front_parquet"])
    res.points.write_parquet(files["points_parquet"])
    s = res.spec
    title = (
        f"replay tune: {s.policy}, tokenizer {s.tokenizer or 'chars/4'}, window {s.fixed['window']:,}, "
        f"reserve {s.fixed['reserve']:,}" + ("" if res.gate_passed else "; no point passes check's gate")
    )
    ax = plots.tune_front(
        res.points,
        res.recommended,
        title,
        res.defaults,
        zero_overflow=res.zero_overflow,
        knobs=[k for k in s.swept_names if k in res.points.columns],
        cost_label=res.cost_cover.label(),
    )
    png, svg = plots.save(ax, out_dir, "front")
    files |= {"chart_png": png, "chart_svg": svg} | (
        {"best_swept": out_dir / "best_swept.toml"} if res.best_swept else {}
    )
    if (out_dir / "nearest.toml").exists() and res.nearest and res.nearest["point_id"] != res.recommended["point_id"]:
        files["nearest"] = out_dir / "nearest.toml"
    elif res.nearest:
        files["nearest"] = toml
    res.files = files
    return files
