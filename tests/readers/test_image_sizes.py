"""Readers keep each image's pixel size where the log holds its data (``runs.metadata.image_sizes``): what the server
counts for it (replay.tokens.images), not its placeholder's tokens."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

from PIL import Image

from replay.model import Item, Run
from replay.readers.base import ReadContext
from replay.readers.inspect_ai import READER as INSPECT
from replay.readers.openai_messages import READER as OPENAI_MESSAGES
from tests.readers import inspect_fixture as F


def _png(width: int, height: int) -> str:
    out = io.BytesIO()
    Image.new("RGB", (width, height)).save(out, "PNG")
    return base64.b64encode(out.getvalue()).decode()


def _read(reader, path: Path) -> tuple[list[Item], dict]:
    records = list(reader.read(ReadContext(path=path, file_hash="0" * 32)))
    images = [r for r in records if isinstance(r, Item) and r.kind == "image"]
    return images, next(r for r in records if isinstance(r, Run)).metadata


def test_openai_messages_image_parts(tmp_path: Path) -> None:
    """Chat Completions' ``image_url`` (object or URL), the Responses API's ``input_image``, Anthropic's ``source``;
    a link to an image elsewhere keeps no size."""
    parts = [
        {"type": "text", "text": "what is wrong here?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + _png(300, 200)}},
        {"type": "input_image", "image_url": "data:image/png;base64," + _png(40, 50)},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": _png(7, 9)}},
        {"type": "image_url", "image_url": {"url": "https://example.com/shot.png"}},
    ]
    messages = [{"role": "user", "content": parts}, {"role": "assistant", "content": "A red box."}]
    path = tmp_path / "chat.json"
    path.write_text(json.dumps({"messages": messages}))
    images, metadata = _read(OPENAI_MESSAGES, path)
    assert len(images) == 4
    assert metadata["image_sizes"] == [[images[0].seq, 300, 200], [images[1].seq, 40, 50], [images[2].seq, 7, 9]]


def test_inspect_content_image(tmp_path: Path) -> None:
    """inspect_ai's ContentImage carries the image as a data URL in ``image``."""
    task = F.user(
        "m-task",
        [
            {"type": "text", "text": "Fix the layout."},
            {"type": "image", "image": "data:image/png;base64," + _png(64, 48)},
        ],
        source="input",
    )
    events = [F.model_event(1, [F.SYS, task], F.A1, F.anthropic_usage(0, 900, 3, 20))]
    path = F.write_json(tmp_path / "shots.json", [F.sample(1, events, [F.SYS, task, F.A1])])
    images, metadata = _read(INSPECT, path)
    assert len(images) == 1 and metadata["image_sizes"] == [[images[0].seq, 64, 48]]


def test_claude_code_queued_command_with_a_pasted_image(tmp_path: Path) -> None:
    """A message the user queued while Claude Code worked is an attachment (``queued_command``) whose ``prompt`` is
    a list of blocks in 2.1.x, a pasted image among them (Eduardodmb/ClaudeWork 0035b67a, 2.1.123). Its text is the
    text blocks, and the image is an image item with its pixel size: read as the Python text of the blocks, its
    244,168 characters of base64 counted about 120,000 tokens where the server counted an image, and the fit put
    the session's scale at 0.078."""
    from tests.readers.test_claude_code_unlogged import Session
    from tests.readers.test_claude_code_unlogged import read as read_cc

    s = Session("2.1.123")
    s.user("tidy the contact page")
    s.tool("Read", {"file_path": "/work/p/page.html"}, "<html></html>", 16_000)
    blocks = [
        {"type": "text", "text": "[Image #1] this is how it looks"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": _png(640, 360)}},
    ]
    s._line("attachment", None, attachment={"type": "queued_command", "prompt": blocks, "commandMode": "prompt"})
    s.response([{"type": "text", "text": "I see the layout."}], 17_000)
    records = read_cc(s.write(tmp_path / "s.jsonl"))
    run = next(r for r in records if isinstance(r, Run))
    (note,) = [r for r in records if isinstance(r, Item) and r.kind == "attachment"]
    (image,) = [r for r in records if isinstance(r, Item) and r.kind == "image"]
    assert note.text == "[Image #1] this is how it looks" and note.tool_name == "queued_command"
    assert (image.step, image.seq) == (note.step, note.seq + 1) and len(image.text) < 20
    assert run.metadata["image_sizes"] == [[image.seq, 640, 360]]
