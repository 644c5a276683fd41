"""Request bodies sent with ``Content-Encoding: gzip``, inflated as TF Serving inflates them
(it does so whenever the header mentions gzip), up to a limit on the inflated size."""

from __future__ import annotations

import zlib

from smserve.errors import DecodeError, PayloadTooLarge

_GZIP = 16 + zlib.MAX_WBITS


def is_gzip(content_encoding: str | None) -> bool:
    return content_encoding is not None and "gzip" in content_encoding.lower()


def inflate(body: bytes, limit: int, setting: str = "SAGEMAKER_MAX_PAYLOAD_IN_MB") -> bytes:
    """The inflated body; raises PayloadTooLarge past ``limit`` bytes (which ``setting``
    raises), DecodeError if it is not gzip data. zlib stops at the limit: no more is made."""
    inflater = zlib.decompressobj(_GZIP)
    try:
        data = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise DecodeError(f"Content-Encoding gzip: the body is not gzip data ({exc})") from None
    if len(data) > limit:
        raise PayloadTooLarge(f"the gzip body inflates past the {limit}-byte limit ({setting})")
    if not inflater.eof:
        raise DecodeError("Content-Encoding gzip: the body is truncated")
    return data
