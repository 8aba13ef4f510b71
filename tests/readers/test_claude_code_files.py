"""What a Claude Code transcript's ``toolUseResult`` tells of the whole file after a file tool's call
(replay.readers.claude_code_files): the post-compact file restore reads the file again from disk, whole.

Lines are in the shape cli.js 1.0.81 writes them (the user line of a tool result carries the tool's own outcome as
``toolUseResult``: a Read's ``{type: "text", file: {filePath, content, numLines, startLine, totalLines}}``, an
Edit's ``originalFile``, a MultiEdit's ``originalFileContents``). The content is made up.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from replay.model import Item, Run
from replay.readers.claude_code_files import whole_file
from replay.simulator.load import per_item
from tests.readers.test_claude_code_unlogged import Session, read

ORIGINAL = "x = 1\ny = 2\n"


def file_session() -> Session:
    s = Session("1.0.81")
    s.user("tidy these files")
    s.tool("Read", {"file_path": "/work/p/big.sh", "offset": 10, "limit": 3}, "    10\u2192a\n    11\u2192b", 16_000)
    s.lines[-1]["toolUseResult"] = {
        "type": "text",
        "file": {"filePath": "/work/p/big.sh", "content": "a\nb\nc", "numLines": 3, "startLine": 10, "totalLines": 400},
    }
    s.tool("Read", {"file_path": "/work/p/all.txt"}, "     1\u2192one\n     2\u2192two", 16_100)
    s.lines[-1]["toolUseResult"] = {
        "type": "text",
        "file": {"filePath": "/work/p/all.txt", "content": "one\ntwo", "numLines": 2, "startLine": 1, "totalLines": 2},
    }
    edit = {"file_path": "/work/p/app.py", "old_string": "x = 1", "new_string": "x = 100"}
    s.tool("Edit", edit, "The file /work/p/app.py has been updated.", 16_200)
    s.lines[-1]["toolUseResult"] = {"filePath": "/work/p/app.py", "originalFile": ORIGINAL, "userModified": False}
    edits = {"file_path": "/work/p/app.py", "edits": [{"old_string": "y = 2", "new_string": "y = 2\nz = 3"}]}
    s.tool("MultiEdit", edits, "Applied 1 edit to /work/p/app.py", 16_300)
    s.lines[-1]["toolUseResult"] = {"filePath": "/work/p/app.py", "originalFileContents": "x = 100\ny = 2\n"}
    s.tool("Write", {"file_path": "/work/p/new.md", "content": "# New\n\nbody"}, "File created successfully", 16_400)
    s.tool("Edit", {**edit, "old_string": "absent"}, "String to replace not found in file.", 16_500, error=True)
    s.lines[-1]["toolUseResult"] = "Error: String to replace not found in file."
    s.response([{"type": "text", "text": "Done."}], 16_600)
    return s


def test_whole_file_sizes_per_result(tmp_path: Path) -> None:
    """Each file tool's result gets the whole file's characters and lines after its call: a read of a line range
    its lines only (400), a whole read its content, an Edit its original file with the edit applied, a MultiEdit
    likewise, a Write its content; a failed call nothing."""
    records = read(file_session().write(tmp_path / "s.jsonl"))
    run = next(r for r in records if isinstance(r, Run))
    results = [r for r in records if isinstance(r, Item) and r.kind == "tool_result"]
    chars = dict(run.metadata["file_chars"])
    lines = dict(run.metadata["file_lines"])
    got = [(chars.get(r.seq), lines.get(r.seq)) for r in results]
    assert got == [
        (None, 400),
        (len("one\ntwo"), 2),
        (len("x = 100\ny = 2\n"), 3),
        (len("x = 100\ny = 2\nz = 3\n"), 4),
        (len("# New\n\nbody"), 3),
        (None, None),
    ]
    items = [{"seq": r.seq} for r in records if isinstance(r, Item)]
    loaded = per_item(items, run.metadata, "file_lines")
    assert loaded is not None and int(np.count_nonzero(loaded)) == 5


def test_whole_file_unknown_when_the_log_does_not_tell() -> None:
    """An Edit whose original file the outcome lacks, or whose replacement does not apply to it, and a tool that
    names no whole file, tell nothing."""
    edit = {"old_string": "q", "new_string": "r"}
    assert whole_file("Edit", edit, {"filePath": "/a"}) is None
    assert whole_file("Edit", edit, {"originalFile": "no such text"}) is None
    assert whole_file("Bash", {"command": "cat a"}, {"stdout": "x"}) is None
    assert whole_file("Edit", {**edit, "replace_all": True}, {"originalFile": "q q"}) == (3, 1)


def test_a_compactions_unlogged_content_ends_at_the_next_compaction() -> None:
    """What a compaction re-read (fitted, the log not holding it) is summarised away by the next compaction: its
    offset holds from its step to the next compaction's, not to the end of the run (calibrate.content_ends); with
    the SDK loop's turn end (turn_ends) the earlier of the two. The fit then finds both re-reads."""
    import polars as pl

    from replay.tokens.calibrate import content_ends, fit

    steps = np.arange(30)
    items = pl.DataFrame({"seq": range(30), "step": range(30), "turn": [1] * 30, "kind": ["x"] * 30})
    bounds = {10: "compaction", 20: "compaction", 25: "model switch"}
    assert content_ends(items, steps, bounds, {}) == {10: 20}
    recon = 2_000.0 + 700.0 * (steps % 10)  # each compaction leaves little of the log's history
    held = np.where((steps >= 10) & (steps < 20), 30_000.0, 0.0) + np.where(steps >= 20, 8_000.0, 0.0)
    recorded = 15_000 + 1.05 * recon + held
    f = fit(recon, recorded, None, steps, [10, 20], ends={10: 20})
    assert sorted((at, round(t)) for at, t in f.offsets) == [(10, 30_000), (20, 8_000)]
    assert np.allclose(f.predict(recon, None, steps), recorded)
