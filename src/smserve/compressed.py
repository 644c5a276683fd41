"""Compressed request bodies (``Content-Encoding: gzip`` or ``deflate``), inflated up to a
limit on the inflated size: the one implementation every door uses (which encodings a door
accepts, and how it reads the header, is the door's own rule).

The inflated body is bounded before it exists: zlib stops at the limit, so a small bomb
cannot cost the worker memory."""

from __future__ import annotations

import zlib
from collections.abc import Mapping

from smserve.errors import DecodeError, PayloadTooLarge

WBITS: Mapping[str, int] = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
DEFAULT_SETTING = "SAGEMAKER_MAX_PAYLOAD_IN_MB"


def inflate(body: bytes, coding: str, limit: int, setting: str = DEFAULT_SETTING) -> bytes:
    """``body`` inflated from ``coding`` (a key of WBITS); raises PayloadTooLarge past
    ``limit`` inflated bytes (which ``setting`` raises), DecodeError for corrupt data."""
    inflater = zlib.decompressobj(WBITS[coding])
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
