"""Hostile framing for fuzz.py: Content-Length and Transfer-Encoding that disagree with the
body or with each other. Each goes on a connection of its own and asks for it to be closed
(the rest of such a body would be read as a next request), so these test that the server
answers them in JSON and that nothing else is disturbed, not keep-alive.

A body shorter than it claims is followed by a half-close, so that the server sees its end at
once (no timeout) and may close without an answer."""

from __future__ import annotations

import random

from bench.fuzz.fuzz_bodies import Bodies, chunked
from bench.fuzz.fuzz_requests import Fuzzed

BAD_LENGTHS = (b"12abc", b"-1", b"+5", b" 5", b"0x10", b"99999999999999999999", b"", b"1,1")
BAD_ENCODINGS = (b"chunked, chunked", b"gzip, chunked", b"Chunked", b"identity", b"xchunked",
                 b"chunked;q=1", b" chunked")  # fmt: skip
BAD_CHUNKS = (b"zz\r\nab\r\n0\r\n\r\n", b"ffffffffffffffffff\r\nab\r\n0\r\n\r\n",
              b"3;a=b\r\nabc\r\n0\r\n\r\n", b"3\r\nabcdef\r\n0\r\n\r\n", b"-3\r\nabc\r\n0\r\n\r\n",
              b"3\r\nabc\r\n0\r\nX-Trailer: 1\r\n\r\n", b"3\nabc\n0\n\n")  # fmt: skip


def framing(r: random.Random, bodies: Bodies) -> Fuzzed:
    body = r.choice(bodies.valid["text/csv"])
    request = Fuzzed("framing", body=body, framing="none", one_shot=True)
    request.headers = [(b"Content-Type", b"text/csv")]
    r.choice((_shorter, _longer, _both, _twice, _bad_length, _bad_encoding, _bad_chunks))(
        r, request
    )
    return request


def _shorter(r: random.Random, request: Fuzzed) -> None:
    """Content-Length under the body: the rest reads as a (malformed) next request."""
    declared = r.randrange(len(request.body))
    request.headers.append((b"Content-Length", str(declared).encode()))


def _longer(r: random.Random, request: Fuzzed) -> None:
    declared = len(request.body) + r.randint(1, 5000)
    request.headers.append((b"Content-Length", str(declared).encode()))
    request.half_close = request.may_drop = True


def _both(r: random.Random, request: Fuzzed) -> None:
    request.headers.append((b"Content-Length", str(r.randint(0, 99)).encode()))
    request.headers.append((b"Transfer-Encoding", b"chunked"))
    request.body = chunked(request.body, [r.randint(1, 100)])


def _twice(r: random.Random, request: Fuzzed) -> None:
    size = len(request.body)
    request.headers += [(b"Content-Length", str(size).encode())] * 2
    if r.random() < 0.5:
        request.headers[-1] = (b"Content-Length", str(size + 1).encode())


def _bad_length(r: random.Random, request: Fuzzed) -> None:
    request.headers.append((b"Content-Length", r.choice(BAD_LENGTHS)))
    request.half_close = request.may_drop = True


def _bad_encoding(r: random.Random, request: Fuzzed) -> None:
    request.headers.append((b"Transfer-Encoding", r.choice(BAD_ENCODINGS)))
    request.body = chunked(request.body, [])
    request.half_close = request.may_drop = True


def _bad_chunks(r: random.Random, request: Fuzzed) -> None:
    request.headers.append((b"Transfer-Encoding", b"chunked"))
    request.body = r.choice(BAD_CHUNKS) if r.random() < 0.8 else chunked(request.body, [5])[:-7]
    request.half_close = request.may_drop = True
