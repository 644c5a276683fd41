"""The upstream worker's own guards, on a worker built as gunicorn's master builds one (no
fork): a failing accept backs off instead of spinning, and an error serving one connection is
logged without ending the thread that met it."""

from __future__ import annotations

import errno
import os
import select
import time
from collections.abc import Iterator
from typing import Any

import pytest
from gunicorn.config import Config

from smserve.http.upstream.worker import UpstreamWorker


class Log:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def __getattr__(self, level: str) -> Any:
        return lambda message, *args, **kwargs: self.lines.append((level, message % args))


class FailingListener:
    def __init__(self, error: OSError) -> None:
        self.error = error

    def accept(self) -> Any:
        raise self.error

    def fileno(self) -> int:
        return 1_000_000  # never registered: re-arming it fails quietly


@pytest.fixture
def worker() -> Iterator[UpstreamWorker]:
    built = UpstreamWorker(0, os.getpid(), [], None, 30, Config(), Log())
    built.epoll = select.epoll()
    yield built
    built.epoll.close()
    built.tmp.close()


def test_an_accept_that_fails_for_want_of_files_backs_off(worker: UpstreamWorker) -> None:
    started = time.monotonic()
    worker._accept(FailingListener(OSError(errno.EMFILE, "Too many open files")))  # type: ignore[arg-type]
    assert time.monotonic() - started >= 0.1
    assert worker.log.lines == [
        ("warning", "cannot accept a connection from nginx: [Errno 24] Too many open files")
    ]


def test_a_connection_another_worker_accepted_is_no_error(worker: UpstreamWorker) -> None:
    worker._accept(FailingListener(BlockingIOError(errno.EAGAIN, "again")))  # type: ignore[arg-type]
    assert worker.log.lines == []


def test_an_error_serving_a_connection_is_logged_and_the_thread_goes_on(
    worker: UpstreamWorker, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(fd: int) -> None:
        raise RuntimeError("unexpected")

    monkeypatch.setattr(worker, "_serve", broken)
    worker._handle_event(7, None)
    assert worker.log.lines == [("exception", "error serving an upstream connection")]
