"""Numbered migrations, applied in order when a store is opened."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import duckdb

from replay.errors import ReplayError


def _v1_canonical(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("""
    CREATE TABLE files (
        file_hash VARCHAR PRIMARY KEY, path VARCHAR, format VARCHAR, bytes BIGINT,
        n_runs INTEGER, n_items INTEGER, n_requests INTEGER, n_bad INTEGER, ingested_at TIMESTAMP);
    CREATE TABLE runs (
        run_id VARCHAR PRIMARY KEY, file_hash VARCHAR, format VARCHAR, source_path VARCHAR,
        model VARCHAR, harness VARCHAR, started_at VARCHAR, parent_run_id VARCHAR,
        n_requests INTEGER, metadata JSON);
    CREATE TABLE items (
        run_id VARCHAR, seq INTEGER, step INTEGER, turn INTEGER, role VARCHAR, kind VARCHAR,
        tool_name VARCHAR, call_id VARCHAR, args VARCHAR, text VARCHAR, is_error BOOLEAN,
        resource VARCHAR, access VARCHAR, content_hash VARCHAR, chars INTEGER, ts VARCHAR,
        line INTEGER, PRIMARY KEY (run_id, seq));
    CREATE TABLE requests (
        run_id VARCHAR, step INTEGER, ts VARCHAR, input_tokens BIGINT, cache_read BIGINT,
        cache_write BIGINT, output_tokens BIGINT, prompt_tokens BIGINT, model VARCHAR, line INTEGER,
        PRIMARY KEY (run_id, step));
    CREATE TABLE quarantine (
        file_hash VARCHAR, path VARCHAR, line INTEGER, reason VARCHAR, raw VARCHAR, quarantined_at TIMESTAMP);
    CREATE TABLE token_counts (
        tokenizer_id VARCHAR, content_hash VARCHAR, n_tokens INTEGER,
        PRIMARY KEY (tokenizer_id, content_hash));
    """)


def _v2_simulations(con: duckdb.DuckDBPyConnection) -> None:
    """Simulation results: one row per simulation, per (simulation, run) and per (simulation, run, request)."""
    con.execute("""
    CREATE TABLE simulations (
        sim_id VARCHAR PRIMARY KEY, policy VARCHAR, config JSON, cache_model VARCHAR, tokenizer_id VARCHAR,
        token_source VARCHAR, "window" BIGINT, reserve BIGINT, n_runs INTEGER, created_at TIMESTAMP);
    CREATE TABLE sim_runs (
        sim_id VARCHAR, run_id VARCHAR, requests INTEGER, overflow_incidents INTEGER, near_misses INTEGER,
        emergencies INTEGER, summaries INTEGER, summaries_per_100 DOUBLE, requests_between_summaries DOUBLE,
        tokens_after_summary DOUBLE, prompt_tokens BIGINT, est_tokens BIGINT, cached_tokens BIGINT,
        written_tokens BIGINT, uncached_tokens BIGINT, cache_hit_rate DOUBLE, trimmed_tokens BIGINT,
        max_prompt_tokens BIGINT, recorded_prompt BIGINT, recorded_cache_read BIGINT, recorded_cache_share DOUBLE,
        max_reads_one_resource INTEGER, repeat_changed INTEGER, repeat_changed_tokens BIGINT,
        repeat_visible INTEGER, repeat_visible_tokens BIGINT, repeat_evicted INTEGER, repeat_evicted_tokens BIGINT,
        evicted_failures INTEGER, evicted_failure_tokens BIGINT, cost_usd DOUBLE, price_per_mtok DOUBLE,
        cache_model VARCHAR, token_source VARCHAR, "window" BIGINT, reserve BIGINT, PRIMARY KEY (sim_id, run_id));
    CREATE TABLE sim_requests (
        sim_id VARCHAR, run_id VARCHAR, k INTEGER, step INTEGER, items INTEGER, prompt_tokens BIGINT,
        est_tokens BIGINT, overflow BOOLEAN, near_miss BOOLEAN, emergency BOOLEAN, summarised BOOLEAN,
        trimmed_tokens BIGINT, cached_tokens BIGINT, written_tokens BIGINT, summary_tokens BIGINT,
        recorded_prompt BIGINT, recorded_cache_read BIGINT, tok_system BIGINT, tok_tool_defs BIGINT,
        tok_user_text BIGINT, tok_assistant_text BIGINT, tok_reasoning BIGINT, tok_tool_call BIGINT,
        tok_tool_result BIGINT, tok_summary BIGINT, tok_attachment BIGINT, tok_image BIGINT,
        PRIMARY KEY (sim_id, run_id, k));
    """)


def _v3_calibrations(con: duckdb.DuckDBPyConnection) -> None:
    con.execute("""
    CREATE TABLE calibrations (
        tokenizer_id VARCHAR, run_id VARCHAR, source_path VARCHAR, n_requests INTEGER, overhead DOUBLE,
        scale DOUBLE, per_message_tokens INTEGER, median_err DOUBLE, p95_err DOUBLE, raw_median_err DOUBLE,
        calibrated_at TIMESTAMP, PRIMARY KEY (tokenizer_id, run_id));
    """)


def _v4_placeholders_composition(con: duckdb.DuckDBPyConnection) -> None:
    """``placeholders``: what a request showed in place of an output, per (run, request, item), unnested from
    ``runs.metadata.placeholders`` (written with the run, so ingest stays one transaction per file);
    ``sim_composition``: prompt tokens by tool and part (call arguments, results), summed over a run's requests."""
    con.execute("""
    CREATE VIEW placeholders AS
    SELECT p.run_id, p.e[1] AS step, p.e[2] AS seq, i.call_id, i.tool_name, p.w[p.e[3] + 1] AS wording,
           ['prompt', 'clip'][p.e[5] + 1] AS origin, p.e[4] AS chars_shown, i.chars AS chars_full
    FROM (SELECT run_id, unnest(CAST(json_extract(metadata, '$.placeholders.events') AS INTEGER[][])) AS e,
                 CAST(json_extract(metadata, '$.placeholders.wordings') AS VARCHAR[]) AS w
          FROM runs WHERE json_extract(metadata, '$.placeholders') IS NOT NULL) p
    LEFT JOIN items i ON i.run_id = p.run_id AND i.seq = p.e[2];
    CREATE TABLE sim_composition (
        sim_id VARCHAR, run_id VARCHAR, tool VARCHAR, part VARCHAR, tokens BIGINT, share DOUBLE,
        PRIMARY KEY (sim_id, run_id, tool, part));
    """)


def _v5_billing(con: duckdb.DuckDBPyConnection) -> None:
    """``sim_runs``: cost by part (prompt, summaries, outputs), the rates charged, where prices came from and the
    cache model each run had (replay.simulator.billing)."""
    for col, typ in (
        ("prompt_cost_usd", "DOUBLE"),
        ("summary_cost_usd", "DOUBLE"),
        ("output_cost_usd", "DOUBLE"),
        ("output_tokens", "BIGINT"),
        ("output_source", "VARCHAR"),
        ("output_per_mtok", "DOUBLE"),
        ("cache_read_per_mtok", "DOUBLE"),
        ("cache_write_per_mtok", "DOUBLE"),
        ("price_source", "VARCHAR"),
        ("model", "VARCHAR"),
        ("cache_ttl", "DOUBLE"),
        ("billing_note", "VARCHAR"),
    ):
        con.execute(f'ALTER TABLE sim_runs ADD COLUMN "{col}" {typ}')


def _v6_cache_write_1h(con: duckdb.DuckDBPyConnection) -> None:
    """``requests.cache_write_1h``: the part of ``cache_write`` written for 1 hour (Claude Code's
    ``cache_creation.ephemeral_1h_input_tokens``; billed at 2x input where 5 min writes are 1.25x); NULL where the
    log does not split writes by duration. A store ingested before this version has NULL everywhere: ingest the
    logs again into a new store to read the split. ``sim_runs`` gains the recorded bill of the run and the
    simulated cost's 1 h writes."""
    con.execute("ALTER TABLE requests ADD COLUMN cache_write_1h BIGINT")
    for col, typ in (
        ("recorded_cost_usd", "DOUBLE"),
        ("written_1h_tokens", "BIGINT"),
        ("unpriced_requests", "INTEGER"),
    ):
        con.execute(f'ALTER TABLE sim_runs ADD COLUMN "{col}" {typ}')


def _v7_sweeps_calibration_files(con: duckdb.DuckDBPyConnection) -> None:
    """``sweeps`` and ``sweep_results`` (one row per point and run; the metric columns are added by the first sweep
    that writes them, replay.sweeps.results) and ``calibration_files`` (calibrate's per-file errors), which earlier
    versions created on first use: IF NOT EXISTS keeps a store that has them as it is."""
    con.execute("""
    CREATE TABLE IF NOT EXISTS sweeps (
        sweep_id VARCHAR PRIMARY KEY, name VARCHAR, policy VARCHAR, spec JSON, n_points INTEGER,
        n_runs INTEGER, created_at TIMESTAMP, finished_at TIMESTAMP);
    CREATE TABLE IF NOT EXISTS sweep_results (
        sweep_id VARCHAR, point_id VARCHAR, run_id VARCHAR, session VARCHAR, computed_at TIMESTAMP,
        config JSON, error VARCHAR, PRIMARY KEY (sweep_id, point_id, run_id));
    CREATE TABLE IF NOT EXISTS calibration_files (
        tokenizer_id VARCHAR, file VARCHAR, runs INTEGER, requests INTEGER, median_err DOUBLE, p95_err DOUBLE,
        within_target BOOLEAN, unreconstructable VARCHAR, calibrated_at TIMESTAMP, PRIMARY KEY (tokenizer_id, file));
    """)


def _v8_behaviour(con: duckdb.DuckDBPyConnection) -> None:
    """``replay behaviour`` rows: per (policy setting, run) the repeat counts, per loop episode its figures."""
    con.execute("""
    CREATE TABLE behaviour_runs (
        policy VARCHAR, config JSON, run_id VARCHAR, repeats INTEGER, stale_repeats INTEGER, blind_repeats INTEGER,
        loop_episodes INTEGER, measured_at TIMESTAMP, PRIMARY KEY (policy, config, run_id));
    CREATE TABLE behaviour_episodes (
        policy VARCHAR, config JSON, run_id VARCHAR, episode INTEGER, first_call INTEGER, calls INTEGER,
        repeats INTEGER, distinct_calls INTEGER, period INTEGER, hidden_share DOUBLE, visible_at INTEGER,
        sentence VARCHAR, PRIMARY KEY (policy, config, run_id, episode));
    """)


def _v9_bill_gap(con: duckdb.DuckDBPyConnection) -> None:
    """``sim_runs.bill_gap``: why a replay of the log's own policy cannot reproduce the run's recorded bill, as
    ``simulate`` prints it ("" when nothing in the log stands in the way; NULL on rows stored before this version).
    """
    con.execute('ALTER TABLE sim_runs ADD COLUMN "bill_gap" VARCHAR')


def _v10_behaviour_band(con: duckdb.DuckDBPyConnection) -> None:
    """``behaviour_runs`` gains the run's requests, its pressured requests, the closed-loop re-reads before blind
    edits (requests, prompt tokens) and the turn band under ``cap`` (NULL: no cap given): loop chance, turns and cost
    at both ends, and the point only where a calibration of the run's harness gave one (``calibration``: its file)."""
    for col, typ in (
        ("requests", "INTEGER"),
        ("pressured_requests", "INTEGER"),
        ("mech_requests", "INTEGER"),
        ("mech_prompt_tokens", "BIGINT"),
        ("cap", "INTEGER"),
        ("loop_p_lo", "DOUBLE"),
        ("loop_p_hi", "DOUBLE"),
        ("turns_lo", "DOUBLE"),
        ("turns_hi", "DOUBLE"),
        ("cost_lo", "DOUBLE"),
        ("cost_hi", "DOUBLE"),
        ("loop_p_point", "DOUBLE"),
        ("turns_point", "DOUBLE"),
        ("cost_point", "DOUBLE"),
        ("calibration", "VARCHAR"),
    ):
        con.execute(f'ALTER TABLE behaviour_runs ADD COLUMN "{col}" {typ}')


def _v11_reader_version(con: duckdb.DuckDBPyConnection) -> None:
    """``files.reader_version``: the reader (format/version, replay.readers.reader_key) that read the file. A file is
    skipped on a later ingest only when its content and its reader are both unchanged, so a reader fix reaches
    stores ingested before it. NULL on rows written before this version: version 1 of their format."""
    con.execute("ALTER TABLE files ADD COLUMN reader_version VARCHAR")


def _v12_sweep_results_unindexed(con: duckdb.DuckDBPyConnection) -> None:
    """``sweep_results`` without its primary key: DuckDB keeps that index in memory whole (about 90 MB a million
    rows, not evictable under a memory limit), so a sweep's writer grew with every row it stored. Each (point,
    run) row is written once by the sweep driver, which skips or deletes and redoes points already stored
    (``replay.sweeps.runner.DonePoints``)."""
    con.execute("""
    CREATE TABLE sweep_results_v12 AS SELECT * FROM sweep_results;
    DROP TABLE sweep_results;
    ALTER TABLE sweep_results_v12 RENAME TO sweep_results;
    """)


def _v13_behaviour_exposure(con: duckdb.DuckDBPyConnection) -> None:
    """``behaviour_runs`` gains ``blind_uses`` (requests whose own call names a resource whose latest read or search
    the view hides) and ``loop_exposure`` (blind uses times the run's share of uses that are blind once the policy
    acts): what the turn band now counts (replay.behaviour.pressure). NULL on rows stored before this version."""
    con.execute('ALTER TABLE behaviour_runs ADD COLUMN "blind_uses" INTEGER')
    con.execute('ALTER TABLE behaviour_runs ADD COLUMN "loop_exposure" DOUBLE')


def _v14_like_for_like_bill(con: duckdb.DuckDBPyConnection) -> None:
    """``sim_runs`` gains the comparison with the recorded bill, like for like: ``billed_cost_usd`` (what the
    replay charges for what the bill covers: the requests with recorded usage, priced as the bill prices them, and
    the summarisation calls when the log records every summariser call's usage), ``unbilled_summary_cost_usd``
    (the summarisation calls it does not), ``recorded_summary_cost_usd`` (the summariser calls the log records,
    part of ``recorded_cost_usd``). NULL on rows stored before this version."""
    for col in ("billed_cost_usd", "unbilled_summary_cost_usd", "recorded_summary_cost_usd"):
        con.execute(f'ALTER TABLE sim_runs ADD COLUMN "{col}" DOUBLE')


def _v15_behaviour_summaries(con: duckdb.DuckDBPyConnection) -> None:
    """``behaviour_runs`` gains ``summaries``, the policy's summariser calls in the run, which the turn band counts as
    turns (model calls; OpenHands counts a condensation as a step). From this version ``loop_exposure`` takes the
    run's recurrence over all its revisits, not from the first request whose view hides a look: a wider window
    never raises it. NULL on rows stored before this version, whose exposure used the former recurrence."""
    con.execute('ALTER TABLE behaviour_runs ADD COLUMN "summaries" INTEGER')


MIGRATIONS: list[Callable[[duckdb.DuckDBPyConnection], None]] = [
    _v1_canonical,
    _v2_simulations,
    _v3_calibrations,
    _v4_placeholders_composition,
    _v5_billing,
    _v6_cache_write_1h,
    _v7_sweeps_calibration_files,
    _v8_behaviour,
    _v9_bill_gap,
    _v10_behaviour_band,
    _v11_reader_version,
    _v12_sweep_results_unindexed,
    _v13_behaviour_exposure,
    _v14_like_for_like_bill,
    _v15_behaviour_summaries,
]


def migrate(con: duckdb.DuckDBPyConnection) -> int:
    """Apply pending migrations, all in one transaction (one commit for a new store, not one a migration); return the
    schema version."""
    con.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER)")
    row = con.execute("SELECT max(version) FROM schema_version").fetchall()[0]
    current = row[0] or 0
    if current >= len(MIGRATIONS):
        return len(MIGRATIONS)
    con.execute("BEGIN")
    try:
        for version, step in enumerate(MIGRATIONS, start=1):
            if version > current:
                step(con)
                con.execute("INSERT INTO schema_version VALUES (?)", [version])
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return len(MIGRATIONS)


def check_version(con: duckdb.DuckDBPyConnection, where: str) -> int:
    """The store's schema version (0: a new, empty file); a newer version than this code knows, or a file that holds
    replay tables without a version, is refused rather than read wrongly or migrated into a mix."""
    tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    if "schema_version" not in tables:
        if tables & {"files", "runs", "items", "requests"}:
            raise ReplayError(
                f"{where}: holds replay tables but no schema_version, so its layout is unknown; "
                "ingest the logs again into a new --db"
            )
        if tables:  # someone else's database: adding replay's tables to it would change their file
            shown = ", ".join(sorted(tables)[:5]) + (", ..." if len(tables) > 5 else "")
            raise ReplayError(
                f"{where}: a DuckDB database that is not a replay store (tables {shown}); give "
                "--db a new file or an existing replay store"
            )
        return 0
    version = con.execute("SELECT max(version) FROM schema_version").fetchall()[0][0] or 0
    if version > len(MIGRATIONS):
        raise ReplayError(
            f"{where}: store schema version {version} is newer than this replay knows "
            f"({len(MIGRATIONS)}); use the replay that wrote it (or a newer one), or another --db"
        )
    return version


@cache
def layout() -> dict[str, tuple[str, ...]]:
    """Each table and view of a current store with its columns in order, as the migrations make them."""
    with duckdb.connect(":memory:") as con:
        migrate(con)
        return _columns_of(con)


def _columns_of(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[str, ...]]:
    rows = con.execute(
        "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'main' "
        "AND table_catalog = current_database() ORDER BY table_name, ordinal_position"
    ).fetchall()
    found: dict[str, list[str]] = {}
    for table, column in rows:
        found.setdefault(table, []).append(column)
    return {t: tuple(c) for t, c in found.items()}


# tables whose columns grow after the migrations: a sweep adds its metric columns to sweep_results when it writes them
GROWING = frozenset({"sweep_results"})


def check_layout(con: duckdb.DuckDBPyConnection, where: str) -> None:
    """Refuse a current-version store whose tables were changed by hand (a table dropped, a column removed or added):
    every query would fail on it, or an insert put values in the wrong columns. A GROWING table may carry more
    columns after the migrations' own."""
    have = _columns_of(con)
    problems = []
    for table, columns in layout().items():
        if table not in have:
            problems.append(f"table {table} is missing")
        elif have[table] != columns and not (table in GROWING and have[table][: len(columns)] == columns):
            lost = [c for c in columns if c not in have[table]]
            extra = [c for c in have[table] if c not in columns]
            problems.append(
                f"table {table} has been changed"
                + (f" (missing column {', '.join(lost)})" if lost else "")
                + (f" (unknown column {', '.join(extra)})" if extra else "")
            )
    if problems:
        raise ReplayError(
            f"{where}: not a store this replay can use: {'; '.join(problems)}. Rebuild it: move the file aside, run "
            f"`replay ingest LOGS --db {where}` again, then rerun what you had counted or simulated"
        )
