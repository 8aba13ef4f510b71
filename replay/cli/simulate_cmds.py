"""simulate: replay stored runs under a policy and store the metrics."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import polars as pl
import typer
from rich.console import Console
from rich.text import Text

from replay.cli import app
from replay.cli.behaviour_options import (
    BAND_SHOWN,
    BEHAVIOUR_COLUMNS,
    POINT_SHOWN,
    BehaviourFlag,
    CalibrationOption,
    CapOption,
    check_options,
)
from replay.cli.common import (
    CACHE_HELP,
    DEFAULT_DB_PATH,
    MAX_TOKENS,
    OWN_WINDOW_HELP,
    TOKENIZER_HELP,
    DbOption,
    FormatOption,
    PriceOption,
    PricesOption,
    WideOption,
    console,
    emit,
    note,
    warnings_block,
)
from replay.errors import ReplayError
from replay.metrics.prices import pricing_from_options
from replay.policies import PRESETS, Budget, aliases_of, make_policy, parse_sets, policy_class, registry
from replay.policies.base import DEFAULT_WINDOW
from replay.policies.window_fit import window_warnings
from replay.simulator.caches import AUTO, make_cache
from replay.simulator.fidelity import EXACT
from replay.simulator.kernels.compiling import compile_beside_the_fit
from replay.simulator.load import load_runs, prompt_sources
from replay.simulator.own_window import OwnWindows, plain
from replay.simulator.results import billing_lines, composition_totals, simulate_many, store_simulation, totals_line
from replay.store import open_store
from replay.untrusted import for_terminal

if TYPE_CHECKING:
    import duckdb

    from replay.policies.base import AnyPolicy
    from replay.run_arrays import RunArrays

# in the order a narrow terminal keeps them (replay.cli.common.emit)
COLUMNS = [
    "run_id",
    "requests",
    "prompt_tokens",
    "overflow_incidents",
    "cost_usd",
    "cache_hit_rate",
    "summaries",
    "uncached_tokens",
    "repeat_evicted",
    "max_reads_one_resource",
    "recorded_cost_usd",
    "billed_cost_usd",
    "unbilled_summary_cost_usd",
    "bill_gap",
    "cache_model",
    "price_source",
    "token_source",
    "recorded_cost_note",
]


@app.command()
def simulate(
    policy: Annotated[str, typer.Option("--policy", "-p", help="Policy name or pkg.module:Class.")] = "full",
    sets: Annotated[list[str], typer.Option("--set", help="Policy parameter key=value (repeatable).")] = [],  # noqa: B006
    tokenizer: Annotated[
        str | None,
        typer.Option(
            "--tokenizer",
            "-t",
            help=TOKENIZER_HELP + " 'model': each run with its model's built-in (chars/4, labelled, where none "
            "exists). Omitted: chars/4 estimates, labelled as such.",
        ),
    ] = None,
    tokenizer_id: Annotated[
        str | None, typer.Option("--tokenizer-id", hidden=True, help="Old name of --tokenizer (same resolver).")
    ] = None,
    window: Annotated[int | None, typer.Option(min=1, max=MAX_TOKENS, help=OWN_WINDOW_HELP)] = None,
    reserve: Annotated[
        int, typer.Option(min=0, max=MAX_TOKENS, help="Reply reserve, tokens: overflow if prompt + reserve > window.")
    ] = 0,
    cache: Annotated[str, typer.Option(help=CACHE_HELP)] = "auto",
    prices: PricesOption = None,
    price: PriceOption = [],  # noqa: B006
    runs: Annotated[str | None, typer.Option(help="LIKE pattern on run_id or source path.")] = None,
    wide: WideOption = False,
    show_config: Annotated[bool, typer.Option(help="Print the effective config and exit.")] = False,
    store: Annotated[bool, typer.Option(help="Write results to the store.")] = True,
    by_tool: Annotated[
        bool,
        typer.Option(
            "--by-tool", help="Also print the window composition by tool (call arguments, results; prompt share)."
        ),
    ] = False,
    overhead: Annotated[
        int | None,
        typer.Option(
            min=0,
            help=("Harness prefix (tokens) for runs with no recorded usage to fit and no profile of their harness."),
        ),
    ] = None,
    db: DbOption = DEFAULT_DB_PATH,
    fmt: FormatOption = "table",
    behaviour: BehaviourFlag = False,
    cap: CapOption = None,
    calibration: CalibrationOption = None,
    policy_file: Annotated[
        Path | None,
        typer.Option(
            "--policy-file",
            help=(
                "Policy file (TOML, e.g. tune's recommended.toml): its policy, knobs, window, reserve, cache, runs and "
                "tokenizer replace --policy and the defaults; --set overrides a knob."
            ),
        ),
    ] = None,
) -> None:
    """Replay every stored run under a policy; print a run table, store sim_runs, sim_requests, sim_composition.

    The prompt of each request is the view's items plus the harness prefix the log does not hold, counted as
    the server counts them (replay.simulator.prompt): fitted on the run's recorded usage, else its harness's
    profile, else ``--overhead``; runs with none of these are listed."""
    check_options(behaviour, cap, calibration)
    knobs: dict[str, Any] = {}
    cache_params: dict[str, Any] = {}
    if policy_file:  # the file's settings; explicit -t/--runs/--cache still win
        from replay.sweeps.policy_file import load_policy_file, simulate_settings

        pf = load_policy_file(policy_file)
        policy, knobs, budget, cache_params = simulate_settings(pf)
        window, reserve = budget.get("window", window), budget.get("reserve", reserve)
        cache, runs = pf.cache if cache == AUTO else cache, runs or pf.runs
        tokenizer = tokenizer or tokenizer_id or pf.tokenizer
    chosen = {**knobs, **parse_sets(sets)}
    # no window chosen: a run replayed on its harness's own policy takes its own (replay.simulator.own_window)
    own = OwnWindows(policy, chosen) if window is None and OwnWindows.can_be_own(policy, chosen) else None
    window = DEFAULT_WINDOW if window is None else window
    pol = make_policy(policy, chosen)
    if show_config:
        console.print_json(pol.config.to_json())
        return
    from replay.tokens.resolve import resolve_tokenizer

    con = open_store(db, read_only=not store and not (tokenizer or tokenizer_id))
    compile_beside_the_fit(policy)
    if (tokenizer or tokenizer_id) == MODEL_TOKENIZER:
        tokenizer_id, arrays = runs_by_model(con, runs, overhead, own is not None)
    else:
        tokenizer_id = resolve_tokenizer(con, tokenizer or tokenizer_id)  # never chars/4 for a name it cannot load
        arrays = load_runs(con, tokenizer_id, runs, overhead=overhead, own_windows=own is not None)
    if not arrays:
        if runs:
            raise ReplayError(
                f"--runs {runs!r} matches no run with requests in {db} (a LIKE pattern on run_id "
                "or source path: % matches any text); `replay runs` lists them"
            )
        raise ReplayError(f"no runs with requests in {db}; run `replay ingest PATHS --db {db}` first")
    note = console if fmt == "table" else Console(stderr=True)
    note.print("harness prefix: " + prompt_sources(arrays), highlight=False, markup=False)
    sim = simulate_many(
        arrays,
        pol,
        None if cache == AUTO else make_cache(cache, **cache_params),
        Budget(window, reserve),
        tokenizer_id,
        pricing_from_options(prices, price),
        own,
    )
    if store:
        store_simulation(con, sim)
    shown = sim.runs.select(COLUMNS)
    if behaviour:
        # the behaviour columns replay each run on the budget's window (not yet on its own: replay.simulator.own_window)
        plain_runs = [plain(r) for r in arrays]
        shown = with_behaviour(con, shown, plain_runs, pol, Budget(window, reserve), sim.runs, cap, calibration, store)
    emit(shown, fmt, title=f"{pol.name} ({sim.sim_id})", wide=wide)
    if fmt == "table":
        console.print(f"sim_id {sim.sim_id}: {totals_line(sim)}", highlight=False, markup=False)
    warnings = window_warnings(pol, window, reserve)
    warnings += [for_terminal(line) for line in billing_lines(sim.runs)]
    est = [s for s in sim.token_sources if not s.startswith("real:")]
    if est:
        warnings.append(
            f"token counts are estimates ({', '.join(est)}); -t NAME|PATH counts them for real "
            "(`replay tokenizers` lists built-ins)"
        )
    warnings_block(warnings, note)  # to stderr under --format json/csv, so the output still parses
    if by_tool:
        emit(composition_totals(sim), fmt, title=f"window composition by tool ({sim.sim_id}; also in sim_composition)")


def with_behaviour(
    con: duckdb.DuckDBPyConnection,
    shown: pl.DataFrame,
    arrays: list[RunArrays],
    pol: AnyPolicy,
    budget: Budget,
    sim_runs: pl.DataFrame,
    cap: int | None,
    calibration: Path | None,
    store: bool,
) -> pl.DataFrame:
    """``shown`` with the behaviour columns of each run (replay.behaviour), from the views simulate charged; the rows
    stored in behaviour_runs when ``store``."""
    from replay.behaviour.pool import harness_of
    from replay.behaviour.rows import write_rows
    from replay.behaviour.table import BandSettings, behaviour_rows

    settings = None
    if cap is not None:
        from replay.behaviour.calibration_file import read_calibration

        costs = dict(zip(sim_runs["run_id"].to_list(), sim_runs["cost_usd"].to_list(), strict=True))
        cal = read_calibration(calibration) if calibration else None
        harness = harness_of(con, [r.run_id for r in arrays])
        settings = BandSettings(cap, costs, harness, cal, str(calibration) if cal else None)
    run_rows, ep_rows = behaviour_rows(arrays, pol, budget, settings)
    if store:
        write_rows(con, pol.name, dict(pol.config.__dict__), run_rows, ep_rows)
    cols = list(BEHAVIOUR_COLUMNS)
    if cap is not None:
        cols += BAND_SHOWN + (POINT_SHOWN if any(r.get("turns_point") is not None for r in run_rows) else [])
    extra = pl.DataFrame([{"run_id": r["run_id"], **{c: r.get(c) for c in cols}} for r in run_rows])
    return shown.join(extra, on="run_id", how="left", maintain_order="left")


@app.command()
def policies() -> None:
    """List policies (with their descriptive names) and their parameters (defaults)."""
    for name in sorted(registry()):
        cls = policy_class(name)
        params = ", ".join(f"{n}={knob_text(d)}" for n, d, _ in cls.Config.describe())
        tuned = f"\n  tune sweeps: {', '.join(k.name for k in cls.space)}" if cls.space else ""
        also = aliases_of(name)
        console.print(
            Text.assemble(
                (name, "bold"),
                (f" (also: {', '.join(also)})" if also else ""),
                f": {' '.join((cls.Config.__doc__ or '').split())}\n  {params}{tuned}",
            ),
            highlight=False,
        )
    console.print(
        Text.assemble("\n", ("Presets", "bold"), " (a harness's own policy; --policy NAME; --set overrides a knob):")
    )
    for preset in PRESETS.values():
        knobs = ", ".join(f"{k}={knob_text(v)}" for k, v in preset.params.items())
        console.print(
            Text.assemble((preset.name, "bold"), f" = {preset.policy}: {preset.doc}\n  {knobs}"), highlight=False
        )


def knob_text(v: object) -> str:
    """A knob's value as a policy file or --set writes it (no Python repr): text quoted, true/false, numbers."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, (tuple, list)):
        return "[" + ", ".join(knob_text(x) for x in v) + "]"
    return str(v)


MODEL_TOKENIZER = "model"


def tokenizers_by_model(con, pattern: str | None, usage_only: bool = True) -> dict[str, list[str]]:
    """Runs (``usage_only``: those with recorded usage) grouped by their model's built-in tokenizer ('' for chars/4
    where the model has none, said on stderr)."""
    from replay.simulator.load import run_ids
    from replay.tokens.builtins import for_model

    wanted = set(run_ids(con, pattern))
    groups: dict[str, list[str]] = {}
    without: set[str] = set()
    usage = " AND prompt_tokens > 0" if usage_only else ""
    for run_id, model in con.execute(
        "SELECT run_id, model FROM runs WHERE run_id IN (SELECT DISTINCT run_id FROM "
        f"requests WHERE TRUE{usage}) ORDER BY run_id"
    ).fetchall():
        if run_id in wanted:
            name = for_model(model) or ""
            groups.setdefault(name, []).append(run_id)
            if not name:
                without.add(str(model or "(no model recorded)"))
    if without:
        note(
            for_terminal(
                f"-t model: no built-in tokenizer for {', '.join(sorted(without))}: those runs are "
                "counted as chars/4 estimates (token_source says so); pass -t PATH for them"
            )
        )
    return groups


def runs_by_model(
    con: duckdb.DuckDBPyConnection, pattern: str | None, overhead: int | None, own_windows: bool
) -> tuple[str, list[RunArrays]]:
    """``-t model`` for simulate: the runs of ``pattern``, each counted with its model's built-in tokenizer, and the
    label the simulation is stored under (the tokenizers used, in order)."""
    from replay.simulator.load import load_runs
    from replay.tokens.resolve import resolve_tokenizer

    arrays: list[RunArrays] = []
    used = []
    for name, ids in tokenizers_by_model(con, pattern, usage_only=False).items():
        tokenizer_id = resolve_tokenizer(con, name) if name else None
        used.append(tokenizer_id or "chars/4")
        arrays += load_runs(con, tokenizer_id, ids=ids, overhead=overhead, own_windows=own_windows)
    return f"{MODEL_TOKENIZER}:{','.join(sorted(used))}", sorted(arrays, key=lambda r: r.run_id)


EXACT_NOTE = f"{EXACT}: the prompt fit has a term per request, so its score only shows that nothing had to be negative"


def with_verdict(df: pl.DataFrame) -> tuple[pl.DataFrame, list[str]]:
    """``df`` with a short ``verdict`` per row (within, missed, flagged [n]: unreconstructable, exact [n]: within
    by construction, or for an event not scored or a run of session totals, not scored [n]) and the distinct
    reasons the [n] point to, so the verdict fits 80 columns and the reason is printed under the table."""
    flagged = sorted({r for r in df["unreconstructable"].drop_nulls() if r})
    events = df.filter(pl.col("kind") != "run")  # a run row's reason is what its cache figures show (fidelity)
    unscored = sorted({r for r in events["reason"].drop_nulls() if r} - set(flagged))
    runs = df.filter(pl.col("kind") == "run")["reason"].drop_nulls().to_list()
    exact = [EXACT_NOTE] if any(EXACT in r for r in runs) else []
    reasons = [*(f"unreconstructable: {r}" for r in flagged), *(f"not scored: {r}" for r in unscored), *exact]
    number = {r: i for i, r in enumerate([*flagged, *unscored, *exact], 1)}
    verdicts = []
    for kind, within, reason, why in df.select("kind", "within", "unreconstructable", "reason").iter_rows():
        if kind == "run" and reason:
            verdicts.append(f"flagged [{number[reason]}]")
        elif kind != "run" and why:
            verdicts.append(f"not scored [{number[why]}]")
        elif within and why and EXACT in why:
            verdicts.append(f"exact [{number[EXACT_NOTE]}]")
        else:
            verdicts.append("within" if within else "missed")
    return df.with_columns(pl.Series("verdict", verdicts, pl.String)), reasons


@app.command()
def fidelity(
    db: DbOption = DEFAULT_DB_PATH,
    tokenizer: Annotated[
        str,
        typer.Option(
            "--tokenizer",
            "-t",
            help=(
                "Count with this tokenizer (file or built-in); 'model': each run with its model's built-in "
                "(o200k for GPT-4o/5, claude-legacy for Claude, ...; chars/4, labelled, where none exists); "
                "empty: chars/4 estimates."
            ),
        ),
    ] = "",
    cache: Annotated[
        str | None,
        typer.Option(
            help=(
                "One cache model for every run; default: each run under its provider's, calibrated from its "
                "recorded cache reads (replay.simulator.cache_fit)."
            )
        ),
    ] = None,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help=(
                "Exit 1 when a run misses the prompt targets (median 3%, p95 10%) or a preset's event misses "
                "its recorded one (3 requests, 10% prompt after)."
            ),
        ),
    ] = False,
    runs: Annotated[
        str | None,
        typer.Option(
            help=("LIKE pattern on run_id or source path (e.g. one harness, counted with its model's tokenizer).")
        ),
    ] = None,
    fmt: FormatOption = "table",
    wide: WideOption = False,
) -> None:
    """Check the simulator against recorded runs.

    Each run under its harness's own policy vs its recorded prompts, events and cache reads. Per run the
    per-request prompt error (median, p95; also scored out of sample) and cache-read share, per recorded
    context event the request and prompt after it (the proof that the simulator is right)."""
    from replay.simulator.fidelity import fidelity_frame
    from replay.tokens.resolve import resolve_tokenizer

    con = open_store(db)
    if tokenizer == MODEL_TOKENIZER:
        frames = [
            fidelity_frame(con, resolve_tokenizer(con, name) if name else None, cache, ids=ids)
            for name, ids in tokenizers_by_model(con, runs).items()
        ]
        df = pl.concat(frames) if frames else pl.DataFrame()
    else:
        df = fidelity_frame(con, resolve_tokenizer(con, tokenizer), cache, runs)
    if df.is_empty():
        raise ReplayError(
            "no run with recorded prompt usage in this store; ingest logs that record usage "
            "(Claude Code, Codex, mini-swe-agent, OpenHands with metrics, ...)"
        )
    run_rows = df.filter(pl.col("kind") == "run")
    missed = df.filter(pl.col("within") == False)  # noqa: E712 (polars expression)
    sources = run_rows["token_source"].unique().sort().to_list()
    title = (
        f"fidelity under the recorded policy ({int(run_rows['within'].sum())}/{run_rows.height} runs within 3% median, "
        f"10% p95; token source {sources[0] if len(sources) == 1 else 'per run, see token_source'})"
    )
    events = df.filter(~pl.col("kind").is_in(["run", "session"]))
    if events.height:
        scored = events.filter(pl.col("reason").is_null())
        title += (
            f"; events: {int(scored['within'].fill_null(False).sum())}/{scored.height} scored within 3 requests and "
            f"10% after, {events.height - scored.height} not scored (see reason)"
        )
    if fmt != "table":
        emit(df, fmt, title=title, wide=wide)
    else:
        shown, reasons = with_verdict(df)
        emit(
            shown.select(
                "file",
                "kind",
                "requests",
                "median_abs_pct",
                "p95_abs_pct",
                "verdict",
                "recorded_request",
                "simulated_request",
                "preset",
                "cache_share_recorded",
                "cache_share_simulated",
                "oos_median_abs_pct",
            ),
            fmt,
            title=title,
            wide=wide,
            keep=("verdict",),
        )
        for i, reason in enumerate(reasons, 1):
            console.print(Text(f"[{i}] {for_terminal(reason)}"), highlight=False)
    if strict and missed.height:
        Console(stderr=True).print(f"--strict: {missed.height} row(s) miss their target", highlight=False)
        raise typer.Exit(1)


@app.command()
def warm(
    names: Annotated[
        list[str] | None,
        typer.Argument(
            help="Policies to compile (built-in names, presets, or pkg.module:Class for the one loop every policy "
            "written in Python shares); default: every built-in policy."
        ),
    ] = None,
    per_request: Annotated[
        bool,
        typer.Option(
            "--per-request", help="Only the per-request loop (simulate, show, the reports), not the sweep loop."
        ),
    ] = False,
) -> None:
    """Compile the simulation loop of each policy into numba's on-disk cache now, so that the first simulate,
    sweep or report using it starts at once (a fresh install compiles a policy's loop on first use)."""
    from replay.policies import CompiledPolicy
    from replay.simulator.kernels.warm_child import warm_per_request
    from replay.sweeps.point_rows import warm_up

    chosen = names or [n for n, cls in registry().items() if issubclass(cls, CompiledPolicy)]
    for name in chosen:
        if isinstance(make_policy(name), CompiledPolicy) and not per_request:
            warm_up(name)  # the sweep loop (a policy written in Python sweeps run by run, in the loop below)
        warm_per_request([name])  # the per-request loop of simulate, show and the reports
        typer.echo(f"{name}: compiled and cached")
