"""Claude Code's SDK loop (the VS Code extension's), 2.0.0-2.0.29: attachments last their own user turn only
(replay.readers.claude_code_unlogged, replay.tokens.calibrate.turn_ends).

Lines are in the shape cli.js 2.0.2 writes them (``insertMessageChain``: parentUuid, isSidechain, userType, cwd,
sessionId, version, gitBranch, then the message; a compaction as a ``compact_boundary`` system line and an
``isCompactSummary`` user line); the extension's user messages open with an ``<ide_selection>`` or
``<ide_opened_file>`` text block before the prompt. The content is made up.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl

from replay.model import Item, Run
from replay.readers.tool_targets import END
from replay.simulator.harness_preset import harness_preset
from replay.simulator.load import apply_prompt, part_reads
from replay.simulator.prompt import FIT, PromptModel
from replay.tokens.calibrate import fit, turn_ends
from tests.readers.test_claude_code_unlogged import Session, read

SELECTION = (
    "<ide_selection>The user selected the lines 4 to 6 from /work/p/app.ts:\nconst a = 1;\n\nThis may or may not "
    "be related to the current task.</ide_selection>"
)
OPENED = "<ide_opened_file>The user opened the file /work/p/app.ts in the IDE.</ide_opened_file>"


def session(version: str, first: list[dict] | str, sidechain: bool = False) -> Session:
    s = Session(version)
    s.user(first)
    s.tool("Read", {"file_path": "/work/p/app.ts"}, "     1\u2192const a = 1;\n" * 20, 16_000)
    s.response([{"type": "text", "text": "Done."}], 16_400)
    s.user([{"type": "text", "text": OPENED}, {"type": "text", "text": "and the tests?"}])
    s.response([{"type": "text", "text": "They pass."}], 16_600)
    if sidechain:
        for line in s.lines:
            line["isSidechain"] = True
    return s


def run_of(records: list) -> Run:
    return next(r for r in records if isinstance(r, Run))


def test_extension_session_is_marked(tmp_path: Path) -> None:
    """A 2.0.2 user message opening with the extension's selection block marks the session: its attachments are
    gone from the next user message on. The blocks are the prompt's own text, kept as user text."""
    first = [{"type": "text", "text": SELECTION}, {"type": "text", "text": "why is this 1?"}]
    records = read(session("2.0.2", first).write(tmp_path / "s.jsonl"))
    assert run_of(records).metadata["turn_attachments"] == {"version": "2.0.2", "line": 1}
    texts = [r.text for r in records if isinstance(r, Item) and r.kind == "user_text"]
    assert texts[:2] == [SELECTION, "why is this 1?"]


def test_a_later_block_marks_it_too(tmp_path: Path) -> None:
    """The first prompt need not carry a block (nothing selected): the first one that does marks the run."""
    records = read(session("2.0.29", "why is this 1?").write(tmp_path / "s.jsonl"))
    assert run_of(records).metadata["turn_attachments"] == {"version": "2.0.29", "line": 5}


def test_not_marked_from_2_0_30_nor_in_a_cli_session_nor_a_sidechain(tmp_path: Path) -> None:
    """2.0.30's loop keeps attachments; a CLI session writes no such block (cli.js sends the IDE selection as an
    attachment of its own wording); a sub-agent runs its own loop."""
    first = [{"type": "text", "text": SELECTION}, {"type": "text", "text": "why is this 1?"}]
    later = session("2.0.30", first)
    assert "turn_attachments" not in run_of(read(later.write(tmp_path / "a.jsonl"))).metadata
    cli = session("2.0.2", "why is this 1?")
    cli.lines[4]["message"]["content"] = "and the tests?"
    assert "turn_attachments" not in run_of(read(cli.write(tmp_path / "b.jsonl"))).metadata
    side = [r for r in read(session("2.0.2", first, sidechain=True).write(tmp_path / "c.jsonl")) if isinstance(r, Run)]
    assert all("turn_attachments" not in r.metadata for r in side)


def items_frame(steps: list[int], turns: list[int], kinds: list[str]) -> pl.DataFrame:
    return pl.DataFrame({"seq": range(len(steps)), "step": steps, "turn": turns, "kind": kinds})


def test_compaction_content_ends_at_the_next_user_turn() -> None:
    """A compaction in the middle of turn 1 (step 4): what the harness re-attached after its summary is gone at
    the first request of turn 2 (step 7), not before; a run without the mark keeps it to the end."""
    items = items_frame(
        [0, 1, 2, 3, 4, 4, 5, 6, 7, 8],
        [1, 1, 1, 1, 1, 1, 1, 1, 2, 2],
        [
            "user_text",
            "tool_call",
            "tool_result",
            "tool_call",
            "summary",
            "tool_call",
            "tool_result",
            "x",
            "user_text",
            "x",
        ],
    )
    steps = np.arange(10)
    marked = {"turn_attachments": {"version": "2.0.2", "line": 1}}
    assert turn_ends(items, steps, {4: "compaction"}, marked) == {4: 7}
    assert turn_ends(items, steps, {4: "compaction"}, {}) == {}
    assert turn_ends(items, steps, {4: "missing-parent"}, marked) == {}  # a message the log lacks stays


def test_fit_recovers_content_held_for_one_turn() -> None:
    """recorded = prefix + scale * log + 3,000 re-attached at the compaction (step 10) until the next turn
    (step 15): the fit finds the offset and where it ends; held to the end it could not fit both sides."""
    steps = np.arange(24)
    recon = 2_000.0 + 700.0 * steps
    held = ((steps >= 10) & (steps < 15)).astype(float)
    recorded = 15_000 + 1.05 * recon + 3_000 * held
    f = fit(recon, recorded, None, steps, [10], ends={10: 15})
    assert f.ends == ((10, 15),)
    ((at, tokens),) = f.offsets
    assert at == 10 and abs(tokens - 3_000) < 1
    assert np.allclose(f.predict(recon, None, steps), recorded)
    kept = fit(recon, recorded, None, steps, [10])  # the offset to the end: the dip after step 15 stays an error
    assert np.abs(kept.predict(recon, None, steps) - recorded).max() > 1_000


def test_prompt_model_drops_the_content_where_it_ends() -> None:
    """The fitted content is sent from its step until the step it ends at (``gone_at``)."""
    items = [{"seq": q, "step": q, "kind": "user_text", "role": "user", "tokens": 10, "chars": 40} for q in range(6)]
    model = PromptModel(prefix=100, source=FIT, unlogged=((2, 500, "compaction"),), until=((2, 4),))
    out = apply_prompt([dict(it) for it in items], model)
    (added,) = [it for it in out if it["seq"] is None and it["kind"] == "attachment"]
    assert (added["step"], added["tokens"], added["gone_at"]) == (2, 500, 4)
    plain = apply_prompt([dict(it) for it in items], PromptModel(prefix=100, source=FIT, unlogged=((2, 500, "x"),)))
    assert all("gone_at" not in it for it in plain if it["kind"] == "attachment")


def test_marked_session_replays_the_sdk_read_file_state() -> None:
    """A marked session's preset rebuilds the read-file state at each user message from the files read whole
    (whole writes too from 2.0.15); a session without the mark keeps the REPL's state."""
    marked = {"cc_version": "2.0.2", "turn_attachments": {"version": "2.0.2", "line": 1}}
    name, _, params = harness_preset("claude-code", marked, "claude-sonnet-4-5-20250929")
    assert name == "claude-code-1.0.80"
    assert (params["reattach_turn_files"], params["reattach_turn_writes"]) == (10, False)
    later = {**marked, "cc_version": "2.0.26"}
    assert harness_preset("claude-code", later, "claude-sonnet-4-5-20250929")[2]["reattach_turn_writes"] is True
    plain = harness_preset("claude-code", {"cc_version": "2.0.2"}, "claude-sonnet-4-5-20250929")
    assert "reattach_turn_files" not in plain[2]


def test_a_read_with_an_offset_or_a_limit_shows_part_of_its_file() -> None:
    """The SDK loop takes a Read into its state only without an offset and a limit, whatever their values."""
    items = [
        {"args": json.dumps({"file_path": "/w/a.py"}), "span": (1, END, None)},
        {"args": json.dumps({"file_path": "/w/a.py", "offset": 1}), "span": (1, END, None)},
        {"args": json.dumps({"file_path": "/w/a.py", "limit": 30}), "span": (1, 30, None)},
        {"args": None},
    ]
    assert part_reads(items).tolist() == [False, True, True, False]
    assert part_reads(items[:1] + items[3:]) is None
