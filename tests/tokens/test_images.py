"""An image costs what its provider counts for its pixel size, not its placeholder's tokens."""

from __future__ import annotations

import base64
import io
import json

import numpy as np
import pytest
from PIL import Image

from replay.policies import Budget, make_policy
from replay.readers.media import pixel_size
from replay.run_arrays import KIND_CODE
from replay.simulator.load import load_runs
from replay.simulator.run import simulate_run
from replay.tokens.counting import count_items
from replay.tokens.images import anthropic_image_tokens, image_tokens
from replay.tokens.loading import load_tokenizer
from replay.tokens.usage_metadata import exact_sizes


def _base64(size: tuple[int, int], fmt: str) -> str:
    out = io.BytesIO()
    Image.new("RGB", size).save(out, fmt)
    return base64.b64encode(out.getvalue()).decode()


@pytest.mark.parametrize(("width", "height", "tokens"), [(200, 200, 54), (1000, 1000, 1334), (1092, 1092, 1590)])
def test_anthropic_documented_examples(width, height, tokens):
    """Anthropic's vision guide: width x height / 750, about 54, 1,334 and 1,590 tokens for these sizes."""
    assert anthropic_image_tokens(width, height) == tokens


def test_anthropic_scales_large_images_down():
    """A long edge past 1,568 pixels or a cost past about 1,600 tokens is scaled down first."""
    assert anthropic_image_tokens(3024, 1610) == anthropic_image_tokens(6048, 3220) <= 1600
    assert anthropic_image_tokens(4000, 100) == anthropic_image_tokens(1568, 39)
    assert image_tokens("claude-sonnet-4-5", 1000, 1000) == 1334
    assert image_tokens("gpt-5", 1000, 1000) is None and image_tokens(None, 1000, 1000) is None


def test_pixel_size_reads_the_header():
    png, jpeg = _base64((300, 200), "PNG"), _base64((640, 480), "JPEG")
    assert pixel_size(png) == (300, 200) and pixel_size("data:image/png;base64," + png) == (300, 200)
    assert pixel_size(jpeg) == (640, 480)
    assert pixel_size("not an image") is None and pixel_size(None) is None and pixel_size(png[:40]) is None


def test_exact_sizes_prices_images_by_model():
    metadata = {"image_sizes": [[4, 1000, 1000], ["x", 1, 1]], "reasoning_tokens": [[2, 30]]}
    assert exact_sizes(metadata, model="claude-opus-4-5") == {2: 30, 4: 1334}
    assert exact_sizes(metadata, model="gpt-5") == {2: 30}


@pytest.fixture(scope="module")
def o200k_runs(corpus_db):
    tok = load_tokenizer("o200k")
    count_items(corpus_db, tok)
    runs = load_runs(corpus_db, tok.tokenizer_id, pattern="%cline-xray-opus46%")
    runs += load_runs(corpus_db, tok.tokenizer_id, pattern="%ccl-dd-me-next%")
    return {r.run_id: r for r in runs}


SIZES = {"ccl-dd-me-next": [[231, 1002, 606]], "cline-xray-opus46": [[307, 1680, 862]]}  # [seq, width, height]


def test_readers_record_each_images_size(corpus_db, o200k_runs):
    """The Claude Code and Cline readers keep each image's pixel size; the run's image item then holds what
    Anthropic counts for it (its framing as every item has), not the placeholder's 5 tokens."""
    for part, sizes in SIZES.items():
        (metadata,) = corpus_db.execute("SELECT metadata FROM runs WHERE run_id LIKE ?", [f"{part}%"]).fetchall()[0]
        assert (json.loads(metadata) if isinstance(metadata, str) else metadata)["image_sizes"] == sizes
        (run,) = [r for rid, r in o200k_runs.items() if rid.startswith(part)]
        (at,) = np.flatnonzero(run.kind == KIND_CODE["image"])
        assert run.tokens[at] >= anthropic_image_tokens(*sizes[0][1:]) > 800


def test_cline_prompt_with_an_image_follows_the_log(o200k_runs):
    """cline-xray-opus46 sends a 1,680 x 862 screenshot at request 51 (its last truncation): counted as its
    placeholder the replayed prompt was 1.6% and 1.5% short at requests 51 and 52, now within 0.3%."""
    (run,) = [r for rid, r in o200k_runs.items() if rid.startswith("cline-xray-opus46")]
    cols, _ = simulate_run(run, make_policy("recorded"), None, Budget(200_000))
    errors = cols["prompt_tokens"][51:53] / run.rec_prompt[51:53] - 1
    assert run.rec_prompt[51:53].tolist() == [80_769, 96_226]
    assert np.abs(errors).max() < 0.003, errors
