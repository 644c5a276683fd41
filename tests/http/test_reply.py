"""``http.reply.write``: the one function that writes every answer, headers in one order."""

from __future__ import annotations

from typing import Any

import pytest

from smserve.doors import DoorReply
from smserve.failures import Failure
from smserve.http.reply import failure_reply, status_line, write
from smserve.media import JSON


def _written(reply: DoorReply, method: str = "POST") -> tuple[str, list[tuple[str, str]], bytes]:
    started: list[Any] = []
    body = write(reply, lambda status, headers: started.append((status, headers)), method)
    return started[0][0], started[0][1], b"".join(body)


def test_a_success_has_its_type_length_headers_then_its_version() -> None:
    reply = DoorReply(200, b"{}", JSON, (("X-A", "1"),), version=3)
    assert _written(reply) == (
        "200 OK",
        [("Content-Type", JSON), ("Content-Length", "2"), ("X-A", "1"), ("X-Model-Version", "3")],
        b"{}",
    )


def test_an_error_names_no_version_and_an_empty_reply_no_type() -> None:
    assert _written(DoorReply(404, b"x", JSON, version=3))[1] == [
        ("Content-Type", JSON),
        ("Content-Length", "1"),
    ]
    assert _written(DoorReply(200, b"", None)) == ("200 OK", [("Content-Length", "0")], b"")


def test_a_204_has_no_length_and_a_head_no_body() -> None:
    assert _written(DoorReply(204, b"", None)) == ("204 No Content", [], b"")
    assert _written(DoorReply(200, b"abc", JSON), "HEAD") == (
        "200 OK",
        [("Content-Type", JSON), ("Content-Length", "3")],
        b"",
    )


@pytest.mark.parametrize(("status", "line"), [(413, "413 "), (599, "599 Error"), (299, "299 S")])
def test_every_status_has_a_line(status: int, line: str) -> None:
    assert status_line(status).startswith(line)


def test_a_failure_is_in_the_default_envelope() -> None:
    reply = failure_reply(Failure(405, "no"), (("Allow", "GET"),))
    assert (reply.status, reply.body, reply.headers) == (
        405,
        b'{"error": "no", "message": "no"}',
        (("Allow", "GET"),),
    )
