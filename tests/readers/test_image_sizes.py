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
