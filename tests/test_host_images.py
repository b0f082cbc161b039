"""Oversized inline images are re-encoded so the retry fits the provider limit (R-2.3)."""

from __future__ import annotations

import base64
import io
import os

import pytest
from PIL import Image

from hermes_host.images import ImageError, shrink_data_url, shrink_request_images


def _noise_png(width: int, height: int, mode: str = "RGB") -> str:
    channels = len(mode)
    image = Image.frombytes(mode, (width, height), os.urandom(width * height * channels))
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _decode(url: str) -> Image.Image:
    payload = url.split(",", 1)[1]
    image = Image.open(io.BytesIO(base64.b64decode(payload)))
    image.load()
    return image


def test_oversized_image_is_reencoded_under_the_limit() -> None:
    big = _noise_png(900, 700)  # random noise does not compress: ~2.5 MB of base64
    limit = 400_000
    assert len(big) > limit
    request = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": big}},
        ]},
    ]
    smaller, changed = shrink_request_images(request, max_bytes=limit)
    assert changed == 1
    url = smaller[1]["content"][1]["image_url"]["url"]
    assert url.startswith("data:image/jpeg;base64,")
    assert len(url.split(",", 1)[1]) <= limit
    image = _decode(url)
    assert image.size[0] < 900 and image.size[0] / image.size[1] == pytest.approx(900 / 700, 0.02)
    assert request[1]["content"][1]["image_url"]["url"] == big  # the input is untouched


def test_transparency_kept_as_png_and_small_images_untouched() -> None:
    rgba = _noise_png(300, 300, "RGBA")
    shrunk = shrink_data_url(rgba, max_bytes=100_000)
    assert shrunk.startswith("data:image/png;base64,")
    assert _decode(shrunk).mode == "RGBA"
    small = _noise_png(10, 10)
    assert shrink_data_url(small, max_bytes=100_000) == small
    request = [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "https://example.invalid/cat.png"}}
    ]}]
    assert shrink_request_images(request, max_bytes=10) == (request, 0)


def test_malformed_images_raise_clear_errors() -> None:
    with pytest.raises(ImageError, match="malformed"):
        shrink_data_url("data:image/png;base64," + "!" * 50, max_bytes=10)
    with pytest.raises(ImageError, match="cannot decode"):
        junk = base64.b64encode(b"not an image" * 10).decode()
        shrink_data_url("data:image/png;base64," + junk, max_bytes=10)
    with pytest.raises(ImageError, match="not a data:image"):
        shrink_data_url("https://example.invalid/x.png")
