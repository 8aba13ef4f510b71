"""`replay sql` is read-only for real: no file writes, no reads outside the store, no network, interruptible."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from replay.cli import app
from replay.errors import ReplayError
from replay.store.sandbox import open_sandboxed, run_query

ROOT = Path(__file__).resolve().parents[2]
SLOW = "SELECT sum(a.range * b.range) FROM range(200000) a, range(200000) b"


@pytest.fixture(scope="module")
def db(sample_store: Path) -> Path:
    return sample_store


def sql(db: Path, query: str, *extra: str):
    return CliRunner().invoke(app, ["sql", query, "--db", str(db), "--format", "json", *extra])


def refused(result) -> str:
    assert isinstance(result.exception, ReplayError), result.output
    return str(result.exception)


def n_runs(db: Path) -> int:
    result = sql(db, "SELECT count(*) AS n FROM runs")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)[0]["n"]


def test_select_on_the_store_works(db):
    assert n_runs(db) == len(list((ROOT / "data" / "sample").glob("*.jsonl"))) > 0


@pytest.mark.parametrize(
    "template",
    [
        "COPY runs TO '{out}'",
        "COPY (SELECT 1) TO '{out}' (FORMAT csv)",
        "EXPORT DATABASE '{dir}'",
        "ATTACH '{out}' AS other",
    ],
)
def test_cannot_write_a_file(db, tmp_path, template):
    out, exp = tmp_path / "leak.csv", tmp_path / "export"
    message = refused(sql(db, template.format(out=out, dir=exp)))
    assert "refused" in message
    assert not out.exists() and not exp.exists()


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM read_text('/etc/passwd')",
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_blob('/etc/passwd')",
        "SELECT * FROM glob('/etc/*')",
        "SELECT * FROM read_json('{other}')",
    ],
)
def test_cannot_read_outside_the_store(db, tmp_path, query):
    other = tmp_path / "secret.json"
    other.write_text('{"secret": 42}')
    result = sql(db, query.format(other=other))
    message = refused(result)
    assert "refused" in message and "42" not in result.output and "root:" not in result.output


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM read_csv('http://10.255.255.1/x.csv')",
        "SELECT * FROM read_parquet('https://example.invalid/x.parquet')",
        "INSTALL httpfs",
        "LOAD httpfs",
        "SET enable_external_access = true",
        "SET autoinstall_known_extensions = true",
    ],
)
def test_cannot_reach_the_network_or_unlock(db, query):
    start = time.monotonic()
    message = refused(sql(db, query))
    assert time.monotonic() - start < 5, "a refusal must not wait for a network"
    assert "refused" in message


def test_cannot_change_the_store(db):
    before = n_runs(db)
    assert "read-only" in refused(sql(db, "DELETE FROM runs"))
    assert n_runs(db) == before


def test_timeout_stops_a_long_query(db):
    start = time.monotonic()
    assert "--timeout" in refused(sql(db, SLOW, "--timeout", "0.5"))
    assert time.monotonic() - start < 5


@pytest.mark.parametrize("bad", ["0", "-1", "nan", "inf"])
def test_timeout_must_be_positive_and_finite(db, bad):
    assert "--timeout" in refused(sql(db, "SELECT 1", "--timeout", bad))


def test_ctrl_c_interrupts_a_running_query(db):
    con = open_sandboxed(db)
    threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
    start = time.monotonic()
    with pytest.raises(ReplayError, match="interrupted"):
        run_query(con, SLOW)
    assert time.monotonic() - start < 5
    assert run_query(con, "SELECT 1 AS one")["one"].to_list() == [1]


def test_csv_writes_nested_values_as_json_text(db):
    result = CliRunner().invoke(
        app,
        ["sql", "SELECT [1, 2] AS l, {'x': 'a'} AS s, NULL::INT[] AS e, 3 AS n", "--db", str(db), "--format", "csv"],
    )
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == ["l,s,e,n", '"[1, 2]","{""x"": ""a""}",,3']


def test_memory_is_bounded_by_default(db):
    """A query that needs more than the limit stops with one line, instead of taking the machine's memory."""
    bomb = "SELECT list(range) FROM range(400000000)"
    assert "memory limit" in refused(sql(db, bomb, "--memory-limit", "256MB"))
    assert "--memory-limit" in refused(sql(db, "SELECT 1", "--memory-limit", "lots"))
    con = open_sandboxed(db, "256MB")
    assert "SQL refused" in pytest.raises(ReplayError, run_query, con, "SET memory_limit = '64GB'").value.args[0]


def test_a_table_shows_a_bounded_number_of_rows(db):
    many = "SELECT range AS n FROM range(5000)"
    table = CliRunner().invoke(app, ["sql", many, "--db", str(db)])
    assert table.exit_code == 0 and "first 1,000 rows shown; 4,000 more rows were left out" in table.output
    from replay.store.sandbox import _unordered, count_rows

    con = open_sandboxed(db)
    ordered = "SELECT range AS n FROM range(5000) ORDER BY random()"
    assert _unordered(con, ordered) == 'SELECT "range" AS n FROM "range"(5000)'  # counted without sorting
    assert count_rows(con, ordered) == 5000 and count_rows(con, "SELECT 1 ORDER BY 1 LIMIT 0") == 0
    assert count_rows(con, "PRAGMA show_tables") is None  # not countable: the note says only "more"
    assert len(json.loads(sql(db, many).output)) == 5000  # json and csv: every row unless --limit
    assert len(json.loads(sql(db, many, "--limit", "10").stdout)) == 10


def test_the_timeout_covers_writing_the_result():
    """A result fetched within --timeout can take longer to render (30 M rows: over a minute): the rest of the
    timeout bounds the writing too, with one line saying the output was cut short."""
    from replay.cli.store_cmds import _stop_at

    written = []
    with pytest.raises(ReplayError, match="while writing its result"), _stop_at(time.monotonic() + 0.2, 3.0):
        for i in range(600):  # as a renderer would, row after row (60 s unless stopped)
            written.append(i)
            time.sleep(0.1)
    assert 0 < len(written) < 600
    assert signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None)  # put back


def test_a_bomb_query_stays_within_its_memory_limit(db):
    """Peak memory of a `replay sql` process on queries that would take gigabytes: the DuckDB limit plus what the
    process holds after answering a trivial query, never more (measured from the process, not timed)."""
    import subprocess
    import sys

    code = (
        "import resource, subprocess, sys\n"
        "p = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024, p.returncode)\n"
        "print(p.stderr[-300:])\n"
    )

    def peak(query: str) -> tuple[int, int, str]:
        cmd = [sys.executable, "-m", "replay", "sql", query, "--db", str(db), "--memory-limit", "256MB"]
        out = subprocess.run([sys.executable, "-c", code, *cmd], capture_output=True, text=True, cwd=ROOT, timeout=300)
        mb, rc = out.stdout.split()[:2]
        return int(mb), int(rc), out.stdout

    base, rc, _ = peak("SELECT 1")
    assert rc == 0
    for bomb in (
        "SELECT list(range) FROM range(400000000)",
        "SELECT string_agg(repeat('x', 1000), '') FROM range(4000000)",
        "SELECT * FROM range(100000000) ORDER BY random()",
    ):
        mb, rc, out = peak(bomb)
        assert rc in (0, 2) and "Traceback" not in out, out  # stopped at the limit, or answered within it
        assert mb < base + 256 + 64, (bomb, mb, base)
