"""Aider reader against the real corpus: counts match MANIFEST.md, token usage, edits and reads, sniffing."""

from __future__ import annotations

import json
import re
from pathlib import Path

from replay.model import BadRecord, Item, Request, Run
from replay.readers import detect
from replay.readers.aider import READER, parse_count
from replay.readers.base import HEAD_BYTES, ReadContext
from tests.readers.test_swe_agent import manifest_rows

# SEARCH/REPLACE blocks that aider applies. afi-core has 28 "<<<<<<< SEARCH" lines, but one sits in aider's
# "SearchReplaceNoExactMatch" error text reflected back to the model (a user message), so 27 edits.
EDITS = {
    "aider-afi-core-gpt4o.md": 27,
    "aider-luvatrix-qwen35-local.md": 0,
    "aider-pgstndtrprt-sonnet35.md": 10,
    "aider-pocketflow-text2sql-horizon-beta.md": 0,
}


def read(path: Path) -> list:
    return list(READER.read(ReadContext(path=path, file_hash="0" * 32)))


def manifest_sessions(corpus: Path) -> dict[str, int]:
    body = (corpus / "MANIFEST.md").read_text().split("\n## aider\n", 1)[1].split("\n## ", 1)[0]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^\| (\S+\.md) \|.*?; (\d+) sessions;", body, re.M)}


def test_counts_match_manifest(corpus: Path) -> None:
    rows, sessions = manifest_rows(corpus, "aider"), manifest_sessions(corpus)
    assert len(rows) == len(sessions) == len(list((corpus / "aider").glob("*.md"))) == 4
    for name, (requests, _calls) in rows.items():  # tool calls: "n/a (edit blocks)"
        path = corpus / "aider" / name
        records = read(path)
        assert not [r for r in records if isinstance(r, BadRecord)], name
        assert sum(isinstance(r, Run) for r in records) == sessions[name], name
        reqs = [r for r in records if isinstance(r, Request)]
        assert len(reqs) == int(requests.split()[0]), name  # "39 token lines"
        assert all(r.prompt_tokens and r.output_tokens for r in reqs), name
        calls = [r for r in records if isinstance(r, Item) and r.kind == "tool_call"]
        edits = [c for c in calls if c.tool_name == "edit"]
        assert len(edits) == EDITS[name] and all(c.access == "write" and c.resource for c in edits), name
        # "/add" reads a file into the chat; "Added N lines of output to the chat" is /run output, not a file
        added = [
            f
            for f in re.findall(r"^> Added (.+?) to the chat", path.read_text(), re.M)
            if not re.match(r"\d+ lines? of output", f)
        ]
        reads = [c for c in calls if c.tool_name == "read"]
        assert [c.resource for c in reads] == added and all(c.access == "read" for c in reads), name


def test_token_line_usage_and_order(corpus: Path) -> None:
    records = read(corpus / "aider" / "aider-afi-core-gpt4o.md")
    run2 = [r for r in records if getattr(r, "run_id", "").endswith("/2")]
    assert run2[0].started_at == "2025-07-15 14:53:34" and run2[0].model == "gpt-4o"
    assert run2[0].metadata["aider_version"] == "0.85.1"
    reqs = [r for r in run2 if isinstance(r, Request)]
    assert [(r.prompt_tokens, r.output_tokens) for r in reqs] == [(3200, 66), (3200, 79), (3400, 184)]
    items = [r for r in run2 if isinstance(r, Item)]
    first = next(i for i in items if i.kind == "assistant_text")
    assert first.step == 1 and first.text.startswith("To make the shell script")  # output follows its request
    edit = next(i for i in items if i.tool_name == "edit")
    assert edit.step == 3 and edit.resource == "sync-afi.sh" and "Script to sync" in json.loads(edit.args)["replace"]
    assert not any(">>>>>>> REPLACE" in i.text for i in items if i.kind != "tool_call")
    sonnet = [r for r in read(corpus / "aider" / "aider-pgstndtrprt-sonnet35.md") if isinstance(r, Request)]
    assert (sonnet[0].prompt_tokens, sonnet[0].output_tokens) == (5359, 961)


def test_cache_figures_known_only_where_aider_prints_them(corpus: Path) -> None:
    """Aider prints Anthropic's and DeepSeek's cache fields when they are not 0, never OpenAI's cached_tokens: a gpt-4o
    token line without them leaves the reads unknown; a Claude one (aider 0.48.1, before --cache-prompts) read and
    wrote nothing, so its requests record 0 (an unknown read let the replay charge Anthropic cache reads, -17%)."""
    for name, known in (("aider-afi-core-gpt4o.md", False), ("aider-pgstndtrprt-sonnet35.md", True)):
        path = corpus / "aider" / name
        assert not re.search(r"^> Tokens:.*cache", path.read_text(), re.M), name
        reqs = [r for r in read(path) if isinstance(r, Request)]
        if known:
            assert reqs and all((r.cache_read, r.cache_write, r.input_tokens) == (0, 0, None) for r in reqs)
        else:
            assert reqs and all(r.cache_read is None and r.cache_write is None for r in reqs)


def test_parse_count() -> None:
    assert (parse_count("1.2k"), parse_count("5,359"), parse_count("21"), parse_count(None)) == (1200, 5359, 21, None)


def test_sniff(corpus: Path) -> None:
    for path in sorted(corpus.glob("*/*")):
        if path.name == "MANIFEST.md" or path.is_dir():  # run folders (OpenHands V1, Cline) are not files
            continue
        head = path.open("rb").read(HEAD_BYTES).decode("utf-8", "replace")
        assert READER.sniff(head, path) == (path.parent.name == "aider"), path
        if path.parent.name == "aider":
            assert detect(path) is READER


def test_what_the_log_does_not_hold_is_noted(corpus: Path) -> None:
    """Rounded "11k" figures carry their resolution, files joining or leaving the chat (contents sent, never
    logged) are noted at the request that first sends them, typed answers to aider's questions are console, and
    the history size aider summarises above follows the version (or the command line)."""
    from replay.readers.aider import history_limit

    records = read(corpus / "aider" / "aider-afi-core-gpt4o.md")
    run9 = next(r for r in records if isinstance(r, Run) and r.run_id.endswith("/9"))
    assert run9.metadata["usage_resolution"][:3] == [[0, 500], [1, 50], [2, 50]]  # "11k", "7.0k", "9.1k"
    steps = sorted({n["step"] for n in run9.metadata["unlogged"]})
    assert steps == [1, 2, 3, 5, 7, 8, 9, 10, 12, 13] and all(n["varies"] for n in run9.metadata["unlogged"])
    run6 = [r for r in records if getattr(r, "run_id", "").endswith("/6")]
    assert not [i for i in run6 if isinstance(i, Item) and i.kind == "user_text" and "(Y)es/(N)o" in i.text]
    assert any(isinstance(i, Item) and i.kind == "tool_result" and "(Y)es/(N)o" in i.text for i in run6)
    sonnet = [r for r in read(corpus / "aider" / "aider-pgstndtrprt-sonnet35.md") if isinstance(r, Run)]
    assert "usage_resolution" not in sonnet[0].metadata  # "5,359": v0.48 printed exact counts
    assert [n["reason"].split(":")[0] for n in sonnet[0].metadata["unlogged"]] == ["file edited into the chat"]
    assert sonnet[0].metadata["history_limit"] == 2048 and run9.metadata["history_limit"] == 8192
    assert history_limit("0.85.2", "aider --max-chat-history-tokens 20000") == 20000


def test_before_0_46_each_reply_is_a_request(tmp_path: Path) -> None:
    """Aider 0.45 and older print no usage line (``Tokens: N sent, M received`` is new in 0.46,
    ``aider/coders/base_coder.py`` ``calculate_and_show_tokens_and_cost``); the banner ``Aider v0.45.1`` comes from
    ``get_announcements``. Synthetic content in 0.45's history shape. Main: 0 requests."""
    path = tmp_path / ".aider.chat.history.md"
    path.write_text(
        "\n# aider chat started at 2024-07-01 10:00:00\n\n> Aider v0.45.1  \n"
        "> Models: claude-3-5-sonnet-20240620 with diff edit format, weak model claude-3-haiku-20240307  \n\n"
        "#### add a docstring to util.py  \n\nutil.py\n```python\n<<<<<<< SEARCH\ndef f():\n=======\ndef f():\n"
        '    """Nothing."""\n>>>>>>> REPLACE\n```\n\n> Applied edit to util.py  \n> Commit 1a2b3c4 docs  \n\n'
        "#### now explain it  \n\nIt documents `f`.\n> quoted in the reply\nstill the same reply.\n"
    )
    records = read(path)
    reqs = [r for r in records if isinstance(r, Request)]
    assert [(q.step, q.prompt_tokens, q.output_tokens) for q in reqs] == [(0, None, None), (1, None, None)]
    items = [r for r in records if isinstance(r, Item)]
    assert [(i.kind, i.step) for i in items if i.role != "tool"][-3:] == [
        ("user_text", 1),
        ("assistant_text", 2),
        ("assistant_text", 2),
    ]
    assert next(r for r in records if isinstance(r, Run)).metadata["usage_logged"] is False


def test_cost_line_after_tokens_is_not_assistant_text(tmp_path: Path) -> None:
    """From 0.51 a usage report with both cache figures (or the ``--no-stream`` warning) is ``tokens_report +
    "\\n" + cost_report`` and ``io.append_chat_history`` quotes only its first line, so ``Cost: ...`` stands
    unquoted (``aider/coders/base_coder.py`` ``calculate_and_show_tokens_and_cost``, 0.51.0). Synthetic content.
    Main read each Cost line as assistant text."""
    path = tmp_path / ".aider.chat.history.md"
    path.write_text(
        "\n# aider chat started at 2024-08-20 10:00:00\n\n> Aider v0.51.0  \n"
        "> Main model: claude-3-5-sonnet-20240620 with diff edit format, prompt cache, infinite output  \n\n"
        "#### say hi  \n\nHi!\n\n> Tokens: 2,100 sent, 1,800 cache write, 200 cache hit, 5 received.\n"
        "Cost: $0.0075 message, $0.0075 session. Use --no-stream for accurate caching costs.  \n\n"
        "#### bye  \n\nBye!\n\n> Tokens: 2.2k sent, 100 cache write, 2.0k cache hit, 4 received.\n"
        "Cost: $0.0012 message, $0.0087 session.  \n"
    )
    records = read(path)
    texts = [i.text for i in records if isinstance(i, Item) and i.kind == "assistant_text"]
    assert texts == ["Hi!", "Bye!"]
    reqs = [r for r in records if isinstance(r, Request)]
    assert [(q.prompt_tokens, q.cache_write, q.cache_read, q.input_tokens) for q in reqs] == [
        (2100, 1800, 200, 100),
        (2200, 100, 2000, 100),
    ]
    assert "usage_logged" not in next(r for r in records if isinstance(r, Run)).metadata


def test_model_switch_prices_each_request_at_its_own_model(tmp_path: Path) -> None:
    """``/model`` switches the main model inside a session (aider ``commands.py`` ``cmd_model`` raises
    ``SwitchCoder``; the new coder keeps the chat, logs no new session header and announces "Main model: ..."
    again). Main gave every request the session's first model (the unseen AndrewJacop/Simple-Calulator history:
    20 requests of gemini, qwen3 and deepseek all priced as gemini). Each request now keeps the model announced last;
    the run's is the one that served most. Synthetic content in aider 0.82's shape."""
    text = """
# aider chat started at 2025-05-04 17:02:36

> /usr/bin/aider --model gemini/gemini-2.5-pro-exp-03-25
> Aider v0.82.2
> Main model: gemini/gemini-2.5-pro-exp-03-25 with diff-fenced edit format

#### Summarise the repo.

It is a calculator.

> Tokens: 3.2k sent, 222 received.

#### /model openai/qwen3:32b

> Aider v0.82.2
> Main model: openai/qwen3:32b with whole edit format

#### Continue.

Done.

> Tokens: 7.8k sent, 971 received. Cost: $0.0014 message, $0.0014 session.

#### And the README.

Done too.

> Tokens: 8.8k sent, 1.8k received. Cost: $0.0017 message, $0.0031 session.
"""
    (tmp_path / "calculator").mkdir()
    path = tmp_path / "calculator" / ".aider.chat.history.md"
    path.write_text(text)
    records = read(path)
    (run,) = [r for r in records if isinstance(r, Run)]
    assert run.run_id == "calculator-00000000/1"  # aider's default name: the run is named after its project
    models = [r.model for r in records if isinstance(r, Request)]
    assert models == ["gemini/gemini-2.5-pro-exp-03-25", "openai/qwen3:32b", "openai/qwen3:32b"]
    assert run.model == "openai/qwen3:32b" and records[0] is run
