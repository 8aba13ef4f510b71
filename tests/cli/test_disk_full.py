"""A full disk ends ingest, sweep and count with one line and exit 75; the rerun continues to identical results.

The fault is injected where DuckDB meets the disk: after some writes every COMMIT (or autocommitted INSERT) fails as
DuckDB fails on a full disk, the transaction already gone, so the caller's ROLLBACK fails too ("cannot rollback").
A last test fills a real 2 MB tmpfs when it can mount one (root)."""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from replay.cli import app
from replay.cli.common import DISK_FULL_EXIT, disk_full, run_app

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample"
SWEEP = """[sweep]
policy = "seed_a"
runs = "%short%"
batch = 2
[fixed]
window = 60000
reserve = 8000
[grid]
protect = [8000, 12000, 20000]
summary_at = [30000, 45000]
"""


class FillingDisk:
    """A store connection whose disk fills after ``room`` committed writes."""

    def __init__(self, con: duckdb.DuckDBPyConnection, room: int) -> None:
        self._con, self._room, self._in_tx = con, room, False

    def execute(self, sql: str, *args):
        word = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""
        if word == "BEGIN":
            self._in_tx = True
        elif word in ("COMMIT", "ROLLBACK"):
            self._in_tx = False
        if word == "COMMIT" or (word in ("INSERT", "UPDATE", "DELETE") and not self._in_tx):
            if self._room <= 0:
                if word == "COMMIT":
                    self._con.execute("ROLLBACK")  # DuckDB ends the transaction when its commit fails
                name = self._con.execute("SELECT path FROM duckdb_databases() WHERE NOT internal").fetchone()[0]
                raise duckdb.TransactionException(
                    f"TransactionContext Error: Failed to commit: Could not write "
                    f'file "{name}.wal": No space left on device'
                )
            self._room -= 1
        return self._con.execute(sql, *args)

    def __getattr__(self, name: str):
        return getattr(self._con, name)


class Disk:
    """The command line run in this process (run_app: the real error handling) on a disk that fills."""

    def __init__(self, monkeypatch, capsys) -> None:
        self.monkeypatch, self.capsys, self.room, self.opened = monkeypatch, capsys, 10**9, []
        from replay.cli import store_cmds, sweep_cmds, tokens_cmds

        for module in (store_cmds, sweep_cmds, tokens_cmds):
            monkeypatch.setattr(module, "open_store", self._open)

    def _open(self, path, *args, **kwargs):
        from replay.store import open_store

        con = open_store(path, *args, **kwargs)
        self.opened.append(con)
        return con if kwargs.get("read_only") else FillingDisk(con, self.room)

    def run(self, *args: str, room: int = 10**9) -> tuple[int, str]:
        """(exit code, stderr) of ``replay ARGS`` whose store's disk fills after ``room`` writes."""
        self.room = room
        self.monkeypatch.setattr(sys, "argv", ["replay", *args])
        try:
            with pytest.raises(SystemExit) as exc:
                run_app(app)
        finally:
            signal.signal(signal.SIGINT, signal.default_int_handler)  # run_app installed its own
            for con in self.opened:  # a process would have ended here
                con.close()
            self.opened.clear()
        return exc.value.code or 0, self.capsys.readouterr().err


@pytest.fixture()
def disk(monkeypatch, capsys) -> Disk:
    return Disk(monkeypatch, capsys)


def assert_one_line(err: str, path: Path, suffix: str = ".wal") -> None:
    lines = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert lines == [
        f"error: disk full while writing {path}{suffix}: free space (or raise the quota or file size limit) and rerun "
        "the same command; finished work is kept"
    ], err
    assert "Traceback" not in err and "rollback" not in err


def rows(db: Path, sql: str) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(sql).fetchall()


STORE_ROWS = (
    "SELECT (SELECT count(*) FROM runs), (SELECT count(*) FROM items), (SELECT count(*) FROM requests), "
    "(SELECT string_agg(run_id, ',' ORDER BY run_id) FROM runs)"
)


def test_disk_full_in_ingest_is_one_line_and_the_rerun_completes(disk, tmp_path, sample_db_path):
    db = tmp_path / "s.duckdb"
    code, err = disk.run("ingest", str(SAMPLE), "--db", str(db), room=3)
    assert code == DISK_FULL_EXIT
    assert_one_line(err, db)
    partial = rows(db, "SELECT count(*) FROM files")[0][0]
    assert 0 < partial < 7  # the files committed before the disk filled are kept
    assert disk.run("ingest", str(SAMPLE), "--db", str(db))[0] == 0
    assert rows(db, STORE_ROWS) == rows(sample_db_path, STORE_ROWS)


def test_disk_full_in_a_sweep_is_one_line_and_the_rerun_gives_the_same_results(disk, tmp_path, sample_db_path):
    grid = tmp_path / "g.toml"
    grid.write_text(SWEEP)
    db, fresh = tmp_path / "s.duckdb", tmp_path / "fresh.duckdb"
    shutil.copy(sample_db_path, db)
    shutil.copy(sample_db_path, fresh)
    args = ["sweep", str(grid), "--executor", "serial", "--out", str(tmp_path / "out")]
    # room for the sweep's registration and two batches of points, then the disk is full
    code, err = disk.run(*args, "--db", str(db), room=3)
    assert code == DISK_FULL_EXIT
    assert_one_line(err, db)
    kept = rows(db, "SELECT count(DISTINCT point_id) FROM sweep_results")[0][0]
    assert kept in (2, 4)  # whole batches only
    assert disk.run(*args, "--db", str(db))[0] == 0
    assert disk.run(*args, "--db", str(fresh))[0] == 0
    metrics = rows(db, "SELECT * EXCLUDE (session, computed_at) FROM sweep_results ORDER BY point_id, run_id")
    assert len(metrics) == 6 * rows(db, "SELECT count(*) FROM runs WHERE run_id LIKE '%short%'")[0][0]
    assert metrics == rows(
        fresh, "SELECT * EXCLUDE (session, computed_at) FROM sweep_results ORDER BY point_id, run_id"
    )


def test_a_full_out_folder_is_one_line_naming_the_parquet_file(disk, tmp_path, sample_db_path, monkeypatch):
    """polars reports a Parquet write on a full disk as a damaged file: the sweep says disk full, names the file,
    removes the partial one; its results are in the store, so the rerun only writes the file."""
    import polars as pl

    from replay.sweeps import results, runner

    grid = tmp_path / "g.toml"
    grid.write_text(SWEEP)
    db, out = tmp_path / "s.duckdb", tmp_path / "out"
    shutil.copy(sample_db_path, db)

    def full(con, sweep_id, path):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"PAR1")
        raise pl.exceptions.ComputeError("parquet: File out of specification: Invalid thrift: transport error")

    monkeypatch.setattr(results, "export_parquet", full)
    monkeypatch.setattr(runner.shutil, "disk_usage", lambda p: shutil._ntuple_diskusage(10**9, 10**9, 0))
    args = ["sweep", str(grid), "--executor", "serial", "--db", str(db), "--out", str(out)]
    code, err = disk.run(*args)
    assert code == DISK_FULL_EXIT
    (written,) = {ln.split("writing ")[1].split(":")[0] for ln in err.splitlines() if ln.startswith("error:")}
    assert_one_line(err, Path(written), "")
    assert written.endswith(".parquet") and not Path(written).exists()  # the partial file is gone
    monkeypatch.undo()
    disk = Disk(monkeypatch, disk.capsys)
    assert disk.run(*args)[0] == 0 and Path(written).exists()


def test_disk_full_while_counting_is_one_line_and_the_rerun_completes(disk, tmp_path, sample_db_path):
    db, fresh = tmp_path / "s.duckdb", tmp_path / "fresh.duckdb"
    shutil.copy(sample_db_path, db)
    shutil.copy(sample_db_path, fresh)
    code, err = disk.run("tokens", "-t", "o200k", "--db", str(db), room=0)
    assert code == DISK_FULL_EXIT
    assert_one_line(err, db)
    assert disk.run("tokens", "-t", "o200k", "--db", str(db))[0] == 0
    assert disk.run("tokens", "-t", "o200k", "--db", str(fresh))[0] == 0
    counts = "SELECT * FROM token_counts ORDER BY ALL"
    assert rows(db, counts) == rows(fresh, counts) and rows(db, counts)


def test_disk_full_is_found_anywhere_in_the_chain():
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device", "/data/out/sweep.parquet")
        except OSError:
            raise RuntimeError("cannot rollback - no transaction is active")  # noqa: B904 - the chain as DuckDB's
    except RuntimeError as exc:
        assert disk_full(exc) == "/data/out/sweep.parquet"
    assert (
        disk_full(duckdb.IOException('IO Error: Could not write file "/s/x.duckdb": No space left on device'))
        == "/s/x.duckdb"
    )
    assert disk_full(OSError(errno.ENOSPC, "No space left on device")) == ""  # path unknown: said so generically
    assert disk_full(duckdb.IOException("IO Error: Could not read file")) is None
    assert disk_full(ValueError("x")) is None


@pytest.fixture()
def tiny_tmpfs(tmp_path):
    """A real 2 MB filesystem (root and mount needed, else skipped)."""
    where = tmp_path / "tiny"
    where.mkdir()
    if (
        os.geteuid() != 0
        or subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(where)], capture_output=True
        ).returncode
    ):
        pytest.skip("needs root to mount a small tmpfs")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_real_full_filesystem_during_ingest(tiny_tmpfs, sample_db_path):
    db = tiny_tmpfs / "s.duckdb"
    cmd = [sys.executable, "-m", "replay", "ingest", str(SAMPLE), "--db", str(db)]
    full = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert full.returncode == DISK_FULL_EXIT, full.stderr
    assert_one_line(full.stderr, db)
    subprocess.run(["mount", "-o", "remount,size=32m", str(tiny_tmpfs)], check=True)
    again = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert again.returncode == 0, again.stderr
    assert rows(db, STORE_ROWS) == rows(sample_db_path, STORE_ROWS)
