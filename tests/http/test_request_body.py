"""``http.request_body``: a body within the payload limit, read in one call when its length is
known; a framed stream without one read to one byte past the limit; one that cannot be read is a
400 whose connection closes."""

from __future__ import annotations

import io
from typing import Any

import pytest
from gunicorn.http.errors import InvalidChunkSize

from smserve.errors import InvalidInput, PayloadTooLarge
from smserve.http.draining import UNREADABLE
from smserve.http.request_body import DISCONNECTED_MESSAGE, content_length, read_body


class _Counting(io.BytesIO):
    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.reads = 0

    def read(self, size: int | None = -1) -> bytes:
        self.reads += 1
        return super().read(size)


class _Failing(io.RawIOBase):
    def __init__(self, error: Exception) -> None:
        self.error = error

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        raise self.error


def _environ(stream: io.IOBase, length: int | None = None, **more: Any) -> dict[str, Any]:
    environ: dict[str, Any] = {"wsgi.input": stream, **more}
    if length is not None:
        environ["CONTENT_LENGTH"] = str(length)
    return environ


def test_a_known_length_is_read_in_one_call() -> None:
    stream = _Counting(b"1,2\n" * 4 + b"trailing")
    assert read_body(_environ(stream, 16), 16) == b"1,2\n" * 4
    assert stream.reads == 1


def test_a_length_over_the_limit_is_413_unread() -> None:
    stream = _Counting(b"x" * 17)
    with pytest.raises(PayloadTooLarge, match="exceeds the 16-byte limit"):
        read_body(_environ(stream, 17), 16)
    assert stream.reads == 0


@pytest.mark.parametrize(("size", "fits"), [(16, True), (17, False), (0, True)])
def test_a_framed_stream_without_a_length_is_read_to_one_byte_past_the_limit(
    size: int, fits: bool
) -> None:
    environ = _environ(io.BytesIO(b"y" * size), HTTP_TRANSFER_ENCODING="chunked")
    environ["wsgi.input_terminated"] = True
    if fits:
        assert read_body(environ, 16) == b"y" * size
    else:
        with pytest.raises(PayloadTooLarge):
            read_body(environ, 16)


def test_an_unframed_stream_without_a_length_has_no_body() -> None:
    assert read_body(_environ(io.BytesIO(b"abc")), 16) == b""


@pytest.mark.parametrize(
    ("stream", "terminated"),
    [
        (io.BytesIO(b"short"), False),  # the client sent less than its length
        (_Failing(ConnectionResetError("peer went away")), False),
        (_Failing(ConnectionResetError("peer went away")), True),
    ],
)
def test_a_body_that_cannot_be_read_is_400_and_closes(stream: io.IOBase, terminated: bool) -> None:
    environ = _environ(stream, None if terminated else 100)
    if terminated:
        environ["wsgi.input_terminated"] = True
    with pytest.raises(InvalidInput, match=DISCONNECTED_MESSAGE.split("(")[0]):
        read_body(environ, 1000)
    assert environ[UNREADABLE] is True


def test_a_malformed_chunked_body_is_400_and_closes() -> None:
    environ = _environ(_Failing(InvalidChunkSize(b"zz")))
    environ["wsgi.input_terminated"] = True
    with pytest.raises(InvalidInput, match="malformed chunked request body"):
        read_body(environ, 1000)
    assert environ[UNREADABLE] is True


@pytest.mark.parametrize(
    ("environ", "length"),
    [
        ({"CONTENT_LENGTH": "12"}, 12),
        ({"CONTENT_LENGTH": "12", "HTTP_TRANSFER_ENCODING": "gzip, chunked"}, None),
        ({}, None),
        ({"CONTENT_LENGTH": "-3"}, 0),
        ({"CONTENT_LENGTH": ""}, None),
    ],
)
def test_the_declared_length(environ: dict[str, Any], length: int | None) -> None:
    assert content_length(environ) == length
