"""The `replay` command line: a thin layer over the Python API, one module per verb group."""

from __future__ import annotations

import importlib
from typing import Annotated

import typer

app = typer.Typer(
    help="Replay recorded agent runs under context policies.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)  # help keeps [sweep], [model] literally

# Each module registers its commands on `app` when imported.
COMMAND_MODULES = [
    "store_cmds",
    "sweep_cmds",
    "simulate_cmds",
    "check_cmds",
    "tokens_cmds",
    "report_cmds",
    "tune_cmds",
    "metrics_cmds",
    "show_cmds",
    "synth_cmds",
    "behaviour_cmds",
]


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("replay")
        except PackageNotFoundError:  # run from a checkout that was never installed
            from replay import __version__ as number
        typer.echo(f"replay {number}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool, typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """Replay recorded agent runs under context policies."""


for _name in COMMAND_MODULES:
    importlib.import_module(f"replay.cli.{_name}")


def main() -> None:
    from replay.cli.common import run_app

    run_app(app)
