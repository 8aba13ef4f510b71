"""File-system and store faults at ingest (issue 26): each is one line naming the path and what to do, the rest of the
work is done, and nothing is a traceback."""

from __future__ import annotations

import errno
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from replay.errors import ReplayError
from replay.ingest import ingest
from replay.ingest.discover import HARNESSES, logs_in
from replay.readers.base import FLOOR_LIMIT, decompressed_limit
from replay.store import open_store

ROOT = Path(__file__).resolve().parents[2]
RUN = {"type": "run", "format": "replay-canonical/1", "run": "r", "model": "m"}


def canonical(text: str = "hello") -> bytes:
    rows = [RUN, {"type": "item", "kind": "user_text", "role": "user", "text": text}]
    rows.append({"type": "request", "input_tokens": 7})
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "replay", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        errors="replace",
        env={**os.environ, "COLUMNS": "2000", **(env or {})},
        timeout=300,
    )


def test_damaged_and_mislabelled_compressed_files_are_one_line_each(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "bad.jsonl.zst").write_bytes(b"not zstd at all\n" * 10)
    (logs / "plain.jsonl.gz").write_bytes(canonical())
    (logs / "cut.jsonl.gz").write_bytes(gzip.compress(canonical())[:30])
    (logs / "good.jsonl").write_bytes(canonical())
    res = cli("ingest", str(logs), "--db", str(tmp_path / "s.duckdb"))
    assert res.returncode == 3 and "Traceback" not in res.stdout + res.stderr
    for name, tool in (("bad.jsonl.zst", "zstd -t"), ("plain.jsonl.gz", "gzip -t"), ("cut.jsonl.gz", "gzip -t")):
        [line] = [ln for ln in res.stdout.splitlines() if name in ln]
        assert f"{logs / name}:0:" in line and tool in line
    assert "1 ingested" in res.stdout


def test_a_compression_bomb_stops_at_the_limit(tmp_path, monkeypatch):
    bomb = tmp_path / "bomb.jsonl.gz"
    bomb.write_bytes(gzip.compress(canonical() + b" " * (8 << 20)))
    assert decompressed_limit(bomb) == FLOOR_LIMIT  # a small file: the floor, not 1,000 times its size
    monkeypatch.setenv("REPLAY_MAX_DECOMPRESSED_MB", "2")
    con = open_store(tmp_path / "s.duckdb")
    [out] = ingest(con, [bomb], workers=1)
    assert out.status == "failed" and "expands past 2 MB" in out.bad[0].reason
    assert "REPLAY_MAX_DECOMPRESSED_MB" in out.bad[0].reason
    monkeypatch.setenv("REPLAY_MAX_DECOMPRESSED_MB", "nan")
    with pytest.raises(ReplayError, match="positive number of MB"):
        decompressed_limit(bomb)


def test_compressed_logs_are_streamed_never_copied_to_the_temporary_folder(tmp_path, monkeypatch):
    """A 2 KB .bz2 once expanded to 3 GiB in TMPDIR, and a full TMPDIR stopped the ingest at that file on every
    rerun: compressed logs are now read as streams, so an unusable temporary folder changes nothing."""
    import bz2
    import tempfile

    (tmp_path / "afile").write_text("x")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "afile" / "tmp"))  # nothing can be made there
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.jsonl.gz").write_bytes(gzip.compress(canonical("a")))
    (logs / "b.jsonl.bz2").write_bytes(bz2.compress(canonical("b")))
    (logs / "c.jsonl").write_bytes(canonical("c"))
    con = open_store(tmp_path / "s.duckdb")
    outs = ingest(con, [logs], workers=1)
    assert [o.status for o in outs] == ["ingested"] * 3, [o.bad for o in outs]
    rows = con.execute("SELECT source_path FROM runs ORDER BY source_path").fetchall()
    assert [Path(r[0]).name for r in rows] == ["a.jsonl.gz", "b.jsonl.bz2", "c.jsonl"]
    texts = con.execute("SELECT text FROM items WHERE kind = 'user_text' ORDER BY text").fetchall()
    assert texts == [("a",), ("b",), ("c",)]


def test_a_bomb_past_its_head_is_one_line_and_the_rest_is_read(tmp_path, monkeypatch):
    """The bound holds while a reader streams (not only while the file is hashed)."""
    from replay.readers.base import ReadContext, iter_json_lines

    bomb = tmp_path / "bomb.jsonl.gz"
    bomb.write_bytes(gzip.compress(canonical() + b"\n" * (4 << 20)))
    ctx = ReadContext(path=bomb, file_hash="0" * 32)
    monkeypatch.setenv("REPLAY_MAX_DECOMPRESSED_MB", "1")
    with pytest.raises(ReplayError, match="expands past 1 MB"):
        list(iter_json_lines(ctx))
    monkeypatch.delenv("REPLAY_MAX_DECOMPRESSED_MB")
    assert sum(1 for e in iter_json_lines(ctx) if isinstance(e, tuple)) == canonical().count(b"\n")


def test_a_name_that_is_not_utf8_is_ingested_and_shown(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    with open(os.path.join(os.fsencode(logs), b"\xff\xfe.jsonl"), "wb") as fh:
        fh.write(canonical())
    db = tmp_path / "s.duckdb"
    res = cli("ingest", str(logs), "--db", str(db))
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("SELECT path FROM files").fetchone()[0] == f"{logs}/\\xff\\xfe.jsonl"
        assert con.execute("SELECT run_id FROM runs").fetchone()[0].startswith("\\xff\\xfe-")
    res = cli("runs", "--db", str(db))
    assert res.returncode == 0 and "\\xff\\xfe" in res.stdout and "Traceback" not in res.stderr


def test_a_lone_surrogate_in_text_costs_nothing_and_is_reported(tmp_path):
    f = tmp_path / "s.jsonl"
    f.write_bytes(canonical("bad \ud800 here"))
    con = open_store(tmp_path / "s.duckdb")
    [out] = ingest(con, [f])
    assert out.status == "ingested" and out.items == 1
    [warning] = out.warnings
    assert warning.line == 2 and "surrogate" in warning.reason
    assert con.execute("SELECT text FROM items").fetchone()[0] == "bad \ufffd here"


def test_an_unreadable_folder_is_reported_and_the_rest_ingested(tmp_path, monkeypatch):
    (tmp_path / "ok").mkdir()
    (tmp_path / "ok" / "a.jsonl").write_bytes(canonical())
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "b.jsonl").write_bytes(canonical())
    iterdir, listdir = Path.iterdir, os.listdir

    def refuse(path):
        if Path(path) == locked:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(Path, "iterdir", lambda self: refuse(self) or iterdir(self))
    monkeypatch.setattr(os, "listdir", lambda path=".": refuse(path) or listdir(path))
    con = open_store(tmp_path / "s.duckdb")
    outs = {o.path.name: o for o in ingest(con, [tmp_path], workers=1)}
    assert outs["a.jsonl"].status == "ingested"
    assert (
        outs["locked"].status == "failed"
        and "cannot read this folder (Permission denied)" in outs["locked"].bad[0].reason
    )
    found: list[Path] = []
    claude = next(h for h in HARNESSES if h.name == "claude-code")
    assert logs_in(claude, tmp_path, found) == [tmp_path / "ok" / "a.jsonl"] and found == [locked]


def test_fifos_sockets_and_devices_are_skipped_each_with_a_line(tmp_path):
    """Reading a FIFO waits for a writer forever; a device never ends. Found in a folder, named directly or found by
    discovery, each is named once and never opened; the logs beside them are read."""
    import socket

    from replay.ingest import expand_paths

    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.jsonl").write_bytes(canonical())
    os.mkfifo(logs / "pipe.jsonl")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(logs / "sock.jsonl"))
    skipped: list = []
    assert expand_paths([logs, "/dev/null"], skipped) == [logs / "a.jsonl"]
    assert skipped == [
        (Path("/dev/null"), "a character device"),
        (logs / "pipe.jsonl", "a FIFO (named pipe)"),
        (logs / "sock.jsonl", "a socket"),
    ]
    special: list = []
    claude = next(h for h in HARNESSES if h.name == "claude-code")
    assert logs_in(claude, logs, [], special) == [logs / "a.jsonl"] and [k for _, k in special] == [
        "a FIFO (named pipe)",
        "a socket",
    ]
    res = cli("ingest", str(logs), str(logs / "pipe.jsonl"), "--db", str(tmp_path / "s.duckdb"))
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    said = [ln for ln in res.stdout.splitlines() if "not a regular file: skipped" in ln]
    assert said == [
        f"{logs / 'pipe.jsonl'}: a FIFO (named pipe), not a regular file: skipped (copy the log to a file to ingest "
        "it)",
        f"{logs / 'sock.jsonl'}: a socket, not a regular file: skipped (copy the log to a file to ingest it)",
    ]
    assert "1 ingested" in res.stdout
    sock.close()


def test_discovery_walks_a_folder_1200_deep_and_two_self_links(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "loop1").symlink_to(tmp_path)
    (tmp_path / "loop2").symlink_to(tmp_path)
    for _ in range(1200):
        os.mkdir("d")
        os.chdir("d")
    Path("s.jsonl").write_bytes(canonical())
    deep = Path.cwd() / "s.jsonl"
    claude = next(h for h in HARNESSES if h.name == "claude-code")
    try:
        assert logs_in(claude, tmp_path) == [deep]
    finally:  # bottom up: rmtree recurses too deep
        os.remove("s.jsonl")
        for _ in range(1200):
            os.chdir("..")
            os.rmdir("d")


@pytest.mark.parametrize(
    "tamper, named",
    [
        ("DROP TABLE requests", "table requests is missing"),
        ("ALTER TABLE runs DROP COLUMN model", "table runs has been changed (missing column model)"),
        ("ALTER TABLE items ADD COLUMN extra INTEGER", "table items has been changed (unknown column extra)"),
    ],
)
def test_a_tampered_store_is_refused_naming_it_and_how_to_rebuild(tmp_path, tamper, named):
    db = tmp_path / "s.duckdb"
    open_store(db).close()
    with duckdb.connect(str(db)) as con:
        con.execute(tamper)
    for command in (["runs"], ["ingest", str(tmp_path / "none.jsonl")]):
        res = cli(*command, "--db", str(db))
        assert res.returncode == 2 and "Traceback" not in res.stderr
        [line] = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
        assert str(db) in line and named in line and "replay ingest" in line


def test_a_file_size_limit_is_a_full_disk():
    from replay.cli.common import disk_full

    assert disk_full(OSError(errno.EFBIG, "File too large", "/data/s.duckdb.wal")) == "/data/s.duckdb.wal"
    assert disk_full(duckdb.IOException('Could not write file "/d/x.wal": File too large')) == "/d/x.wal"


def test_an_output_path_through_a_file_is_one_line(tmp_path, capsys, monkeypatch):
    """report --out and show --html through a file were tracebacks (NotADirectoryError, FileExistsError)."""
    import typer

    from replay.cli.common import run_app

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    app = typer.Typer()

    @app.command()
    def write(out: Path) -> None:
        (out / "charts").mkdir(parents=True)

    @app.command()
    def other() -> None:  # two commands: the first is not run by default
        pass

    monkeypatch.setattr(sys, "argv", ["replay", "write", str(blocker / "r")])
    with pytest.raises(SystemExit) as exit_:
        run_app(app)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "Traceback" not in err
    [line] = [ln for ln in err.splitlines() if ln.startswith("error:")]
    assert str(blocker) in line and "check the path" in line
