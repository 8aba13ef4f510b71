"""Ingest guarantees on hand-made canonical files: transactions, no-op re-ingest, quarantine."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from replay.errors import ReplayError
from replay.ingest import expand_paths, ingest
from replay.store import open_store

RUN = {"type": "run", "format": "replay-canonical/1", "run": "r1", "model": "m"}


def write_canonical(path: Path, n_requests: int = 3, extra_lines: list[str] | None = None) -> Path:
    lines = [json.dumps(RUN)]
    for k in range(n_requests):
        lines.append(json.dumps({"type": "item", "kind": "user_text", "role": "user", "text": f"step {k}"}))
        lines.append(json.dumps({"type": "request", "input_tokens": 10 * (k + 1)}))
        lines.append(
            json.dumps(
                {
                    "type": "item",
                    "kind": "tool_call",
                    "tool_name": "bash",
                    "call_id": f"c{k}",
                    "args": {"command": f"cat src/f{k}.py"},
                }
            )
        )
        lines.append(json.dumps({"type": "item", "kind": "tool_result", "call_id": f"c{k}", "text": "ok"}))
    lines += extra_lines or []
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def counts(con) -> tuple:
    return tuple(
        con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
        for t in ("files", "runs", "items", "requests", "quarantine")
    )


def test_reingest_is_a_noop(tmp_path):
    f = write_canonical(tmp_path / "a.jsonl")
    con = open_store(tmp_path / "s.duckdb")
    first = ingest(con, [f])
    before = counts(con)
    second = ingest(con, [f])
    assert [o.status for o in first] == ["ingested"] and [o.status for o in second] == ["unchanged"]
    assert counts(con) == before == (1, 1, 9, 3, 0)


def test_steps_and_resources(tmp_path):
    con = open_store(tmp_path / "s.duckdb")
    ingest(con, [write_canonical(tmp_path / "a.jsonl")])
    rows = con.execute("SELECT step, kind, resource, access FROM items ORDER BY seq LIMIT 4").fetchall()
    assert rows == [
        (0, "user_text", None, None),
        (1, "tool_call", "src/f0.py", "read"),
        (1, "tool_result", "src/f0.py", "read"),
        (1, "user_text", None, None),
    ]


@pytest.mark.parametrize(
    "bad, reason",
    [
        ("{not json", "malformed JSON"),
        ('{"type": "item", "kind": "user_text", "text": "cut', "truncated"),
        ('{"type": "wat"}', "unknown record type"),
    ],
)
def test_bad_line_is_quarantined_with_line_and_rest_ingests(tmp_path, bad, reason):
    f = write_canonical(tmp_path / "a.jsonl", extra_lines=[bad, json.dumps({"type": "request"})])
    con = open_store(tmp_path / "s.duckdb")
    [out] = ingest(con, [f])
    assert out.status == "ingested" and out.requests == 4
    line, why = con.execute("SELECT line, reason FROM quarantine").fetchone()
    assert line == 14 and reason.lower() in why.lower()


def test_non_utf8_and_oversized_lines(tmp_path):
    f = tmp_path / "a.jsonl"
    write_canonical(f)
    with f.open("ab") as fh:
        fh.write(b'{"type": "item", "kind": "user_text", "text": "\xff\xfe"}\n')
        fh.write(b'{"type": "item", "kind": "user_text", "text": "' + b"x" * 2_000_000 + b'"}\n')
    con = open_store(tmp_path / "s.duckdb")
    ingest(con, [f], max_line_bytes=1_000_000)
    reasons = [r for (r,) in con.execute("SELECT reason FROM quarantine ORDER BY line").fetchall()]
    assert "not UTF-8" in reasons[0] and "--max-record-mb" in reasons[1]
    assert counts(con)[2] == 9


def test_unknown_format_is_reported_not_ingested(tmp_path):
    f = tmp_path / "notes.txt"
    f.write_text("just some notes\n")
    con = open_store(tmp_path / "s.duckdb")
    [out] = ingest(con, [f])
    assert out.status == "unknown" and "canonical" in out.bad[0].reason
    assert counts(con)[:3] == (0, 0, 0) and counts(con)[4] == 1


def test_failed_write_rolls_back_the_whole_file(tmp_path, monkeypatch):
    import replay.ingest.write as ing

    con = open_store(tmp_path / "s.duckdb")
    monkeypatch.setattr(ing, "_quarantine", lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        ingest(con, [write_canonical(tmp_path / "a.jsonl")])
    assert counts(con) == (0, 0, 0, 0, 0)
    monkeypatch.undo()
    [out] = ingest(con, [tmp_path / "a.jsonl"])
    assert out.status == "ingested" and counts(con)[2] == 9


def test_value_the_store_cannot_hold_quarantines_the_file_whole(tmp_path, monkeypatch):
    import replay.ingest.parse as ip

    def bad_step(out, records):
        columns(out, records)
        out.items["step"][0] = 1.5

    columns = ip._columns
    monkeypatch.setattr(ip, "_columns", bad_step)
    con = open_store(tmp_path / "s.duckdb")
    [out] = ingest(con, [write_canonical(tmp_path / "a.jsonl")], workers=1)
    assert out.status == "failed" and (out.runs, out.items, out.requests) == (0, 0, 0)
    assert counts(con) == (0, 0, 0, 0, 1)
    [(line, reason)] = con.execute("SELECT line, reason FROM quarantine").fetchall()
    assert line == 0 and reason.startswith("the canonical reader gave a value the store cannot hold")
    monkeypatch.undo()
    [out] = ingest(con, [tmp_path / "a.jsonl"])
    assert out.status == "ingested" and counts(con) == (1, 1, 9, 3, 0)


def test_ingest_leaves_the_callers_thread_count(tmp_path):
    con = open_store(tmp_path / "s.duckdb")
    con.execute("SET threads = 3")
    ingest(con, [write_canonical(tmp_path / "a.jsonl")])
    assert con.execute("SELECT current_setting('threads')").fetchone()[0] == 3


def _hold_store(path: str, ready, release) -> None:
    con = open_store(path)
    ready.set()
    release.wait(30)
    con.close()


def test_second_writer_gets_a_clear_message(tmp_path):
    path = str(tmp_path / "s.duckdb")
    ctx = multiprocessing.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    proc = ctx.Process(target=_hold_store, args=(path, ready, release))
    proc.start()
    try:
        assert ready.wait(60)
        with pytest.raises(ReplayError, match="another replay process"):
            open_store(path)
    finally:
        release.set()
        proc.join(30)


def test_expand_paths_dirs_globs_and_missing(tmp_path):
    (tmp_path / "d").mkdir()
    a = write_canonical(tmp_path / "d" / "a.jsonl")
    b = write_canonical(tmp_path / "b.jsonl")
    assert expand_paths([tmp_path / "d", str(tmp_path / "*.jsonl")]) == sorted([a, b])
    with pytest.raises(FileNotFoundError, match="nope"):
        expand_paths([tmp_path / "nope"])


@pytest.mark.parametrize("limit", [None, "3GB"])
def test_ingest_restores_the_memory_limit_and_leaves_the_wal_checkpointed(tmp_path, limit):
    con = open_store(tmp_path / "s.duckdb")
    if limit:
        con.execute(f"SET memory_limit = '{limit}'")
    before = con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    [out] = ingest(con, [write_canonical(tmp_path / "a.jsonl")])
    assert out.status == "ingested"
    assert con.execute("SELECT current_setting('memory_limit')").fetchone()[0] == before
    wal = tmp_path / "s.duckdb.wal"
    assert not wal.exists() or wal.stat().st_size == 0


def test_duckdb_sizes_read_as_bytes():
    from replay.store.memory import size_bytes

    assert size_bytes("18.8 GiB") == 18.8 * 2**30 and size_bytes("512 bytes") == 512 and size_bytes("100.0 MB") == 10**8
    assert size_bytes("unlimited") == float("inf")


def test_a_store_inside_the_folder_it_ingests_is_not_read_as_a_log(tmp_path):
    root = Path(__file__).resolve().parents[2]
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "run.jsonl").write_bytes((root / "data" / "sample" / "sample-short-1.jsonl").read_bytes())
    con = open_store(folder / "s.duckdb")
    first = ingest(con, [folder])
    con.execute("CHECKPOINT")
    again = ingest(con, [folder])
    assert [o.path.name for o in first] == ["run.jsonl"] and [o.status for o in again] == ["unchanged"]


def test_a_recursive_glob_does_not_follow_folder_links(tmp_path):
    """Two links back up the tree made Python's glob (which follows them) run forever."""
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "up").symlink_to(tmp_path)
    (tmp_path / "a" / "self").symlink_to(tmp_path / "a")
    root = Path(__file__).resolve().parents[2]
    (tmp_path / "a" / "b" / "run.jsonl").write_bytes((root / "data" / "sample" / "sample-short-1.jsonl").read_bytes())
    assert expand_paths([f"{tmp_path}/**/*.jsonl"]) == [tmp_path / "a" / "b" / "run.jsonl"]
    assert expand_paths([f"{tmp_path}/a/**/run.json?"]) == [tmp_path / "a" / "b" / "run.jsonl"]
    assert expand_paths([f"{tmp_path}/**"]) == [tmp_path / "a" / "b" / "run.jsonl"]


def test_a_folder_1200_deep_is_walked(tmp_path, monkeypatch):
    """The walk is a loop: a folder deeper than Python's recursion limit used to end in RecursionError."""
    import os

    monkeypatch.chdir(tmp_path)
    for _ in range(1200):
        os.mkdir("d")
        os.chdir("d")
    root = Path(__file__).resolve().parents[2]
    Path("run.jsonl").write_bytes((root / "data" / "sample" / "sample-short-1.jsonl").read_bytes())
    deep = Path.cwd() / "run.jsonl"
    try:
        assert expand_paths([tmp_path]) == [deep]
    finally:  # removed here, bottom up: shutil.rmtree (pytest's clean-up of old tmp folders) recurses too deep
        os.remove("run.jsonl")
        for _ in range(1200):
            os.chdir("..")
            os.rmdir("d")


AIDER_HISTORY = """
# aider chat started at 2025-05-04 17:02:36

> /usr/bin/aider --model gpt-4o
> Aider v0.82.2
> Main model: gpt-4o with diff edit format

#### Add a README.

I will add it.

> Tokens: 2.1k sent, 40 received. Cost: $0.0057 message, $0.0057 session.
"""


def test_aiders_hidden_chat_history_is_found_in_its_project_folder(tmp_path):
    """Aider writes its chat history as ``.aider.chat.history.md`` at the git root (``aider/args.py``,
    ``--chat-history-file``): a folder walk passed it over as a hidden file, so ``replay ingest PROJECT`` found no
    run. Other hidden files (``.aider.input.history``) are still passed over; a glob names a hidden file only by a
    leading dot, as Python's glob does."""
    project = tmp_path / "calculator"
    project.mkdir()
    (project / ".aider.input.history").write_text("\n# 2025-05-04 17:02:40\n+Add a README.\n")
    history = project / ".aider.chat.history.md"
    history.write_text(AIDER_HISTORY)
    assert expand_paths([project]) == [history]
    assert expand_paths([f"{tmp_path}/**/.aider.chat.history.md"]) == [history]
    with pytest.raises(FileNotFoundError):
        expand_paths([f"{tmp_path}/**/*.md"])
    con = open_store(tmp_path / "s.duckdb")
    [out] = ingest(con, [project])
    assert out.status == "ingested" and con.execute("SELECT count(*) FROM requests").fetchone()[0] == 1
