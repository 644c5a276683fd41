"""What fuzz.py does to valid requests: body mutations (bit flips, truncation, duplication,
huge numbers, inf/nan, unicode, random bytes, delimiters) and odd header values."""

from __future__ import annotations

import random
import re
from collections.abc import Callable

import numpy as np

CSV, JSON, JSONL = "text/csv", "application/json", "application/jsonlines"
RECORDIO, LIBSVM = "application/x-recordio-protobuf", "text/libsvm"
NPY = "application/x-npy"
BODY_TYPES = (CSV, JSON, JSONL, RECORDIO, LIBSVM, NPY)
ACCEPTS = (CSV, JSON, JSONL, RECORDIO, NPY, "*/*", "application/json;verbose=True",
           "text/csv; label_size=0", "text/csv;q=0.5, application/json;q=0.9", "image/png",
           "", "*/*;q=0", ";;;,,", "application/*", "text/libsvm", "application/x-parquet",
           "application/json, */*;q=0.1", ", ".join(["text/plain;q=0.1"] * 200))  # fmt: skip
HUGE_NUMBERS = ("1e39", "-1e39", "1e400", "-1e400", "inf", "-inf", "Infinity", "-Infinity",
                "NaN", "nan", "-0", "1e-50", "99999999999999999999999999", "0x10", "1_0",
                "", "1e", "--1", ".", "null", "true", '"1"', "[]", "{}")  # fmt: skip
UNICODE = ("é", "\u202e", "😀", "\ufeff", "\x00", "\u2028", "١٢٣", "\u00a0", "𝟙")
RAW_BYTES = (b"\xed\xa0\x80", b"\xff\xfe", b"\xc0\xaf", b"\r", b"\r\n\r\n", b"\x1b[2J")
NUMBER = re.compile(rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")

Mutation = Callable[[random.Random, bytes], bytes]


def _flip(r: random.Random, body: bytes) -> bytes:
    if not body:
        return body
    out = bytearray(body)
    for _ in range(r.randint(1, 8)):
        out[r.randrange(len(out))] ^= 1 << r.randrange(8)
    return bytes(out)


def _truncate(r: random.Random, body: bytes) -> bytes:
    return body[: r.randrange(len(body) + 1)]


def _duplicate(r: random.Random, body: bytes) -> bytes:
    start = r.randrange(len(body) + 1)
    piece = body[start : start + r.randint(1, 400)]
    return body[:start] + piece * r.randint(1, 20) + body[start:]


def _number(r: random.Random, body: bytes) -> bytes:
    matches = list(NUMBER.finditer(body[:20000]))
    chosen = r.sample(matches, min(len(matches), r.randint(1, 3)))
    for match in sorted(chosen, key=lambda m: -m.start()):
        body = body[: match.start()] + r.choice(HUGE_NUMBERS).encode() + body[match.end() :]
    return body


def _binary_number(r: random.Random, body: bytes) -> bytes:
    special = np.array([np.inf, -np.inf, np.nan, 3.4e38, -3.4e38, 1e-45], dtype=np.float32)
    at = r.randrange(max(1, len(body) - 3))
    return body[:at] + special[r.randrange(len(special))].tobytes() + body[at + 4 :]


def _unicode(r: random.Random, body: bytes) -> bytes:
    at = r.randrange(len(body) + 1)
    piece = r.choice(UNICODE).encode() if r.random() < 0.7 else r.choice(RAW_BYTES)
    return body[:at] + piece + body[at:]


def _splice(r: random.Random, body: bytes) -> bytes:
    at = r.randrange(len(body) + 1)
    return body[:at] + r.randbytes(r.randint(1, 64)) + body[at + r.randint(0, 64) :]


def _delimiters(r: random.Random, body: bytes) -> bytes:
    return body.replace(
        r.choice((b",", b"\n", b":", b" ")), r.choice((b";", b"\t", b"", b",,", b"\r\n"))
    )


MUTATIONS: tuple[Mutation, ...] = (
    _flip, _truncate, _duplicate, _number, _number, _binary_number, _unicode, _splice, _delimiters,
)  # fmt: skip


def mutate(r: random.Random, body: bytes) -> bytes:
    for _ in range(r.choice((1, 1, 1, 2, 3))):
        body = r.choice(MUTATIONS)(r, body)
    return body


def content_type_value(r: random.Random, media_type: str) -> bytes | None:
    """A Content-Type for ``media_type``: as is (most often), oddly cased or parametrised,
    another type, garbage, or none at all."""
    choices = (
        media_type, media_type, media_type, media_type.upper(), f"{media_type}; charset=utf-8",
        f"{media_type};charset=latin-1", f"{media_type}; label_size=0",
        f"{media_type}; label_size=abc", f"{media_type}; ;; =x", f'{media_type}; q="open',
        "", "a/b/c", "*/*", "text/*", "image/png", "application/x-parquet",
        r.choice(BODY_TYPES), f"{media_type}; x=" + "a" * 3000, media_type + "\t",
    )  # fmt: skip
    value = r.choice(choices)
    return None if r.random() < 0.04 else value.encode()


def odd_headers(r: random.Random) -> list[tuple[bytes, bytes]]:
    """Zero or more unusual headers: huge, non-ASCII, SageMaker's own with junk, Expect..."""
    pool: list[Callable[[], tuple[bytes, bytes]]] = [
        lambda: (b"X-Huge", b"a" * r.randint(100, 7900)),
        lambda: (b"X-Amzn-SageMaker-Custom-Attributes", r.choice(_ATTRIBUTES)),
        lambda: (b"X-Amzn-SageMaker-Target-Model", r.choice((b"model", b"nope", b"../x", b""))),
        lambda: (b"Content-Encoding", r.choice((b"gzip", b"deflate", b"br", b"identity", b"x"))),
        lambda: (b"Expect", b"100-continue"),
        lambda: (b"X-Unicode", "é😀\u202e".encode()),
        lambda: (b"X_Under_Score", b"1"),
        lambda: (b"Accept-Encoding", b"gzip, br"),
        lambda: (b"Connection", r.choice((b"close", b"keep-alive", b"Upgrade, keep-alive"))),
        lambda: (b"Upgrade", b"h2c"),
        lambda: (b"X-Empty", b""),
        lambda: (b"X-Spaces", b"   a   "),
    ]
    return [r.choice(pool)() for _ in range(r.choice((0, 0, 1, 1, 2, 4)))]


_ATTRIBUTES = (b"outputs=predicted_label", b"outputs=closest_cluster,distance_to_cluster",
               b"outputs=", b"outputs=nope", b"=", b"outputs=" + b"x," * 500, b"a=b=c",
               b"outputs=contributions", b"display=1")  # fmt: skip
