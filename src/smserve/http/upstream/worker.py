"""``UpstreamWorker``: gunicorn's process model, with a request loop for nginx's connections.

Threads. ``threads`` serving threads wait on one epoll set holding the listening socket and every
connection, each registered ``EPOLLONESHOT``: an event wakes one thread, which serves that
connection (the request, and any already buffered behind it) and then re-arms it. A request is
read, answered and followed by its connection's next wait on the same thread; a slow request
holds one thread, never the others. The main thread keeps gunicorn's heartbeat, takes the
signals, and closes connections idle past the keep-alive (nginx closes its idle upstream
connections sooner, so this only reaps a peer that is not nginx).

Stop (SIGTERM; nginx has stopped first, see ``frontend.supervisor``). The listening socket
leaves the epoll set; requests in flight finish, within the graceful timeout, their answers
saying ``Connection: close``; then the idle connections close and the worker's other listeners
(gRPC) are waited for, as with the gthread worker.

Errors. A head the worker cannot take is answered 400 in the default door's envelope and the
connection closes; an error the app lets escape (the dispatcher answers every error, so none
should) is answered 500 when nothing of the answer was sent, and the connection closes.
"""

from __future__ import annotations

import os
import select
import socket
import threading
import time
from http import HTTPStatus
from typing import Any

from gunicorn.workers.base import Worker

from smserve.http import listeners
from smserve.http.upstream import wire
from smserve.http.upstream.exchange import AnswerCut, Connection, Next, serve_next
from smserve.http.worker import error_bytes

_ARMED = select.EPOLLIN | select.EPOLLONESHOT
_TICK_S = 1.0
_ACCEPT_BACKOFF_S = 0.1  # after accept fails for want of files: not a busy loop


class UpstreamWorker(Worker):  # type: ignore[misc]  # gunicorn is untyped
    """A gunicorn worker for connections from nginx (see the package)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.alive: bool = True
        self.stopping = listeners.Stopping()
        self.connections: dict[int, Connection] = {}
        self.lock = threading.Lock()
        self.in_flight = 0
        self.closing = False  # the serving threads end
        self.epoll: Any = None
        self.shared: dict[str, Any] = {}

    def init_process(self) -> None:
        self.epoll = select.epoll()
        self.shared = wire.constants(multiprocess=self.cfg.workers > 1)
        super().init_process()  # loads the app, then calls run()

    def handle_exit(self, sig: int, frame: Any) -> None:
        """SIGTERM: the other listeners stop taking requests too, while HTTP drains."""
        self.stopping.begin(self.app.listeners)
        super().handle_exit(sig, frame)

    def run(self) -> None:
        for listener in self.sockets:
            listener.setblocking(False)
            self.epoll.register(listener.fileno(), _ARMED)
        threads = [self._thread(n) for n in range(max(1, self.cfg.threads))]
        while self.alive and self.ppid == os.getppid():
            self._tick()
        self._drain()
        self.closing = True
        for thread in threads:
            thread.join(_TICK_S + 1)
        self.epoll.close()
        self.stopping.wait(self.app.listeners, self.cfg.graceful_timeout, self.log)

    def _thread(self, number: int) -> threading.Thread:
        thread = threading.Thread(target=self._serve_events, name=f"smserve-http-{number}")
        thread.daemon = True
        thread.start()
        return thread

    def _tick(self) -> None:
        """Heartbeat, then wait up to a second (a signal ends the wait), then reap idle peers."""
        self.notify()
        readable, _, _ = select.select([self.PIPE[0]], [], [], _TICK_S)
        if readable:  # gunicorn's wakeup pipe: a signal came
            os.read(self.PIPE[0], 4096)
        self._reap_idle(time.monotonic() - self.cfg.keepalive)

    def _drain(self) -> None:
        """Stop accepting; let the requests in flight finish within the graceful timeout."""
        for listener in self.sockets:
            self._forget(listener.fileno())
        deadline = time.monotonic() + self.cfg.graceful_timeout
        while self.in_flight and time.monotonic() < deadline:
            self.notify()
            time.sleep(0.05)
        self._reap_idle(float("inf"))
        for listener in self.sockets:
            listener.close()

    def _serve_events(self) -> None:
        listening = {listener.fileno(): listener for listener in self.sockets}
        while not self.closing:
            try:
                events = self.epoll.poll(_TICK_S, 1)
            except (OSError, ValueError):  # closed as the worker ends
                return
            for fd, _ in events:
                self._handle_event(fd, listening.get(fd))

    def _handle_event(self, fd: int, listener: socket.socket | None) -> None:
        """One event; a failure is logged, never the end of this thread (a worker whose
        threads had all ended would keep its heartbeat and serve nothing)."""
        try:
            if listener is not None:
                self._accept(listener)
            else:
                self._serve(fd)
        except Exception:
            self.log.exception("error serving an upstream connection")

    def _accept(self, listener: socket.socket) -> None:
        try:
            sock, _ = listener.accept()
        except BlockingIOError:  # another worker took it
            sock = None
        except OSError as exc:  # out of files or memory: let it ease before trying again
            self.log.warning("cannot accept a connection from nginx: %s", exc)
            time.sleep(_ACCEPT_BACKOFF_S)
            sock = None
        finally:
            if self.alive:
                self._rearm(listener.fileno())
        if sock is None:
            return
        fd = sock.fileno()
        self.connections[fd] = Connection(sock, self.cfg.timeout)
        # Registered unarmed, then served at once: nginx sends its request right after it
        # connects, and a second trip through the ready list would put this request behind
        # every request that became ready meanwhile. Nothing there yet: it is armed then.
        self.epoll.register(fd, select.EPOLLONESHOT)
        self._serve(fd)

    def _serve(self, fd: int) -> None:
        conn = self._claim(fd)
        if conn is None:
            return
        outcome = Next.CLOSE
        try:
            outcome = self._answer_all(conn)
        finally:
            self._release(fd, conn, outcome)

    def _answer_all(self, conn: Connection) -> Next:
        """Answer every request ``conn`` has ready; how the connection carries on."""
        outcome = Next.KEEP
        while outcome is Next.KEEP:
            outcome = self._answer_one(conn)
            if outcome is Next.KEEP and not conn.buffer:
                return Next.WAIT
        return outcome

    def _answer_one(self, conn: Connection) -> Next:
        stop = not self.alive
        try:
            outcome = serve_next(conn, self.wsgi, self.shared, stop)
        except wire.HeadError as exc:
            self.log.warning("invalid request from the front end: %s", exc)
            self._send_error(conn, HTTPStatus.BAD_REQUEST, f"malformed HTTP request: {exc}")
            return Next.CLOSE
        except OSError:
            self.log.debug("an upstream connection failed", exc_info=True)
            return Next.CLOSE
        except AnswerCut:
            self.log.exception("error writing an answer: its connection closes")
            return Next.CLOSE
        except Exception:
            self.log.exception("error handling a request")
            self._send_error(conn, HTTPStatus.INTERNAL_SERVER_ERROR, "internal server error")
            return Next.CLOSE
        return self._count(outcome)

    def _count(self, outcome: Next) -> Next:
        if outcome is Next.KEEP:
            self.nr += 1
            if self.nr >= self.max_requests and self.alive:
                self.log.info("Autorestarting worker after current request.")
                self.alive = False
        return outcome

    def _send_error(self, conn: Connection, status: HTTPStatus, message: str) -> None:
        try:
            conn.sock.sendall(error_bytes(status, message))
        except OSError:
            self.log.debug("could not send an error answer")

    def _claim(self, fd: int) -> Connection | None:
        with self.lock:
            conn = self.connections.get(fd)
            if conn is None or conn.busy:
                return None
            conn.busy = True
            self.in_flight += 1
            return conn

    def _release(self, fd: int, conn: Connection, outcome: Next) -> None:
        with self.lock:
            conn.busy = False
            conn.idle_since = time.monotonic()
            self.in_flight -= 1
            if outcome is Next.CLOSE:
                self._close(fd, conn)
        if outcome is not Next.CLOSE:
            self._rearm(fd)

    def _reap_idle(self, since: float) -> None:
        with self.lock:
            for fd, conn in list(self.connections.items()):
                if not conn.busy and conn.idle_since < since:
                    self._close(fd, conn)

    def _close(self, fd: int, conn: Connection) -> None:
        """Forget and close ``conn`` (the lock is held)."""
        if self.connections.get(fd) is conn:
            del self.connections[fd]
            self._forget(fd)
        conn.sock.close()

    def _forget(self, fd: int) -> None:
        try:
            self.epoll.unregister(fd)
        except (OSError, ValueError):
            pass

    def _rearm(self, fd: int) -> None:
        try:
            self.epoll.modify(fd, _ARMED)
        except (OSError, ValueError):  # closed meanwhile (a stop, an idle reap)
            pass
