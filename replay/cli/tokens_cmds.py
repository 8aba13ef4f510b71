"""tokens and calibrate."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from replay.cli import app
from replay.cli.common import DEFAULT_DB_PATH, DbOption, FormatOption, console, emit
from replay.store import frame, open_store

TokenizerOption = Annotated[str, typer.Option(
    "--tokenizer", "-t", help="tokenizer.json, model directory, .gguf file, or built-in (tekken, claude-legacy).")]


@app.command()
def tokens(tokenizer: TokenizerOption, db: DbOption = DEFAULT_DB_PATH, fmt: FormatOption = "table") -> None:
    """Count tokens of every item with a real tokenizer (cached per content hash; reruns are near free)."""
    from replay.tokens import count_items, load_tokenizer

    tok = load_tokenizer(tokenizer)
    con = open_store(db)
    start = time.perf_counter()
    added = count_items(con, tok, progress=True)
    console.print(f"{tok.tokenizer_id}: {added:,} new content hashes counted in {time.perf_counter() - start:.2f} s")
    emit(frame(con, """
        SELECT r.format, count(DISTINCT i.run_id) AS runs, count(*) AS items, sum(i.chars) AS chars,
               sum(t.n_tokens) AS tokens, round(sum(i.chars) / sum(t.n_tokens), 2) AS chars_per_token
        FROM items i JOIN runs r USING (run_id)
        JOIN token_counts t ON t.content_hash = i.content_hash AND t.tokenizer_id = ?
        GROUP BY r.format ORDER BY r.format""", [tok.tokenizer_id]), fmt, title=f"tokens ({tok.tokenizer_id})")


@app.command()
def calibrate(
    tokenizer: TokenizerOption,
    db: DbOption = DEFAULT_DB_PATH,
    proxy: Annotated[str | None, typer.Option(help="Also rate this tokenizer as a proxy estimator.")] = None,
    fmt: FormatOption = "table",
) -> None:
    """Fit per-run overhead and scale to recorded usage; report error per file and estimator bias by content."""
    from replay.tokens import count_items, default_estimators, load_tokenizer
    from replay.tokens.bias import estimator_bias
    from replay.tokens.calibrate import calibrate as run_calibration
    from replay.tokens.calibrate import error_by_file

    tok = load_tokenizer(tokenizer)
    con = open_store(db)
    requests, runs = run_calibration(con, tok, progress=True)
    if runs.is_empty():
        console.print("no runs with recorded prompt usage (requests.prompt_tokens) in this store")
        return
    by_file = error_by_file(requests)
    emit(by_file, fmt, title=f"error after calibration, per file ({tok.tokenizer_id})")
    med, p95 = requests["err"].median(), requests["err"].quantile(0.95)
    console.print(f"{len(runs)} runs, {len(requests):,} requests: median |err|/recorded {med:.2%}, p95 {p95:.2%}; "
                  f"files within 3% median: {(by_file['median_err'] <= 0.03).sum()}/{len(by_file)}, "
                  f"within 10% p95: {(by_file['p95_err'] <= 0.10).sum()}/{len(by_file)}")
    proxy_tok = load_tokenizer(proxy) if proxy else None
    if proxy_tok is not None:
        count_items(con, proxy_tok)
    emit(estimator_bias(con, tok.tokenizer_id, default_estimators(proxy_tok)), fmt,
         title="estimator bias (est/real - 1) by part and content")
