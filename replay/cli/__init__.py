"""The `replay` command line: a thin layer over the Python API, one module per verb group."""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(help="Replay recorded agent runs under context policies.", no_args_is_help=True,
                  pretty_exceptions_enable=False, rich_markup_mode=None)  # help keeps [sweep], [model] literally

# Each module registers its commands on `app` when imported.
COMMAND_MODULES = ["store_cmds", "sweep_cmds", "simulate_cmds", "check_cmds", "tokens_cmds", "report_cmds",
                   "tune_cmds", "metrics_cmds", "show_cmds"]

for _name in COMMAND_MODULES:
    importlib.import_module(f"replay.cli.{_name}")


def main() -> None:
    from replay.cli.common import run_app

    run_app(app)
