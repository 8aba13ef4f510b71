"""check: the regression gate between two policy files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from replay.cli import app
from replay.cli.common import DEFAULT_DB_PATH, DbOption, PriceOption, PricesOption, TokenizerOption, warnings_block
from replay.errors import ReplayError
from replay.untrusted import for_terminal


def parse_tolerances(pairs: list[str]) -> dict[str, float]:
    from replay.policies.config import parse_sets
    from replay.sweeps.gate import METRICS
    from replay.sweeps.policy_file import tolerance

    out = {}
    for k, v in parse_sets(pairs).items():
        if k not in METRICS:
            raise ReplayError(f"--tol {k}: not a gated metric; choose from {', '.join(METRICS)}")
        out[k] = tolerance(k, v, "--tol")
    return out


def _one_tokenizer(con, base, cand) -> str | None:
    """Both policies are compared on one count: the files may name a tokenizer, but not two different ones."""
    from replay.tokens.resolve import resolve_tokenizer

    tid = resolve_tokenizer(con, base.tokenizer or cand.tokenizer)
    if base.tokenizer and cand.tokenizer:
        other = resolve_tokenizer(con, cand.tokenizer)
        if other != tid:
            raise ReplayError(
                f"{base.path} counts with {tid}, {cand.path} with {other}; check compares both "
                "policies on one token count: pass -t NAME|PATH to choose"
            )
    return tid


@app.command()
def check(
    baseline: Annotated[Path, typer.Argument(help="Baseline policy file (TOML).")],
    candidate: Annotated[Path, typer.Argument(help="Candidate policy file (TOML).")],
    db: DbOption = DEFAULT_DB_PATH,
    runs: Annotated[str | None, typer.Option(help="LIKE pattern of runs (default: the baseline's, else all).")] = None,
    tol: Annotated[list[str] | None, typer.Option("--tol", help="Tolerance metric=value (repeatable).")] = None,
    markdown_out: Annotated[Path | None, typer.Option("--markdown", help="Also write the report here.")] = None,
    fmt: Annotated[str, typer.Option("--format", help="stdout: markdown (default) or json.")] = "markdown",
    junit: Annotated[
        Path | None,
        typer.Option(
            "--junit", help="Also write JUnit XML here (a test case per gated metric and per run and per-run rule)."
        ),
    ] = None,
    tokenizer: TokenizerOption = None,
    prices: PricesOption = None,
    price: PriceOption = [],  # noqa: B006
) -> None:
    """Exit 1 when the candidate regresses any gated metric past its tolerance (markdown report on stdout, or
    JSON with --format json; --junit for CI test reports). docs/ci.md has a GitHub Actions job."""
    from replay.metrics.coverage import cover_of_frame
    from replay.metrics.prices import pricing_from_options
    from replay.reports.check_output import markdown, setup, to_json, to_junit
    from replay.simulator.load import load_runs
    from replay.store import open_store
    from replay.sweeps.gate import compare, simulate_all
    from replay.sweeps.policy_file import load_policy_file
    from replay.tokens.resolve import resolve_tokenizer

    if fmt not in ("markdown", "json"):
        raise ReplayError(f"--format {fmt!r}: choose markdown or json")
    base, cand = load_policy_file(baseline), load_policy_file(candidate)
    # writable only to count a tokenizer's missing items
    con = open_store(db, read_only=not (tokenizer or base.tokenizer or cand.tokenizer))
    tid = resolve_tokenizer(con, tokenizer) if tokenizer else _one_tokenizer(con, base, cand)
    arrays = load_runs(con, tid, runs or base.runs)
    con.close()  # the runs are in memory: the store is free for the next command (in this process too)
    if not arrays:
        raise ReplayError(f"no runs in {db} match {runs or base.runs!r}; see `replay runs`")
    pricing = pricing_from_options(prices, price)
    base_rows, cand_rows = simulate_all(base, arrays, pricing), simulate_all(cand, arrays, pricing)
    result = compare(base_rows, cand_rows, base.tolerances | parse_tolerances(tol or []))
    sides = {"baseline": setup(base_rows, base.name), "candidate": setup(cand_rows, cand.name)}
    cover = cover_of_frame(base_rows)  # unpriced runs are left out of both cost totals
    text = markdown(result, base, cand, len(arrays), sides, cover)
    typer.echo(to_json(result, sides, len(arrays)) if fmt == "json" else text)
    warnings = [line for label, pf in (("baseline", base), ("candidate", cand)) for line in _window_lines(label, pf)]
    warnings_block(warnings + [for_terminal(line) for line in cover.lines()], Console(stderr=True))
    if markdown_out:
        markdown_out.write_text(text, encoding="utf-8")
    if junit:
        junit.write_text(to_junit(result, len(arrays)), encoding="utf-8")
    raise typer.Exit(1 if result.regressed else 0)


def _window_lines(label: str, pf) -> list[str]:
    """The policy file's settings that cannot act at its window (replay.policies.window_fit), named by side."""
    from replay.policies import make_policy
    from replay.policies.base import Budget
    from replay.policies.window_fit import window_warnings
    from replay.sweeps.policy_file import simulate_settings

    name, knobs, budget, _ = simulate_settings(pf)
    pol, b = make_policy(name, knobs), Budget(**budget)
    return [f"{label}: {line}" for line in window_warnings(pol, b.window, b.reserve)]
