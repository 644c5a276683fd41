"""Request bodies sent with ``Content-Encoding: gzip``: TF Serving inflates them whenever the
header mentions gzip (``smserve.compressed`` inflates, up to a limit on the inflated size)."""

from __future__ import annotations


def is_gzip(content_encoding: str | None) -> bool:
    return content_encoding is not None and "gzip" in content_encoding.lower()
