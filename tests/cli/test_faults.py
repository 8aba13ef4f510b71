"""Faults: Ctrl-C ends with one line and a resumable store; store schema versions are checked on open."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from replay.errors import ReplayError
from replay.store import open_store
from replay.store.sandbox import open_sandboxed
from replay.store.schema import MIGRATIONS

ROOT = Path(__file__).resolve().parents[2]


def test_a_newer_store_is_refused_with_the_version_seen(tmp_path):
    path = tmp_path / "s.duckdb"
    open_store(path).close()
    with duckdb.connect(str(path)) as con:
        con.execute("INSERT INTO schema_version VALUES (99)")
    for opener in (open_store, lambda p: open_store(p, read_only=True), open_sandboxed):
        newer = f"schema version 99 is newer than this replay knows \\({len(MIGRATIONS)}"
        with pytest.raises(ReplayError, match=newer):
            opener(path)


def test_an_unversioned_store_is_refused(tmp_path):
    path = tmp_path / "s.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE runs (run_id VARCHAR)")
    with pytest.raises(ReplayError, match="no schema_version"):
        open_store(path)


def test_someone_elses_database_is_refused_unchanged(tmp_path):
    path = tmp_path / "theirs.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE invoices (id INTEGER)")
    for opener in (open_store, lambda p: open_store(p, read_only=True), open_sandboxed):
        with pytest.raises(ReplayError, match="not a replay store \\(tables invoices\\)"):
            opener(path)
    with duckdb.connect(str(path), read_only=True) as con:
        assert [r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()] == [
            "invoices"
        ]


def test_ctrl_c_during_ingest_is_one_line_and_resumable(corpus, tmp_path):
    db = tmp_path / "s.duckdb"
    cmd = [sys.executable, "-m", "replay", "ingest", str(corpus), "--db", str(db)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True, cwd=ROOT)
    deadline = time.monotonic() + 60
    while not db.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)  # the store exists once the command runs (its Ctrl-C handler is installed)
    while proc.poll() is None:  # what a terminal sends (the whole process group), pressed until it stops: the
        try:  # first may land while the worker pool starts, when it is held off
            os.killpg(proc.pid, signal.SIGINT)
        except ProcessLookupError:
            break
        time.sleep(0.25)
    out = proc.communicate(timeout=60)[0].decode()
    assert proc.returncode == 130, out
    assert "Traceback" not in out and "interrupted (Ctrl-C)" in out
    again = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr
    fresh = subprocess.run(
        [*cmd[:-1], str(tmp_path / "fresh.duckdb")], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    summary = again.stdout.split("files:")[1]
    with (
        duckdb.connect(str(db), read_only=True) as a,
        duckdb.connect(str(tmp_path / "fresh.duckdb"), read_only=True) as b,
    ):
        counts = "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM items), (SELECT count(*) FROM requests)"
        assert a.execute(counts).fetchall() == b.execute(counts).fetchall(), summary
    assert fresh.returncode == 0


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_stop_like_ctrl_c(sample_db_path, tmp_path, signum):
    """`kill PID` (or a closed terminal) during a sweep: one line, exit 128 + signal, finished work kept. The signal
    is sent once the sweep says it committed points (a fixed sleep was flaky under load)."""
    db = tmp_path / "s.duckdb"
    db.write_bytes(sample_db_path.read_bytes())
    grid = tmp_path / "long.toml"  # 2,500 points: seconds past the first commit, so the signal lands while points run
    values = ", ".join(str(v) for v in range(2000, 52000, 1000))
    grid.write_text(f'[sweep]\npolicy = "seed_a"\n[grid]\nprotect = [{values}]\nsummary_at = [{values}]\n')
    cmd = [sys.executable, "-m", "replay", "sweep", str(grid), "--db", str(db), "--max-points", "2500"]
    cmd += ["--out", str(tmp_path / "out")]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=ROOT)
    assert proc.stdout is not None
    seen = []
    for line in iter(proc.stdout.readline, b""):  # wait for the first progress line, however long start-up takes
        seen.append(line.decode())
        if line.startswith(b"committed "):
            break
    proc.send_signal(signum)
    out = "".join(seen) + proc.communicate(timeout=120)[0].decode()
    assert proc.returncode == 128 + signum, out
    assert "Traceback" not in out and out.count(f"interrupted ({signal.Signals(signum).name})") == 1
    with duckdb.connect(str(db), read_only=True) as con:
        kept = con.execute("SELECT count(DISTINCT point_id) FROM sweep_results").fetchone()[0]
    assert 0 < kept < 2500, out


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_the_command_starts_is_one_line(sample_db_path, signum):
    """Before its handlers are installed a command is importing (seconds under load): SIGTERM killed it silently
    (exit -15) and Ctrl-C printed an import traceback. Handlers set first make either one line."""
    script = (  # the signal arrives as the command modules are imported, as a Ctrl-C pressed then would
        "import importlib, os, sys\n"
        "load = importlib.import_module\n"
        "def hooked(name, *args):\n"
        "    if name == 'replay.cli.store_cmds':\n"
        f"        os.kill(os.getpid(), {int(signum)})\n"
        "    return load(name, *args)\n"
        "importlib.import_module = hooked\n"
        f"sys.argv = ['replay', 'runs', '--db', {str(sample_db_path)!r}]\n"
        "from replay.cli import main\n"
        "main()\n"
    )
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert res.returncode == (130 if signum == signal.SIGINT else 128 + signum), res.stderr
    assert "Traceback" not in res.stderr and res.stderr.count("interrupted (") == 1, res.stderr
    assert "while starting: nothing was done" in res.stderr


@pytest.mark.parametrize(
    "error",
    [
        duckdb.OutOfMemoryException("Out of Memory Error: failed to allocate 256 MiB\nPossible solutions: ..."),
        MemoryError(),
    ],
)
def test_out_of_memory_is_one_line(error, sample_db_path, tmp_path, monkeypatch, capsys):
    from replay.cli import app
    from replay.cli.common import DISK_FULL_EXIT, run_app
    from replay.tokens import resolve

    def fail(*args, **kwargs):
        raise error

    monkeypatch.setattr(resolve, "resolve", fail)
    db = tmp_path / "s.duckdb"  # a copy: the failing command's store stays open in this process until collected
    shutil.copy(sample_db_path, db)
    monkeypatch.setattr(sys, "argv", ["replay", "tokens", "-t", "o200k", "--db", str(db)])
    previous = signal.getsignal(signal.SIGINT)
    with pytest.raises(SystemExit) as stop:
        run_app(app)
    signal.signal(signal.SIGINT, previous)
    err = capsys.readouterr().err
    assert stop.value.code == DISK_FULL_EXIT
    assert "Traceback" not in err and err.count("\n") == 1 and "out of memory" in err and "rerun" in err


@pytest.mark.parametrize(
    "args",
    [
        ["simulate", "--window", str(2**64)],
        ["simulate", "--reserve", "-1"],
        ["show", "x", "--window", "0"],
        ["ingest", "--watch", "--interval", "nan"],
        ["ingest", "--watch", "--interval", "-1"],
        ["ingest", "--watch", "--interval", "inf"],
    ],
)
def test_numeric_options_out_of_range_are_one_usage_line(args, tmp_path):
    from typer.testing import CliRunner

    from replay.cli import app

    res = CliRunner().invoke(app, [*args, "--db", str(tmp_path / "s.duckdb")])
    assert res.exit_code == 2 and "Invalid value for" in res.output and "Traceback" not in res.output, res.output


@pytest.mark.parametrize("option", ["sweep", "--policy-file", "--prices", "tune --prices", "check --prices"])
@pytest.mark.parametrize("name", ["/dev/zero", "fifo", "big.toml", "folder", "missing.toml"])
def test_config_files_are_bounded_regular_files(option, name, sample_db_path, tmp_path):
    """/dev/zero as a sweep, policy or price file took 4 GB in 6 s; a FIFO hung. Each is now one line, before any
    work (tune counted every item's tokens first)."""
    from typer.testing import CliRunner

    from replay.cli import app

    if name == "fifo":
        os.mkfifo(tmp_path / "fifo")
    elif name == "big.toml":
        (tmp_path / name).write_text("# padding\n" * 600_000)
    elif name == "folder":
        (tmp_path / name).mkdir()
    path = name if name.startswith("/") else str(tmp_path / name)
    examples = ROOT / "examples" / "check"
    args = {
        "sweep": ["sweep", path],
        "--policy-file": ["simulate", "--policy-file", path],
        "--prices": ["simulate", "--prices", path],
        "tune --prices": ["tune", "--prices", path, "--window", "100000", "--reserve", "10000", "-t", "o200k"],
        "check --prices": ["check", str(examples / "baseline.toml"), str(examples / "candidate.toml")]
        + ["--prices", path],
    }[option]
    db = tmp_path / "s.duckdb"
    db.write_bytes(sample_db_path.read_bytes())
    with open_store(db, read_only=True) as con:
        counts = con.execute("SELECT count(*) FROM token_counts").fetchone()
    res = CliRunner().invoke(app, [*args, "--db", str(db)])
    assert res.exit_code != 0 and isinstance(res.exception, ReplayError), res.output
    assert path in str(res.exception)
    del res  # its traceback holds the command's frames (and any connection they opened)
    with open_store(db, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM token_counts").fetchone() == counts  # refused before counting


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_db_that_is_not_a_file_is_one_line(tmp_path, kind):
    """--db naming a FIFO hung (DuckDB waits to read it); a folder gave DuckDB's own error."""
    path = tmp_path / "store"
    os.mkfifo(path) if kind == "fifo" else path.mkdir()
    for opener in (open_store, lambda p: open_store(p, read_only=True), open_sandboxed):
        with pytest.raises(ReplayError, match="not a regular file"):
            opener(path)


@pytest.mark.parametrize(
    "args",
    [
        ["placeholders", "--csv", "{folder}"],
        ["placeholders", "--csv", "{file}/p.csv"],
        [
            "tune",
            "-t",
            "o200k",
            "-p",
            "seed_a",
            "--window",
            "30000",
            "--reserve",
            "4096",
            "--points",
            "2",
            "--out",
            "{file}",
        ],
        ["report", "--executor", "serial", "--out", "{file}"],
        ["report", "--executor", "serial", "--out", "{file}/sub"],
        ["sweep", str(ROOT / "examples" / "sweep.toml"), "--out", "{file}"],
    ],
)
def test_output_paths_are_checked_before_the_work(args, sample_db_path, tmp_path):
    """An output folder that is a file, or a CSV path that is a folder: one line before any work (placeholders
    --csv on a folder was a traceback; tune and report computed every point, report for minutes, then failed)."""
    from typer.testing import CliRunner

    from replay.cli import app

    (tmp_path / "folder").mkdir()
    (tmp_path / "afile").write_text("")
    db = tmp_path / "s.duckdb"
    db.write_bytes(sample_db_path.read_bytes())
    args = [a.format(folder=tmp_path / "folder", file=tmp_path / "afile") for a in args]
    res = CliRunner().invoke(app, [*args, "--db", str(db)])
    assert res.exit_code != 0 and isinstance(res.exception, ReplayError), res.output
    assert str(tmp_path) in str(res.exception) and (
        "is a file" in str(res.exception) or "is a folder" in str(res.exception)
    )
    del res
    with open_store(db, read_only=True) as con:  # refused before the work: no token counted, no point computed
        assert con.execute("SELECT count(*) FROM sweep_results").fetchone() == (0,)
        assert con.execute("SELECT count(*) FROM token_counts").fetchone() == (0,)


FINALISER_APP = """
import signal, sys, time
import typer
from replay.cli.common import run_app

app = typer.Typer()


class Finalised:
    def __del__(self):
        signal.raise_signal(signal.SIGTERM)  # the stop arrives while this finaliser runs
        sum(range(1000))


@app.command()
def work() -> None:
    Finalised()
    end = time.monotonic() + 5
    while time.monotonic() < end:
        sum(range(1000))
    print("finished")


sys.argv = ["replay"]
run_app(app)
"""


def test_a_stop_that_lands_in_a_finaliser_still_stops_with_one_line():
    """A signal whose Interrupted is raised inside a ``__del__`` is lost there (Python prints it as an ignored
    exception and carries on): it is sent again and stops the command in the code that runs next, with no
    traceback."""
    res = subprocess.run([sys.executable, "-c", FINALISER_APP], capture_output=True, text=True, cwd=ROOT, timeout=60)
    out = res.stdout + res.stderr
    assert res.returncode == 128 + signal.SIGTERM, out
    assert "Traceback" not in out and "Exception ignored" not in out and "finished" not in out, out
    assert out.count("interrupted (SIGTERM)") == 1, out
