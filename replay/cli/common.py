"""Options and output helpers shared by every command."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Literal

import polars as pl
import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from replay.errors import ReplayError
from replay.store import DEFAULT_DB

DbOption = Annotated[Path, typer.Option("--db", help="DuckDB store file (env REPLAY_DB).", envvar="REPLAY_DB")]
DEFAULT_DB_PATH = DEFAULT_DB
OutFormat = Literal["table", "json", "csv"]
FormatOption = Annotated[str, typer.Option("--format", help="Output: table, json or csv.")]
TOKENIZER_HELP = ("Tokenizer: a built-in NAME (`replay tokenizers` lists them: o200k, cl100k, claude-legacy, "
                  "tekken, ...) or a PATH (tokenizer.json, model directory, .gguf, .tiktoken). Items not yet "
                  "counted are counted (cached in the store). Unknown names are errors.")
TokenizerOption = Annotated[str | None, typer.Option(
    "--tokenizer", "-t", help=TOKENIZER_HELP + " Omitted: chars/4 estimates, labelled as such.")]
RequiredTokenizerOption = Annotated[str, typer.Option("--tokenizer", "-t", help=TOKENIZER_HELP)]
CACHE_HELP = ("Cache model for every run: anthropic, openai, deepseek, gemini, vllm, llamacpp, none; auto (default): "
              "each run under its provider's own (Claude -> anthropic, GPT -> openai, DeepSeek -> deepseek, Gemini -> "
              "gemini, else none).")
PricesOption = Annotated[Path | None, typer.Option(
    "--prices", help="TOML/JSON price file: [model] input, output, cache_read, cache_write, cache_write_1h "
    "(USD/Mtok), provider, same_as; a model name or glob. Overrides genai-prices.")]
PriceOption = Annotated[list[str], typer.Option(
    "--price", help="Price override for every run, key=value (repeatable): input, output, cache_read, "
    "cache_write, cache_write_1h (USD/Mtok), provider, same_as=MODEL.")]

# markup off: text from logs and users (paths, names, SQL results) prints literally; style with Text/style=.
console = Console(markup=False)


def emit(frame: pl.DataFrame, fmt: str = "table", title: str | None = None) -> None:
    """Print a frame as a rich table, JSON rows or CSV."""
    if fmt == "json":
        sys.stdout.write(frame.write_json() + "\n")
    elif fmt == "csv":
        sys.stdout.write(frame.write_csv())
    elif fmt == "table":
        table = Table(title=Text(title) if title else None)
        for col in frame.columns:
            table.add_column(Text(col), justify="right" if frame[col].dtype.is_numeric() else "left")
        for row in frame.iter_rows():
            table.add_row(*(Text("" if v is None else f"{v:,.4g}" if isinstance(v, float) else str(v)) for v in row))
        console.print(table)
    else:
        raise ReplayError(f"--format {fmt!r}: choose table, json or csv")


def run_app(app: typer.Typer) -> None:
    """Run the CLI, turning ReplayError into a one-line message and exit code 2."""
    try:
        app()
    except ReplayError as exc:
        Console(stderr=True).print(Text.assemble(("error:", "bold red"), f" {exc}"), highlight=False)
        raise SystemExit(2) from None
