"""Compressed request bodies (``Content-Encoding: gzip`` or ``deflate``, what tritonclient's
``request_compression_algorithm`` sends and Triton accepts), inflated up to the payload limit
by ``smserve.compressed``; any other encoding is refused."""

from __future__ import annotations

from smserve.compressed import DEFAULT_SETTING, WBITS, inflate
from smserve.errors import UnsupportedMediaType


def decoded_body(
    body: bytes, content_encoding: str | None, limit: int, setting: str = DEFAULT_SETTING
) -> bytes:
    """``body`` as sent before compression; raises UnsupportedMediaType for another encoding,
    PayloadTooLarge past ``limit`` inflated bytes (which ``setting`` raises), DecodeError for
    corrupt data."""
    coding = (content_encoding or "identity").strip().lower()
    if coding == "identity" or not body:
        return body
    if coding not in WBITS:
        raise UnsupportedMediaType(
            f"Content-Encoding {content_encoding!r} is not supported: send gzip, deflate or "
            "an uncompressed body"
        )
    return inflate(body, coding, limit, setting)
