"""The `replay` command line: a thin layer over the Python API, one module per verb group."""

from __future__ import annotations

import os
import signal
import sys


def _stopped_early(signum: int, frame: object) -> None:
    """Ctrl-C, SIGTERM or SIGHUP while the command line is still importing (seconds on a busy machine): nothing has
    been done yet, so one line and the exit code, not an import traceback or a silent death."""
    how = "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name
    sys.stderr.write(f"interrupted ({how}) while starting: nothing was done; rerun the command\n")
    sys.stderr.flush()
    os._exit(130 if signum == signal.SIGINT else 128 + signum)


_EARLY = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
try:  # only for the import below; run_app installs the command's own handlers
    _before = {s: signal.signal(s, _stopped_early) for s in _EARLY}
except ValueError:  # imported off the main thread: signals are not this import's to handle
    _before = {}

import importlib  # noqa: E402 - after the handlers above: the imports below are what takes long
from typing import Annotated  # noqa: E402

import typer  # noqa: E402

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

for _signum, _handler in _before.items():  # the importer's handlers back (run_app sets the command's)
    signal.signal(_signum, _handler)


def main() -> None:
    from replay.cli.common import run_app

    run_app(app)
