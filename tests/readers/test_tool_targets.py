"""Resource and access classification of tool calls."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replay.readers.tool_targets import classify_call, classify_shell, split_words


@pytest.mark.parametrize(
    "tool, args, expected",
    [
        ("Read", {"file_path": "/repo/src/./a.py"}, ("/repo/src/a.py", "read")),
        ("Edit", {"file_path": "src/a.py", "old_string": "x", "new_string": "y"}, ("src/a.py", "write")),
        ("Write", {"file_path": "b.md", "content": "hi"}, ("b.md", "write")),
        ("Grep", {"pattern": "def main"}, ("def main", "search")),
        ("str_replace_editor", {"command": "view", "path": "/t/x.py"}, ("/t/x.py", "read")),
        ("str_replace_editor", {"command": "str_replace", "path": "/t/x.py"}, ("/t/x.py", "write")),
        ("apply_patch", {"input": "*** Begin Patch\n*** Update File: src/m.rs\n@@"}, ("src/m.rs", "write")),
        ("WebFetch", {"url": "https://example.com/a"}, ("https://example.com/a", "other")),
        ("Bash", {"command": "sed -n '1,80p' src/app.py"}, ("src/app.py", "read")),
        ("exec_command", {"cmd": "bash -lc 'cat README.md | head -5'"}, ("README.md", "read")),
    ],
)
def test_classify_call(tool, args, expected):
    assert classify_call(tool, args) == expected


@pytest.mark.parametrize(
    "command, expected",
    [
        ("cat -n a/b.py", ("a/b.py", "read")),
        ("head -50 x.txt", ("x.txt", "read")),
        ("tail -n 20 log.txt", ("log.txt", "read")),
        ("cd /repo && grep -rn foo src", ("foo src", "search")),
        ("ls -la src", ("src", "search")),
        ("echo hi > out.txt", ("out.txt", "write")),
        ("sed -i 's/a/b/' f.py", ("f.py", "write")),
        ("pytest -q tests", ("pytest -q tests", "exec")),
    ],
)
def test_classify_shell(command, expected):
    assert classify_shell(command) == expected


@given(st.text(alphabet=st.sampled_from(list("ab/.-#$ \t\r\n\x0b\x0c\x1c\x85\xa0\u2003'\"\\é")), max_size=30))
def test_split_words_is_shlex_split(text):
    try:
        expected = shlex.split(text)
    except ValueError:
        with pytest.raises(ValueError):
            split_words(text)
        return
    assert split_words(text) == expected
