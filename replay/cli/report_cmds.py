"""report and demo: charts (PNG + SVG) and a markdown/HTML write-up; the whole flow on the bundled sample."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from replay.cli import app
from replay.cli.common import DEFAULT_DB_PATH, MAX_TOKENS, DbOption, TokenizerOption, console, output_folder
from replay.errors import ReplayError
from replay.policies.base import DEFAULT_WINDOW, WINDOW_HELP


@app.command()
def report(
    db: DbOption = DEFAULT_DB_PATH,
    out: Annotated[Path, typer.Option(help="Output folder (report.md, report.html, charts/).")] = Path("out/report"),
    window: Annotated[int, typer.Option(min=1, max=MAX_TOKENS, help=WINDOW_HELP)] = DEFAULT_WINDOW,
    reserve: Annotated[int, typer.Option(min=0, max=MAX_TOKENS, help="Reply reserve, tokens.")] = 24_576,
    runs: Annotated[str | None, typer.Option(help="LIKE pattern of runs.")] = None,
    tokenizer: TokenizerOption = None,
    executor: Annotated[str, typer.Option(help="serial, local or ray.")] = "local",
) -> None:
    """Run the sweeps the charts need and write the report."""
    output_folder(out, "--out")
    from replay.reports.build import ReportConfig, build_report
    from replay.simulator.load import run_ids
    from replay.store import open_store
    from replay.tokens.resolve import resolve_tokenizer

    con = open_store(db)
    if not run_ids(con, runs):
        where = f"--runs {runs!r} matches no run with requests in {db}" if runs else f"no runs with requests in {db}"
        raise ReplayError(f"{where}; `replay runs` lists them")
    cfg = ReportConfig(window, reserve, runs, resolve_tokenizer(con, tokenizer), executor, progress=True)
    path = build_report(con, out, cfg)
    console.print(f"report: {path} and {path.with_suffix('.html')}", highlight=False)


# the demo's own window, stated in its report: the bundled sample's runs are sized so that a 130,000-token window
# shows overflows, summaries and the emergency margin at work (at the 200,000 default nothing would overflow)
DEMO_WINDOW = 130_000


@app.command()
def demo(out: Annotated[Path, typer.Option(help="Output folder.")] = Path("out/demo")) -> None:
    """Ingest the bundled sample (data/sample), simulate, sweep and report into OUT (a fresh store in
    OUT/demo.duckdb); each step is named on stderr with its time."""
    from replay.cli.bundled import bundled
    from replay.ingest import ingest
    from replay.progress import step
    from replay.reports.build import PROMPT_POLICIES, ReportConfig, build_report
    from replay.simulator.kernels.compiling import compile_in_background
    from replay.store import open_store
    from replay.sweeps import from_dict, run_sweep

    t0 = time.perf_counter()
    sample = bundled("sample")
    out.mkdir(parents=True, exist_ok=True)
    con = open_store(out / "demo.duckdb")
    # the report's other policies compile on a spare core while this process compiles and sweeps seed_a; but full,
    # whose loop is the driver alone, compiles faster here after seed_a's (reusing every shared callee: ~4 s) than
    # in the child (~8 s, before the others)
    others = [p for p in PROMPT_POLICIES.values() if p not in ("seed_a", "full")]
    background = compile_in_background(others)
    with step(f"ingesting {sample}"):
        ingest(con, [sample])
    with step("counting tokens"):
        tokenizer = _tokens(con)
    with step("compiling the simulator (first run only; cached after)"):
        _warm_up(con, tokenizer)
    spec = from_dict(
        {
            "sweep": {"policy": "seed_a", "name": "demo", "tokenizer": tokenizer or ""},
            "fixed": {"window": DEMO_WINDOW, "reserve": 24_576},
            "grid": {
                "protect": [8_000, 12_000, 24_000, 43_333],
                "summary_at": [50_000, 65_000, 80_000, 95_000, 110_000],
                "reclaim_floor": [0.0625, 0.125, 0.25],
            },
        }
    )
    with step("sweeping seed_a (60 points)"):
        res = run_sweep(con, spec, out_dir=out, progress=True)
    console.print(f"sweep {res.sweep_id}: {res.points} points x {res.runs} runs -> {res.parquet}", highlight=False)
    if background is not None:
        with step(f"compiling {', '.join(others)} (in the background since the start)"):
            if background.wait():
                console.print(f"the background compile failed (exit {background.returncode}): compiling here")
    path = build_report(con, out, ReportConfig(DEMO_WINDOW, tokenizer=tokenizer, progress=True))
    console.print(f"report: {path} ({time.perf_counter() - t0:.1f}s total)", highlight=False)


def _warm_up(con, tokenizer: str | None) -> None:
    """Simulate the smallest run once in this process, so numba compiles (or loads) the kernels here, once, with
    a word on screen, rather than inside the sweep's workers."""
    from replay.policies import Budget, make_policy
    from replay.simulator.load import load_runs
    from replay.simulator.results import simulate_many

    runs = load_runs(con, tokenizer)
    smallest = min(runs, key=lambda r: r.n_requests)
    simulate_many([smallest], make_policy("seed_a", {}), None, Budget(DEMO_WINDOW, 24_576), tokenizer)


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
