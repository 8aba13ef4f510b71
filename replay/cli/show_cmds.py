"""show: the prompt a request would have sent under a policy, segment by segment, and its difference to another."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from replay.cli import app
from replay.cli.common import (
    CACHE_HELP,
    DEFAULT_DB_PATH,
    MAX_TOKENS,
    OWN_WINDOW_HELP,
    DbOption,
    FormatOption,
    TokenizerOption,
    console,
)
from replay.errors import ReplayError
from replay.policies.base import DEFAULT_WINDOW


def find_run(con, spec: str) -> str:
    """A run id: exact, else the one run whose id or source path contains ``spec`` (a LIKE pattern works too)."""
    if con.execute("SELECT count(*) FROM runs WHERE run_id = ?", [spec]).fetchall()[0][0]:
        return spec
    pattern = spec if "%" in spec else f"%{spec}%"
    hits = [
        r[0]
        for r in con.execute(
            "SELECT run_id FROM runs WHERE n_requests > 0 AND (run_id LIKE ? OR source_path LIKE ?) ORDER BY run_id",
            [pattern, pattern],
        ).fetchall()
    ]
    if not hits:
        raise ReplayError(f"no run matches {spec!r}; `replay runs` lists them")
    if len(hits) > 1:
        shown = ", ".join(hits[:8]) + (f" and {len(hits) - 8} more" if len(hits) > 8 else "")
        raise ReplayError(f"{spec!r} matches {len(hits)} runs ({shown}); give more of the run id")
    return hits[0]


@app.command()
def show(
    run: Annotated[str, typer.Argument(help="Run id, or a unique part of it or of its source path.")],
    k: Annotated[
        int, typer.Option("-k", "--request", help="Request index (0-based; negative counts from the end).")
    ] = -1,
    policy: Annotated[str, typer.Option("--policy", "-p", help="Policy name or preset.")] = "full",
    sets: Annotated[list[str], typer.Option("--set", help="Policy parameter key=value (repeatable).")] = [],  # noqa: B006
    vs: Annotated[str | None, typer.Option("--vs", help="A second policy: show both views and what differs.")] = None,
    vs_sets: Annotated[list[str], typer.Option("--vs-set", help="Parameter of the --vs policy (repeatable).")] = [],  # noqa: B006
    tokenizer: TokenizerOption = None,
    window: Annotated[int | None, typer.Option(min=1, max=MAX_TOKENS, help=OWN_WINDOW_HELP)] = None,
    reserve: Annotated[
        int, typer.Option(min=0, max=MAX_TOKENS, help="Reply reserve, tokens: overflow if prompt + reserve > window.")
    ] = 0,
    cache: Annotated[str, typer.Option(help=CACHE_HELP)] = "auto",
    html_out: Annotated[
        Path | None,
        typer.Option(
            "--html",
            help="Write the run's page here: prompt size over requests per policy, each request's view on click.",
        ),
    ] = None,
    wide: Annotated[bool, typer.Option("--wide", help="Wrap previews instead of cutting them at the width.")] = False,
    transcript: Annotated[
        bool,
        typer.Option(
            "--transcript",
            help="Write the run's transcript as one HTML page (every item in order, each request with its tokens, "
            "cache reads and writes and cost, a search box) instead of a request's view.",
        ),
    ] = False,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Where --transcript writes its page (default: RUN.transcript.html here)."),
    ] = None,
    db: DbOption = DEFAULT_DB_PATH,
    fmt: FormatOption = "table",
) -> None:
    """The prompt request K of RUN would have sent under --policy: every segment (harness prefix, items as sent
    or as placeholder/shrunk/spilled/omitted, the policy's summary, dropped ranges collapsed) with its tokens and
    cache status (cached, written, uncached), and totals; with --vs, also what differs."""
    from rich.console import Console

    from replay.cli.common import warnings_block
    from replay.policies import Budget, make_policy, parse_sets
    from replay.policies.window_fit import window_warnings
    from replay.reports.show import item_infos, replay_views
    from replay.reports.show_text import render
    from replay.simulator.caches import AUTO, make_cache
    from replay.simulator.load import load_many
    from replay.simulator.own_window import OwnWindows
    from replay.simulator.prompt import prompt_models
    from replay.store import open_store
    from replay.tokens.resolve import resolve_tokenizer

    if fmt not in ("table", "json"):
        raise ReplayError(f"--format {fmt!r}: choose table or json")
    if out is not None and not transcript:
        raise ReplayError("--out is where --transcript writes its page; add --transcript (or use --html PATH)")
    if transcript:
        _write_transcript(db, run, out)
        return
    con = open_store(db, read_only=not tokenizer)
    tid = resolve_tokenizer(con, tokenizer)
    rid = find_run(con, run)
    prompt = prompt_models(con, tid, [rid])[rid]
    specs = [(policy, sets)] + ([(vs, vs_sets)] if vs else [])
    # no window chosen: a policy that is the run's own replays it on fidelity's windows (replay.simulator.own_window)
    owns = [OwnWindows(name, parse_sets(knobs)) if window is None else None for name, knobs in specs]
    own = any(o is not None and OwnWindows.can_be_own(o.policy, o.sets) for o in owns)
    (arrays,) = load_many(con, [rid], tid, {rid: prompt}, own_windows=own)
    window = DEFAULT_WINDOW if window is None else window
    m = arrays.n_requests
    if not -m <= k < m:
        raise ReplayError(f"-k {k}: {rid} has {m} requests (0 to {m - 1}, or -1 for the last)")
    k = k % m
    infos = item_infos(con, arrays, prompt)
    pols, runs, budgets = [], [], []
    for (name, knobs), o in zip(specs, owns, strict=True):
        pol = make_policy(name, parse_sets(knobs))
        run_k, pol, budget = (
            (arrays, pol, Budget(window, reserve)) if o is None else o.settings(arrays, pol, Budget(window, reserve))
        )
        pols.append((pol, name + (f" ({', '.join(knobs)})" if knobs else "")))
        runs.append(run_k)
        budgets.append(budget)
    if len(pols) == 2 and pols[0][1] == pols[1][1]:
        raise ReplayError(f"--vs {vs}: the same policy and knobs as --policy; change one to see a difference")

    def model():
        return None if cache == AUTO else make_cache(cache)

    if html_out is not None:
        from replay.reports.show_html import write_page

        series = [
            replay_views(r, infos, p, model(), b, label=label)
            for (p, label), r, b in zip(pols, runs, budgets, strict=True)
        ]
        write_page(html_out, series)
        console.print(f"wrote {html_out} ({len(pols)} policies x {m} requests)", highlight=False)
        views = [s[k] for s in series]
    else:
        views = [
            replay_views(r, infos, p, model(), b, only=k, label=label)[0]
            for (p, label), r, b in zip(pols, runs, budgets, strict=True)
        ]
    warnings = [line for (p, _), b in zip(pols, budgets, strict=True) for line in window_warnings(p, b.window, reserve)]
    if fmt == "json":
        from replay.reports.show import diff_views

        warnings_block(warnings, Console(stderr=True))

        doc = {"views": [v.to_dict() for v in views]}
        if len(views) == 2:
            doc["diff"] = [d.to_dict() for d in diff_views(*views)]
        sys.stdout.write(json.dumps(doc) + "\n")
        return
    render(console, views, wide)
    warnings_block(warnings)


def _write_transcript(db: Path, spec: str, out: Path | None) -> None:
    """``show RUN --transcript``: the run's page, written to ``out`` (default: the run id, made a file name)."""
    import re

    from replay.reports.transcript import write_transcript
    from replay.store import open_store
    from replay.untrusted import for_terminal

    con = open_store(db, read_only=True)
    rid = find_run(con, spec)
    path = out or Path(re.sub(r"[^A-Za-z0-9._-]+", "_", rid).strip("._")[:120] + ".transcript.html")
    items, requests = write_transcript(con, rid, path)
    con.close()
    console.print(for_terminal(f"wrote {path} ({items:,} items, {requests:,} requests of {rid})"), highlight=False)
