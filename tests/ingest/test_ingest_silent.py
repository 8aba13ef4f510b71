"""Ingest changes nothing silently (issue 26): identity from real ids only, one damaged field costs one record, every
change to what was stored is reported with its file and line."""

from __future__ import annotations

import json
from pathlib import Path

from replay.ingest import ingest, watch
from replay.store import open_store

RUN = {"type": "run", "format": "replay-canonical/1", "model": "m"}


def lines(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def canonical_run(name: str, timestamps: list[str]) -> list[dict]:
    rows: list[dict] = [{**RUN, "run": name}]
    for ts in timestamps:
        rows.append({"type": "item", "kind": "user_text", "role": "user", "text": "same question"})
        rows.append({"type": "request", "ts": ts, "input_tokens": 100, "output_tokens": 5})
    return rows


def per_run(con) -> dict[str, int]:
    return dict(
        con.execute(
            "SELECT r.run_id, count(q.step) FROM runs r LEFT JOIN requests q USING (run_id) GROUP BY 1"
        ).fetchall()
    )


def test_two_runs_with_byte_identical_request_lines_keep_their_requests(tmp_path):
    stamps = ["2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z"]
    f = lines(tmp_path / "two.jsonl", canonical_run("a", stamps) + canonical_run("b", stamps))
    con = open_store(tmp_path / "s.duckdb")
    [out] = ingest(con, [f])
    assert out.status == "ingested" and out.requests == 4 and not out.bad
    assert sorted(per_run(con).values()) == [2, 2]


def test_reversed_timestamps_are_reported_with_their_lines(tmp_path):
    f = lines(tmp_path / "rev.jsonl", canonical_run("a", ["2026-01-01T00:10:00Z", "2026-01-01T00:00:00Z"]))
    con = open_store(tmp_path / "s.duckdb")
    [out] = ingest(con, [f])
    assert out.requests == 2
    [warning] = out.warnings
    assert warning.line == 5 and "earlier than" in warning.reason and "line 3" in warning.reason


def cc_line(n: int, session: str, request: str, message: str, ts: object = None, kind: str = "assistant") -> dict:
    base = {
        "type": kind,
        "uuid": f"u{n}",
        "parentUuid": f"u{n - 1}" if n > 1 else None,
        "sessionId": session,
        "timestamp": ts if ts is not None else f"2026-01-01T00:{n // 60:02d}:{n % 60:02d}Z",
    }
    if kind == "user":
        return {**base, "message": {"role": "user", "content": f"question {n}"}}
    usage = {"input_tokens": 10 + n, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0, "output_tokens": 3}
    msg = {"id": message, "role": "assistant", "model": "claude-sonnet-4-5", "usage": usage}
    return {**base, "requestId": request, "message": {**msg, "content": [{"type": "text", "text": f"answer {n}"}]}}


def test_a_reused_claude_code_request_id_is_not_a_duplicate(tmp_path):
    rows = []
    for k in range(40):
        rows.append(cc_line(2 * k + 1, "s1", "", "", kind="user"))
        rows.append(cc_line(2 * k + 2, "s1", "req_shared", f"msg_{k}"))
    rows.append(dict(rows[-1], uuid="u999"))  # a true repeat of the last response's line: same request, same message
    f = lines(tmp_path / "cc.jsonl", rows)
    con = open_store(tmp_path / "s.duckdb")
    [out] = ingest(con, [f])
    assert out.requests == 40
    assert any("requestId" in w.reason and "req_shared" in w.reason for w in out.warnings)


def test_interleaved_sessions_in_one_file_are_two_runs(tmp_path):
    rows = []
    for k in range(6):
        session = "sA" if k % 2 == 0 else "sB"
        rows.append(cc_line(2 * k + 1, session, "", "", kind="user"))
        rows.append(cc_line(2 * k + 2, session, f"req_{k}", f"msg_{k}"))
    f = lines(tmp_path / "cc.jsonl", rows)
    con = open_store(tmp_path / "s.duckdb")
    [out] = ingest(con, [f])
    assert out.runs == 2 and out.requests == 6
    sessions = con.execute("SELECT metadata->>'session_id', n_requests FROM runs ORDER BY 1").fetchall()
    assert sessions == [("sA", 3), ("sB", 3)]
    assert any("interleaved" in w.reason for w in out.warnings)


def test_a_numeric_claude_code_timestamp_costs_no_record(tmp_path):
    rows = [cc_line(1, "s1", "", "", kind="user"), cc_line(2, "s1", "r1", "m1", ts=1767225600000)]
    rows += [cc_line(3, "s1", "", "", kind="user"), cc_line(4, "s1", "r2", "m2")]
    f = lines(tmp_path / "cc.jsonl", rows)
    con = open_store(tmp_path / "s.duckdb")
    [out] = ingest(con, [f])
    assert out.status == "ingested" and out.requests == 2
    assert con.execute("SELECT ts FROM requests ORDER BY step LIMIT 1").fetchone()[0].startswith("2026-01-01T00:00:00")


def test_an_unreadable_timestamp_costs_its_field_not_the_file(tmp_path):
    rows = [cc_line(1, "s1", "", "", kind="user"), cc_line(2, "s1", "r1", "m1", ts={"when": "now"})]
    f = lines(tmp_path / "cc.jsonl", rows)
    con = open_store(tmp_path / "s.duckdb")
    [out] = ingest(con, [f])
    assert out.status == "ingested" and out.requests == 1
    assert [b.line for b in out.bad] == [2] and "timestamp" in out.bad[0].reason


def test_a_grown_file_named_again_replaces_its_run(tmp_path):
    f = lines(tmp_path / "g.jsonl", canonical_run("a", ["2026-01-01T00:00:00Z"]))
    con = open_store(tmp_path / "s.duckdb")
    ingest(con, [f])
    lines(f, canonical_run("a", ["2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z"]))
    [out] = ingest(con, [f])
    assert out.status == "ingested"
    assert list(per_run(con).values()) == [2]
    assert con.execute("SELECT count(*) FROM files").fetchone()[0] == 1


def test_a_file_truncated_under_watch_is_reported(tmp_path):
    f = lines(tmp_path / "w.jsonl", canonical_run("a", [f"2026-01-01T00:{m:02d}:00Z" for m in range(10)]))
    con = open_store(tmp_path / "s.duckdb")
    seen = []

    def shrink(n: int) -> None:
        if n == 1:
            lines(f, canonical_run("a", ["2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z"]))

    watch(con, lambda: [f], interval=0, polls=2, report=seen.append, after_poll=shrink)
    assert [o.requests for o in seen] == [10, 2]
    [warning] = seen[1].warnings
    assert "shrank" in warning.reason and "10 items to 2 items" in warning.reason


def test_a_file_replaced_by_one_of_the_same_size_and_mtime_replaces_its_run(tmp_path):
    """Same size, mtime set back: caught by a plain ingest (content hash) and under --watch (ctime, inode)."""
    import os

    before = canonical_run("a", ["2026-01-01T00:00:00Z"])
    after = [dict(r, text="SAME QUESTION") if r.get("kind") == "user_text" else r for r in before]
    for watched in (False, True):
        f = lines(tmp_path / f"w{watched}.jsonl", before)
        con = open_store(tmp_path / f"s{watched}.duckdb")

        def swap(n: int, f: Path = f) -> None:
            st = f.stat()
            lines(f, after)
            os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
            assert f.stat().st_size == st.st_size

        if watched:
            assert watch(con, lambda f=f: [f], interval=0, polls=2, after_poll=swap) == 2
        else:
            ingest(con, [f])
            swap(1)
            assert [o.status for o in ingest(con, [f])] == ["ingested"]
        assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 1
        assert con.execute("SELECT list(text) FROM items WHERE kind = 'user_text'").fetchone()[0] == ["SAME QUESTION"]


def test_a_reader_fix_reaches_files_ingested_before_it(tmp_path, monkeypatch):
    """The skip key is content and reader: a file read by an earlier reader version is read again, with a line."""
    from replay.readers.canonical import CanonicalReader

    f = lines(tmp_path / "a.jsonl", canonical_run("a", ["2026-01-01T00:00:00Z"]))
    con = open_store(tmp_path / "s.duckdb")
    ingest(con, [f])
    assert con.execute("SELECT reader_version FROM files").fetchone()[0] == "canonical/1"
    con.execute("UPDATE files SET reader_version = NULL")  # a store from before the column: version 1
    assert [o.status for o in ingest(con, [f])] == ["unchanged"]
    monkeypatch.setattr(CanonicalReader, "version", 2, raising=False)
    [out] = ingest(con, [f])
    assert out.status == "ingested" and "read again: ingested by reader canonical/1" in out.warnings[0].reason
    assert con.execute("SELECT reader_version, n_runs FROM files").fetchall() == [("canonical/2", 1)]
    assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 1
    assert [o.status for o in ingest(con, [f])] == ["unchanged"]
    monkeypatch.setattr(CanonicalReader, "version", 3, raising=False)  # through watch (one file at a time) too
    seen: list = []
    watch(con, lambda: [f], interval=0, polls=1, report=seen.append)
    assert [o.status for o in seen] == ["ingested"] and "canonical/3" in seen[0].warnings[0].reason
    assert con.execute("SELECT count(*) FROM files").fetchone()[0] == 1


def test_a_cline_string_usage_value_costs_one_request(tmp_path):
    task = tmp_path / "task"
    task.mkdir()
    msgs = [{"ts": 1767225600000, "type": "say", "say": "text", "text": "fix it"}]
    for k, tokens_in in enumerate([10, "12", 14]):
        info = {"request": f"req {k}", "tokensIn": tokens_in, "tokensOut": 4, "cacheReads": 0, "cacheWrites": 0}
        msgs.append({"ts": 1767225601000 + k, "type": "say", "say": "api_req_started", "text": json.dumps(info)})
        msgs.append({"ts": 1767225602000 + k, "type": "say", "say": "text", "text": f"answer {k}"})
    (task / "ui_messages.json").write_text(json.dumps(msgs), encoding="utf-8")
    con = open_store(tmp_path / "s.duckdb")
    [out] = ingest(con, [task / "ui_messages.json"])
    assert out.status == "ingested" and out.requests == 3
    [bad] = out.bad
    assert bad.line == 3 and "input_tokens='12'" in bad.reason
    usage = con.execute("SELECT input_tokens FROM requests ORDER BY step").fetchall()
    assert usage == [(10,), (None,), (14,)]


def test_an_unparseable_aider_tokens_line_is_reported(tmp_path):
    text = (
        "# aider chat started at 2026-01-01 00:00:00\n\n"
        "#### fix it\n\nDone.\n\n> Tokens: 1.2k sent, 30 received.\n\n"
        "#### again\n\nDone again.\n\n> Tokens: many sent, some received.\n"
    )
    f = tmp_path / ".aider.chat.history.md"
    f.write_text(text, encoding="utf-8")
    con = open_store(tmp_path / "s.duckdb")
    [out] = ingest(con, [f])
    assert out.requests == 2
    [bad] = out.bad
    assert bad.line == 13 and "Tokens" in bad.reason
