"""report and demo: charts (PNG + SVG) and a markdown/HTML write-up; the whole flow on the bundled sample."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from replay.cli import app
from replay.cli.common import DEFAULT_DB_PATH, MAX_TOKENS, DbOption, TokenizerOption, console
from replay.errors import ReplayError


@app.command()
def report(
    db: DbOption = DEFAULT_DB_PATH,
    out: Annotated[Path, typer.Option(help="Output folder (report.md, report.html, charts/).")] = Path("out/report"),
    window: Annotated[int, typer.Option(min=1, max=MAX_TOKENS, help="Context window, tokens.")] = 130_000,
    reserve: Annotated[int, typer.Option(min=0, max=MAX_TOKENS, help="Reply reserve, tokens.")] = 24_576,
    runs: Annotated[str | None, typer.Option(help="LIKE pattern of runs.")] = None,
    tokenizer: TokenizerOption = None,
    executor: Annotated[str, typer.Option(help="serial, local or ray.")] = "local",
) -> None:
    """Run the sweeps the charts need and write the report."""
    from replay.reports.build import ReportConfig, build_report
    from replay.simulator.load import run_ids
    from replay.store import open_store
    from replay.tokens.resolve import resolve_tokenizer

    con = open_store(db)
    if not run_ids(con, runs):
        where = f"--runs {runs!r} matches no run with requests in {db}" if runs else f"no runs with requests in {db}"
        raise ReplayError(f"{where}; `replay runs` lists them")
    path = build_report(con, out, ReportConfig(window, reserve, runs, resolve_tokenizer(con, tokenizer), executor))
    console.print(f"report: {path} and {path.with_suffix('.html')}", highlight=False)


@app.command()
def demo(out: Annotated[Path, typer.Option(help="Output folder.")] = Path("out/demo")) -> None:
    """Ingest the bundled sample (data/sample), simulate, sweep and report into OUT (a fresh store in
    OUT/demo.duckdb)."""
    from replay.cli.bundled import bundled
    from replay.ingest import ingest
    from replay.reports.build import ReportConfig, build_report
    from replay.store import open_store
    from replay.sweeps import from_dict, run_sweep

    t0 = time.perf_counter()
    sample = bundled("sample")
    out.mkdir(parents=True, exist_ok=True)
    con = open_store(out / "demo.duckdb")
    ingest(con, [sample])
    console.print(f"ingested {sample} ({time.perf_counter() - t0:.1f}s)", highlight=False)
    tokenizer = _tokens(con)
    spec = from_dict(
        {
            "sweep": {"policy": "seed_a", "name": "demo", "tokenizer": tokenizer or ""},
            "fixed": {"window": 130_000, "reserve": 24_576},
            "grid": {
                "protect": [8_000, 12_000, 24_000, 43_333],
                "summary_at": [50_000, 65_000, 80_000, 95_000, 110_000],
                "reclaim_floor": [0.0625, 0.125, 0.25],
            },
        }
    )
    res = run_sweep(con, spec, out_dir=out, progress=False)
    console.print(f"sweep {res.sweep_id}: {res.points} points x {res.runs} runs -> {res.parquet}", highlight=False)
    path = build_report(con, out, ReportConfig(tokenizer=tokenizer))
    console.print(f"report: {path} ({time.perf_counter() - t0:.1f}s total)", highlight=False)


def _tokens(con) -> str | None:
    """Count tokens with the first built-in tokenizer; chars/4 estimates otherwise (and say so)."""
    try:
        from replay.tokens.counting import count_items
        from replay.tokens.loading import builtin_names, load_tokenizer

        tok = load_tokenizer(builtin_names()[0])
        count_items(con, tok)
        console.print(f"tokens: counted with the built-in {tok.tokenizer_id}", highlight=False)
        return tok.tokenizer_id
    except Exception as exc:  # noqa: BLE001 - the demo goes on with the estimate and says so
        console.print(f"tokens: using chars/4 estimates ({type(exc).__name__}: {str(exc)[:80]})", highlight=False)
        return None
