"""Re-encode oversized inline images so a retry fits the provider's limit (R-2.3).

When a provider rejects a request because an image is too large (Anthropic: 5 MB per image),
the agent loop calls :func:`shrink_request_images` on the request it sent and retries.
Every ``data:image/...;base64`` part larger than the limit is decoded, scaled down step by
step and re-encoded (JPEG, or PNG when it has transparency) until its base64 form fits.
Images given by URL and images already within the limit are left as they are.  Only the
request is changed: images are turn-scoped and never stored (R-2.2).
"""

from __future__ import annotations

import base64
import binascii
import copy
import io
import re
from collections.abc import Sequence

from hermes_host.models import Message

__all__ = [
    "ANTHROPIC_MAX_IMAGE_BYTES",
    "ImageError",
    "shrink_data_url",
    "shrink_request_images",
]

ANTHROPIC_MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""Anthropic's per-image limit, applied to the base64 payload to be safe."""

_DATA_URL = re.compile(r"^data:(image/[\w.+-]+);base64,(.*)$", re.S)
_SCALE_STEP = 0.75
_MAX_ROUNDS = 20


class ImageError(ValueError):
    """An inline image cannot be decoded or brought under the limit."""


def shrink_data_url(url: str, max_bytes: int = ANTHROPIC_MAX_IMAGE_BYTES) -> str:
    """``url`` itself when its base64 payload is within ``max_bytes``, else a smaller
    re-encoding that is.  Raises :class:`ImageError` for a malformed or undecodable image."""
    match = _DATA_URL.match(url)
    if match is None:
        raise ImageError("not a data:image/...;base64 URL")
    if len(match.group(2)) <= max_bytes:
        return url
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError:  # pragma: no cover - Pillow is a dependency
        raise ImageError("Pillow is not installed; cannot re-encode images") from None
    try:
        raw = base64.b64decode(match.group(2), validate=True)
    except (binascii.Error, ValueError):
        raise ImageError("the base64 payload is malformed") from None
    try:
        opened = Image.open(io.BytesIO(raw))
        opened.load()
    except (UnidentifiedImageError, OSError) as exc:
        raise ImageError(f"cannot decode the image: {exc}") from None
    transparent = opened.mode in ("RGBA", "LA") or "transparency" in opened.info
    image = opened.convert("RGBA" if transparent else "RGB")
    fmt, mime = ("PNG", "image/png") if transparent else ("JPEG", "image/jpeg")
    width, height = image.size
    scale = 1.0
    for _ in range(_MAX_ROUNDS):
        size = (max(1, int(width * scale)), max(1, int(height * scale)))
        frame = image if size == image.size else image.resize(size, Image.Resampling.LANCZOS)
        buffer = io.BytesIO()
        if fmt == "JPEG":
            frame.save(buffer, fmt, quality=85, optimize=True)
        else:
            frame.save(buffer, fmt, optimize=True)
        encoded = base64.b64encode(buffer.getvalue()).decode("ascii")
        if len(encoded) <= max_bytes:
            return f"data:{mime};base64,{encoded}"
        scale *= _SCALE_STEP
    raise ImageError(f"could not bring the image under {max_bytes} bytes")


def shrink_request_images(
    messages: Sequence[Message], max_bytes: int = ANTHROPIC_MAX_IMAGE_BYTES
) -> tuple[list[Message], int]:
    """A copy of ``messages`` with every oversized inline image re-encoded; returns the copy
    and how many images were changed."""
    out = [copy.deepcopy(m) for m in messages]
    changed = 0
    for message in out:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "image_url":
                continue
            holder = part.get("image_url")
            url = holder.get("url") if isinstance(holder, dict) else holder
            if not isinstance(url, str) or not url.startswith("data:image/"):
                continue
            smaller = shrink_data_url(url, max_bytes)
            if smaller != url:
                if isinstance(holder, dict):
                    holder["url"] = smaller
                else:
                    part["image_url"] = smaller
                changed += 1
    return out, changed
