"""simulate: replay stored runs under a policy and store the metrics."""

from __future__ import annotations

from typing import Annotated

import typer

from replay.cli import app
from replay.cli.common import DEFAULT_DB_PATH, DbOption, FormatOption, console, emit
from replay.errors import ReplayError
from replay.policies import Budget, make_policy, parse_sets, policy_class, registry
from replay.simulator.caches import make_cache
from replay.simulator.load import load_runs
from replay.simulator.results import composition_totals, simulate_many, store_simulation, totals
from replay.store import open_store

COLUMNS = ["run_id", "requests", "prompt_tokens", "overflow_incidents", "summaries", "cache_hit_rate",
           "uncached_tokens", "repeat_evicted", "max_reads_one_resource", "cost_usd", "token_source"]


@app.command()
def simulate(
    policy: Annotated[str, typer.Option("--policy", "-p", help="Policy name or pkg.module:Class.")] = "full",
    sets: Annotated[list[str], typer.Option("--set", help="Policy parameter key=value (repeatable).")] = [],  # noqa: B006
    tokenizer_id: Annotated[str | None, typer.Option(help="Real counts from token_counts for this tokenizer; "
                                                           "else chars/4 estimates (labelled).")] = None,
    window: Annotated[int, typer.Option(help="Context window, tokens.")] = 200_000,
    reserve: Annotated[int, typer.Option(help="Reply reserve, tokens: overflow if prompt + reserve > window.")] = 0,
    cache: Annotated[str, typer.Option(help="Cache model: anthropic, openai, vllm, llamacpp, none.")] = "anthropic",
    runs: Annotated[str | None, typer.Option(help="LIKE pattern on run_id or source path.")] = None,
    show_config: Annotated[bool, typer.Option(help="Print the effective config and exit.")] = False,
    store: Annotated[bool, typer.Option(help="Write results to the store.")] = True,
    by_tool: Annotated[bool, typer.Option("--by-tool", help="Also print the window composition by tool "
                                                             "(call arguments, results; prompt share).")] = False,
    db: DbOption = DEFAULT_DB_PATH, fmt: FormatOption = "table",
) -> None:
    """Replay every stored run under a policy; print a run table, store sim_runs, sim_requests, sim_composition."""
    pol = make_policy(policy, parse_sets(sets))
    if show_config:
        console.print_json(pol.config.to_json())
        return
    con = open_store(db, read_only=not store)
    arrays = load_runs(con, tokenizer_id, runs)
    if not arrays:
        raise ReplayError("no runs with requests in the store; run `replay ingest PATHS` first")
    sim = simulate_many(arrays, pol, make_cache(cache), Budget(window, reserve), tokenizer_id)
    if store:
        store_simulation(con, sim)
    emit(sim.runs.select(COLUMNS), fmt, title=f"{pol.name} ({sim.sim_id})")
    if fmt == "table":
        est = [s for s in sim.token_sources if not s.startswith("real:")]
        if est:
            console.print(f"[yellow]token counts are estimates ({', '.join(est)}); run `replay tokens` and pass "
                          "--tokenizer-id for real counts[/]")
        console.print(f"sim_id {sim.sim_id}: {totals(sim)}", highlight=False)
    if by_tool:
        emit(composition_totals(sim), fmt, title=f"window composition by tool ({sim.sim_id}; also in sim_composition)")


@app.command()
def policies() -> None:
    """List policies and their parameters (defaults)."""
    for name in sorted(registry()):
        cls = policy_class(name)
        params = ", ".join(f"{n}={d!r}" for n, d, _ in cls.Config.describe())
        console.print(f"[bold]{name}[/]: {(cls.Config.__doc__ or '').strip()}\n  {params}", highlight=False)


@app.command()
def fidelity(db: DbOption = DEFAULT_DB_PATH,
             tokenizer: Annotated[str, typer.Option("--tokenizer", "-t", help=(
                 "Count with this tokenizer first (file or built-in); empty: chars/4."))] = "",
             cache: Annotated[str, typer.Option(help="anthropic (Claude Code runs) or openai (Codex runs).")] = (
                 "anthropic"),
             tolerance: Annotated[float, typer.Option(help="Allowed share difference (0.05 = 5 points).")] = 0.05,
             fmt: FormatOption = "table") -> None:
    """Replay every run with recorded cache reads under full history and its harness's cache model; compare
    the cache-read share with the recorded one, per run (the proof that the simulator is right)."""
    from replay.simulator.fidelity import fidelity_frame

    con = open_store(db)
    tid = None
    if tokenizer:
        from replay.tokens import count_items, load_tokenizer

        tok = load_tokenizer(tokenizer)
        count_items(con, tok, progress=True)
        tid = tok.tokenizer_id
    df = fidelity_frame(con, tid, cache, tolerance)
    if df.is_empty():
        raise ReplayError("no run with recorded cache reads in this store; ingest Claude Code or Codex logs")
    shown = df.select("file", "requests", "simulated", "recorded", "diff_pp", "within", "tail") if fmt == "table" \
        else df
    emit(shown, fmt,
         title=f"cache-read share, simulated vs recorded ({int(df['within'].sum())}/{df.height} within "
               f"{tolerance * 100:g} points)")
