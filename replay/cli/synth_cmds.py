"""synth and synth-compare: a large synthetic corpus that keeps an ingested corpus's statistics (docs/scale.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from replay.cli import app
from replay.cli.common import FormatOption, console, emit
from replay.errors import ReplayError


@app.command()
def synth(
    from_db: Annotated[Path, typer.Option("--from-db", help="Store of real runs to learn from (read only).")],
    out: Annotated[Path, typer.Option(help="Folder for the generated logs (created).")],
    runs: Annotated[int, typer.Option(help="How many runs to write.")] = 10_000,
    seed: Annotated[int, typer.Option(help="Random seed: the same seed and store give the same files.")] = 1,
    mix: Annotated[
        str | None,
        typer.Option(
            help="Formats and weights, e.g. claude-code=0.7,codex-rollout=0.3 (default: the source's share of runs)."
        ),
    ] = None,
    tokenizer: Annotated[
        str, typer.Option("--tokenizer", "-t", help="Tokenizer whose density per item kind the filler text matches.")
    ] = "o200k",
    exclude: Annotated[
        str | None, typer.Option(help="Leave out source runs whose path matches this SQL LIKE pattern, e.g. %fixture%.")
    ] = None,
    workers: Annotated[int, typer.Option(help="Writer processes.")] = 1,
) -> None:
    """Write RUNS synthetic Claude Code / Codex rollout logs whose statistics match the store's real runs."""
    from replay.progress import bar
    from replay.store import open_store
    from replay.synth import generate, learn

    if runs < 1:
        raise ReplayError(f"--runs {runs}: give at least 1")
    con = open_store(from_db, read_only=True)
    try:
        recipe = learn(con, seed, tokenizer, mix, exclude)
    finally:
        con.close()
    donors = ", ".join(f"{len(d)} {f}" for f, d in sorted(recipe.donors.items()))
    console.print(
        f"learned from {from_db}: {donors} runs; chars per token by kind: "
        + ", ".join(f"{k} {v:.2f}" for k, v in sorted(recipe.densities.items())),
        highlight=False,
    )
    progress = bar(count=True)
    with progress:
        task = progress.add_task(f"writing {runs:,} runs", total=runs)
        size = generate(recipe, runs, out, workers, lambda n, _b: progress.advance(task, n))
    console.print(
        f"{runs:,} runs, {size / 1e6:,.1f} MB in {out} (seed {seed}); "
        f"check: replay ingest {out} --db S && replay synth-compare {from_db} S",
        highlight=False,
    )


@app.command("synth-compare")
def synth_compare(
    source: Annotated[Path, typer.Argument(help="Store of the real runs.")],
    synthetic: Annotated[Path, typer.Argument(help="Store of the ingested synthetic runs.")],
    formats: Annotated[str, typer.Option(help="Formats compared (comma-separated).")] = "claude-code,codex-rollout",
    fmt: FormatOption = "table",
) -> None:
    """Each statistic the generator keeps, in both stores, with its tolerance; exit 1 if one is outside it."""
    import polars as pl

    from replay.store import open_store
    from replay.synth.compare import compare

    rows = compare(
        open_store(source, read_only=True),
        open_store(synthetic, read_only=True),
        [f.strip() for f in formats.split(",")],
    )
    emit(
        pl.DataFrame(
            [
                {
                    "statistic": r.statistic,
                    "source": r.source,
                    "synthetic": r.synthetic,
                    "difference": r.difference,
                    "tolerance": r.tolerance,
                    "ok": r.ok,
                }
                for r in rows
            ],
            schema_overrides={"source": pl.Float64, "synthetic": pl.Float64, "difference": pl.Float64},
        ),
        fmt,
        title=f"{source} vs {synthetic}: shares by absolute difference, the rest relative",
    )
    if not all(r.ok for r in rows):
        raise typer.Exit(1)
