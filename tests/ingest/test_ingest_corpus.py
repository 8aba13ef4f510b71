"""Ingest of the real corpus: every file reads, nothing is lost from damaged copies."""

from __future__ import annotations

import bz2
import gzip
import re
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from replay.ingest import expand_paths, ingest, ingest_file
from replay.store import open_store


def test_every_corpus_file_ingests_with_a_detected_format(corpus, corpus_db):
    files = expand_paths([corpus])
    assert len(files) >= 60
    rows = corpus_db.execute("SELECT path, format, n_runs FROM files").fetchall()
    assert len(rows) == len(files), "every corpus file has a files row (none unknown or failed)"
    assert all(fmt and n_runs >= 1 for _, fmt, n_runs in rows)
    assert corpus_db.execute("SELECT count(*) FROM quarantine").fetchone()[0] == 0


def test_reingesting_the_corpus_changes_nothing(corpus, corpus_db):
    tables = ("files", "runs", "items", "requests", "quarantine")
    before = [corpus_db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables]
    outcomes = ingest(corpus_db, [corpus])
    assert {o.status for o in outcomes} == {"unchanged"}
    assert [corpus_db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables] == before


def _jsonl_files(corpus: Path) -> list[Path]:
    return [f for f in expand_paths([corpus]) if f.suffix == ".jsonl" and f.stat().st_size < 400_000]


def _item_lines(con, path: Path) -> set[tuple]:
    return set(
        con.execute(
            """SELECT i.line, i.kind, i.text FROM items i JOIN runs r USING (run_id)
                              WHERE r.source_path = ?""",
            [str(path)],
        ).fetchall()
    )


DAMAGES = ["garbage", "truncate", "non_utf8", "empty_object"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_damaged_copies_lose_only_the_damaged_line(corpus, tmp_path_factory, data):
    source = data.draw(st.sampled_from(_jsonl_files(corpus)))
    lines = source.read_bytes().splitlines(keepends=True)
    victim = data.draw(st.integers(0, len(lines) - 1))
    damage = data.draw(st.sampled_from(DAMAGES))
    broken = {
        "garbage": b"%% not json at all\n",
        "truncate": lines[victim][: max(1, len(lines[victim]) // 2)] + b"\n",
        "non_utf8": b'{"type": "user", "x": "\xff\xfe"}\n',
        "empty_object": b"{}\n",
    }[damage]
    tmp = tmp_path_factory.mktemp("fuzz")
    original, damaged = tmp / "orig" / source.name, tmp / "dmg" / source.name
    for path, content in ((original, lines), (damaged, lines[:victim] + [broken] + lines[victim + 1 :])):
        path.parent.mkdir()
        path.write_bytes(b"".join(content))
    con = open_store(tmp / "s.duckdb")
    ingest_file(con, original)
    out = ingest_file(con, damaged)
    assert out.status == "ingested"
    line_no = victim + 1
    keep_orig = {row for row in _item_lines(con, original) if row[0] != line_no}
    keep_dmg = {row for row in _item_lines(con, damaged) if row[0] != line_no}
    assert keep_orig <= keep_dmg, "every record on an undamaged line still ingests"
    if damage in ("garbage", "non_utf8") or (damage == "truncate" and len(lines[victim].strip()) > 2):
        assert line_no in {b.line for b in out.bad}, "the damaged line is reported with its number"


NEW_SECTION = "Added on 2026-12-03: OpenHands V1, Gemini CLI, GitHub Copilot CLI, Cline"
NEW_FOLDERS = ("openhands-v1", "gemini-cli", "copilot-cli", "cline")
ADDED_SECTION = "Added 2026-12-04: harness versions that record their own context events"


def _manifest_counts(corpus: Path) -> dict[str, tuple[str, str]]:
    """file or folder name -> (requests, tool calls) cells of the 2026-12-03 MANIFEST.md section, and of the
    2026-12-04 one for the formats of the 2026-12-03 section (its rows name the format's folder first)."""
    text = (corpus / "MANIFEST.md").read_text()
    rows = {}
    for section, prefixed in ((NEW_SECTION, False), (ADDED_SECTION, True)):
        body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
        for line in body.splitlines():
            cells = [c.strip() for c in line.strip("|").split("|")]
            if len(cells) > 6 and cells[0] not in ("file", "---"):
                parts = cells[0].split(" ", 1)[0].split("/")
                if prefixed and parts[0] not in NEW_FOLDERS:
                    continue
                rows[parts[1] if prefixed else parts[0]] = (cells[5], cells[6])
    return rows


def _count(cell: str) -> tuple[str, int]:
    """('>=' or '=', n) from a cell such as '3', '≥4 (stats updates)' or '~67 tool/command messages'."""
    m = re.match(r"([≥~]?)(\d+)", cell)
    assert m, cell
    return (">=" if m.group(1) == "≥" else "="), int(m.group(2))


def test_new_formats_match_manifest_counts(corpus, corpus_db):
    rows = _manifest_counts(corpus)
    units = {p.name.removesuffix("/"): p for folder in NEW_FOLDERS for p in (corpus / folder).iterdir()}
    assert set(rows) == set(units), "every added file or folder has a MANIFEST row"
    for name, (requests_cell, calls_cell) in rows.items():
        got = corpus_db.execute(
            """SELECT count(DISTINCT r.run_id), (SELECT count(*) FROM requests q JOIN runs x USING (run_id)
                                                 WHERE x.source_path = ?),
                      (SELECT count(*) FROM items i JOIN runs x USING (run_id)
                       WHERE x.source_path = ? AND i.kind = 'tool_call')
               FROM runs r WHERE r.source_path = ?""",
            [str(units[name])] * 3,
        ).fetchone()
        assert got[0] == 1, f"{name}: one run"
        for (op, want), have in ((_count(requests_cell), got[1]), (_count(calls_cell), got[2])):
            assert have >= want if op == ">=" else have == want, (name, requests_cell, calls_cell, got)
    formats = dict(corpus_db.execute("SELECT path, format FROM files").fetchall())
    assert formats[str(corpus / "openhands-v1" / "ohv1-cli-traj-confirmation_mode")] == "openhands-v1"


ROW_QUERIES = {
    "items": "SELECT * EXCLUDE (run_id) FROM items ORDER BY seq",
    "requests": "SELECT * EXCLUDE (run_id) FROM requests ORDER BY step",
    "runs": "SELECT run_id, file_hash, format, model, n_requests, metadata FROM runs",
}


def _rows(con) -> dict[str, list]:
    return {k: con.execute(q).fetchall() for k, q in ROW_QUERIES.items()}


@pytest.mark.parametrize("suffix", [".gz", ".bz2"])
@pytest.mark.parametrize(
    "name",
    [
        "gemini-cli/gemini-vct-init-v040-20260423.jsonl",
        "cline/cline-jeehunter-mcp-root.ui_messages.json",
        "claude-code/cc-fixture-agentsessions-small.jsonl",
    ],
)
def test_compressed_copy_ingests_to_the_same_rows(corpus, tmp_path, name, suffix):
    plain = corpus / name
    packed = tmp_path / (plain.name + suffix)
    opener = {".gz": gzip.open, ".bz2": bz2.open}[suffix]
    with opener(packed, "wb") as fh:
        fh.write(plain.read_bytes())
    stores = [open_store(tmp_path / "plain.duckdb"), open_store(tmp_path / "packed.duckdb")]
    outs = [ingest_file(stores[0], plain), ingest_file(stores[1], packed)]
    assert [o.status for o in outs] == ["ingested", "ingested"] and outs[0].format == outs[1].format
    assert _rows(stores[0]) == _rows(stores[1]) and _rows(stores[1])["items"]
    assert stores[1].execute("SELECT DISTINCT source_path FROM runs").fetchall() == [(str(packed),)]
    assert ingest_file(stores[1], packed).status == "unchanged"


def test_zstd_without_zstandard_is_a_clear_failure(tmp_path, monkeypatch):
    packed = tmp_path / "session.jsonl.zst"
    packed.write_bytes(b"\x28\xb5\x2f\xfd not really zstd")
    monkeypatch.setitem(sys.modules, "zstandard", None)  # import fails as if it were not installed
    out = ingest_file(open_store(tmp_path / "s.duckdb"), packed)
    assert out.status == "failed" and "install the 'zstandard' package" in out.bad[0].reason


def test_zstd_copy_ingests_when_zstandard_is_installed(corpus, tmp_path):
    zstandard = pytest.importorskip("zstandard")
    plain = corpus / "copilot-cli" / "copilot-vct-events-1.0.34-20260423.jsonl"
    packed = tmp_path / (plain.name + ".zst")
    packed.write_bytes(zstandard.ZstdCompressor().compress(plain.read_bytes()))
    stores = [open_store(tmp_path / "plain.duckdb"), open_store(tmp_path / "packed.duckdb")]
    ingest_file(stores[0], plain)
    assert ingest_file(stores[1], packed).status == "ingested" and _rows(stores[0]) == _rows(stores[1])


def test_a_member_file_named_directly_ingests_its_run_folder(corpus):
    conv = corpus / "openhands-v1" / "ohv1-sdk-conv-cd945624-gpt4omini"
    event = sorted((conv / "events").glob("event-*.json"))[3]
    assert expand_paths([event, conv / "base_state.json"]) == [conv]
    lone = corpus / "cline" / "cline-xray-opus46-task_sample.ui_messages.json"
    assert expand_paths([lone]) == [lone]
