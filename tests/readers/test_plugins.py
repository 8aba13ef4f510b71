"""Third-party readers registered under the ``replay.readers`` entry-point group."""

from __future__ import annotations

from importlib.metadata import EntryPoint

import pytest

import replay.readers as readers
from replay.errors import ReplayError
from replay.ingest import ingest_file
from replay.model import BadRecord, Run
from replay.readers.builder import RunBuilder
from replay.store import open_store


class ToyChatReader:
    """The example of docs/readers.md."""

    format = "toychat"

    def sniff(self, head, path):
        return head.startswith("TOYCHAT 1\n")

    def read(self, ctx):
        b = RunBuilder(Run(run_id=ctx.run_id(), format=self.format, source_path=str(ctx.path)))
        for line_no, line in enumerate(ctx.path.read_text().splitlines()[1:], start=2):
            role, _, text = line.partition(": ")
            if role == "USER":
                b.new_turn()
                b.add("user_text", "user", text, line=line_no)
            elif role == "AGENT":
                b.request(line=line_no)
                b.add("assistant_text", "assistant", text, line=line_no)
            else:
                yield BadRecord(line_no, "expected 'USER: ' or 'AGENT: '", line)
        yield from b


NOT_A_READER = object()


@pytest.fixture
def plugins(monkeypatch):
    def use(*values: str) -> None:
        eps = [EntryPoint(name=f"p{n}", value=v, group=readers.ENTRY_POINT_GROUP) for n, v in enumerate(values)]
        monkeypatch.setattr(readers, "entry_points", lambda group: eps if group == readers.ENTRY_POINT_GROUP else [])
        readers.plugin_readers.cache_clear()

    yield use
    readers.plugin_readers.cache_clear()


def test_entry_point_reader_is_detected_and_ingests(plugins, tmp_path):
    log = tmp_path / "chat.toy"
    log.write_text("TOYCHAT 1\nUSER: hi\nAGENT: hello\n???\n")
    assert readers.detect(log) is None
    plugins("tests.readers.test_plugins:ToyChatReader")
    assert readers.detect(log).format == "toychat" and "toychat" in readers.formats()
    out = ingest_file(open_store(tmp_path / "s.duckdb"), log)
    assert (out.status, out.format, out.requests, out.items, [b.line for b in out.bad]) == (
        "ingested",
        "toychat",
        1,
        2,
        [4],
    )


def test_a_broken_plugin_is_named(plugins):
    plugins("tests.readers.test_plugins:NOT_A_READER")
    with pytest.raises(ReplayError, match="reader plugin 'p0'.*is not a reader"):
        readers.readers()
    plugins("no_such_module_xyz:Reader")
    with pytest.raises(ReplayError, match="reader plugin 'p0' .*failed to load: ModuleNotFoundError"):
        readers.readers()
