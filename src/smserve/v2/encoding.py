"""Compressed request bodies (``Content-Encoding: gzip`` or ``deflate``, what tritonclient's
``request_compression_algorithm`` sends and Triton accepts), inflated up to the payload limit.
The inflated body is bounded before it exists: a small bomb cannot cost the worker memory."""

from __future__ import annotations

import zlib
from collections.abc import Mapping

from smserve.errors import DecodeError, PayloadTooLarge, UnsupportedMediaType

_WBITS: Mapping[str, int] = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}


def decoded_body(
    body: bytes,
    content_encoding: str | None,
    limit: int,
    setting: str = "SAGEMAKER_MAX_PAYLOAD_IN_MB",
) -> bytes:
    """``body`` as sent before compression; raises UnsupportedMediaType for another encoding,
    PayloadTooLarge past ``limit`` inflated bytes (which ``setting`` raises), DecodeError for
    corrupt data."""
    coding = (content_encoding or "identity").strip().lower()
    if coding == "identity" or not body:
        return body
    wbits = _WBITS.get(coding)
    if wbits is None:
        raise UnsupportedMediaType(
            f"Content-Encoding {content_encoding!r} is not supported: send gzip, deflate or "
            "an uncompressed body"
        )
    return _inflate(body, coding, wbits, limit, setting)


def _inflate(body: bytes, coding: str, wbits: int, limit: int, setting: str) -> bytes:
    inflater = zlib.decompressobj(wbits)
    try:
        data = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise DecodeError(
            f"Content-Encoding {coding}: the body is not {coding} data ({exc})"
        ) from None
    if len(data) > limit:
        raise PayloadTooLarge(
            f"the {coding} body inflates past the {limit}-byte limit; send fewer rows per "
            f"request or raise {setting}"
        )
    if not inflater.eof:
        raise DecodeError(f"Content-Encoding {coding}: the body is truncated")
    return data
