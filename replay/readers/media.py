"""The pixel size of an image a log holds as base64 data, read from its header."""

from __future__ import annotations

import base64
import binascii
import io
import warnings

from PIL import Image, UnidentifiedImageError

HEAD_CHARS = 1 << 20  # base64 characters decoded: every format's size field is near the start (JPEG: before its scan)


def pixel_size(data: object) -> tuple[int, int] | None:
    """(width, height) of the image in ``data`` (base64, or a ``data:`` URL), None when it is no image Pillow reads.

    Only the header is read (Pillow opens lazily), from the first ``HEAD_CHARS`` characters; a JPEG whose frame
    header comes later (a large EXIF block) is decoded whole."""
    if not isinstance(data, str) or not data:
        return None
    if data.startswith("data:"):
        data = data.partition(",")[2]
    for chars in (HEAD_CHARS, len(data)) if len(data) > HEAD_CHARS else (len(data),):
        head = data[: chars - chars % 4]
        try:
            with warnings.catch_warnings():  # a size past Pillow's bomb limit is still a size: the header alone is read
                warnings.simplefilter("ignore", Image.DecompressionBombWarning)
                with Image.open(io.BytesIO(base64.b64decode(head, validate=False))) as image:
                    width, height = image.size
        except (binascii.Error, UnidentifiedImageError, Image.DecompressionBombError, OSError, ValueError):
            continue
        if width > 0 and height > 0:
            return int(width), int(height)
    return None
