"""behaviour: per run under a policy setting, identical repeat calls the view hid, and loop episodes."""

from __future__ import annotations

from typing import Annotated

import typer

from replay.cli import app
from replay.cli.common import DEFAULT_DB_PATH, MAX_TOKENS, DbOption, FormatOption, TokenizerOption, console, emit
from replay.errors import ReplayError


@app.command()
def behaviour(
    policy: Annotated[str, typer.Option("--policy", "-p", help="Policy name or preset.")] = "full",
    sets: Annotated[list[str], typer.Option("--set", help="Policy parameter key=value (repeatable).")] = [],  # noqa: B006
    runs: Annotated[str | None, typer.Option(help="LIKE pattern on run_id or source path.")] = None,
    tokenizer: TokenizerOption = None,
    window: Annotated[int, typer.Option(min=1, max=MAX_TOKENS, help="Context window, tokens.")] = 200_000,
    reserve: Annotated[int, typer.Option(min=0, max=MAX_TOKENS, help="Reply reserve, tokens.")] = 0,
    episodes: Annotated[bool, typer.Option("--episodes", help="Print the loop episodes, not the run rows.")] = False,
    db: DbOption = DEFAULT_DB_PATH,
    fmt: FormatOption = "table",
) -> None:
    """Per run under --policy: identical repeat calls (tool, file, line range or command), those whose earlier
    result was unchanged (stale) and those whose earlier result the policy's view hid when the call was decided
    (blind); and loop episodes (cycles of identical calls) with the share the view hid. Rows are stored
    (behaviour_runs, behaviour_episodes). The recorded actions stay fixed: no estimate of turns or loops under
    the policy is made here."""
    import polars as pl

    from replay.behaviour.measure import EPISODE_COLUMNS, RUN_COLUMNS
    from replay.behaviour.measure import behaviour as measure
    from replay.behaviour.rows import write_rows
    from replay.policies import Budget, make_policy, parse_sets
    from replay.simulator.load import load_runs
    from replay.store import open_store
    from replay.tokens.resolve import resolve_tokenizer
    from replay.untrusted import for_terminal

    params = parse_sets(sets)
    pol = make_policy(policy, params)
    con = open_store(db)
    try:
        arrays = load_runs(con, resolve_tokenizer(con, tokenizer), runs)
        if not arrays:
            raise ReplayError(f"--runs {runs!r} matches no run with requests in {db}; `replay runs` lists them")
        run_rows, ep_rows = [], []
        for run in arrays:
            row, eps = measure(run, pol, Budget(window, reserve))
            run_rows.append(row)
            ep_rows.extend(eps)
        write_rows(con, policy, dict(pol.config.__dict__), run_rows, ep_rows)
    finally:
        con.close()
    rows, columns = (ep_rows, EPISODE_COLUMNS) if episodes else (run_rows, RUN_COLUMNS)
    frame = pl.DataFrame([{c: r[c] for c in columns} for r in rows], schema=list(columns), orient="row")
    if fmt != "csv":  # csv output escapes its own text cells
        frame = frame.with_columns(
            pl.col(c).map_elements(for_terminal, return_dtype=pl.String)
            for c, t in frame.schema.items()
            if t == pl.String
        )
    emit(frame, fmt, title=None if fmt != "table" else f"behaviour under {for_terminal(policy)}")
    if fmt == "table" and not episodes and ep_rows:
        console.print(f"{len(ep_rows)} loop episode(s); --episodes lists them", highlight=False)
