"""The queue bound through the real nginx: past one POST per request thread plus
SMSERVE_MAX_QUEUED_REQUESTS, nginx answers 503 with Retry-After at once, in JSON; GETs such as
/ping are never refused; the held requests still succeed."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.process.servers import Server, running_server
from tests.process.test_frontend import ROW, complete, raw, split

pytestmark = pytest.mark.process

POST_HEAD = (
    b"POST /invocations HTTP/1.1\r\nHost: t\r\nContent-Type: text/csv\r\n"
    b"Content-Length: %d\r\n\r\n" % len(ROW)
)


@pytest.fixture(scope="module")
def bounded(xgb_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    env = {
        "SM_MODEL_DIR": str(xgb_model_dir),
        "SMSERVE_FRONTEND": "nginx",
        "SMSERVE_MAX_QUEUED_REQUESTS": "1",  # 1 worker x 1 thread + 1: two POSTs in progress
    }
    with running_server(tmp_path_factory.mktemp("logs"), env) as server:
        yield server


def held_post(server: Server) -> socket.socket:
    """A POST in progress: its headers sent, its body not yet (nginx counts it from here)."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    sock.sendall(POST_HEAD)
    return sock


def test_past_the_bound_a_post_is_refused_at_once_and_the_held_ones_succeed(
    bounded: Server,
) -> None:
    held = [held_post(bounded) for _ in range(2)]
    time.sleep(0.3)  # nginx has read both requests' headers
    started = time.monotonic()
    status, headers, body = split(raw(bounded, POST_HEAD + ROW))
    assert time.monotonic() - started < 1.0
    assert (status, headers["retry-after"], headers["content-type"]) == (
        503,
        "1",
        "application/json",
    )
    assert "SMSERVE_MAX_QUEUED_REQUESTS" in json.loads(body)["message"]
    assert split(raw(bounded, b"GET /ping HTTP/1.1\r\nHost: t\r\n\r\n"))[0] == 200
    for sock in held:
        sock.sendall(ROW)
        answer = b""
        while not complete(answer) and (chunk := sock.recv(65536)):
            answer += chunk
        sock.close()
        assert split(answer)[0] == 200, answer
    assert split(raw(bounded, POST_HEAD + ROW))[0] == 200  # the slots are free again
