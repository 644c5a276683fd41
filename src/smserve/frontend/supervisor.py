"""Run gunicorn (on a unix socket) and nginx (on the port) side by side, as one server.

* Start: ``preflight`` checks the socket paths and ``nginx -t``. The gunicorn master is forked
  first (``serve_upstream`` returns when gunicorn stops); once its socket accepts and nginx's
  workers can connect to it, nginx starts, and this process answers ``/ping`` and the metrics
  page on a socket of its own (``sidecar``): 200 once a probe has gone through nginx to a
  worker and back (``probe``). Both children die with this process (PR_SET_PDEATHSIG).
* A front end that cannot work (a failed check, a probe nginx answers 502) stops both children
  and raises FrontEndError (exit 2); unless gunicorn halts: a worker failed to start.
* Failure: when either child exits, the other is stopped and ``run`` returns a non-zero status.
* SIGTERM/SIGINT: nginx quits gracefully (SIGQUIT: in-flight requests finish, at most
  ``graceful_timeout_s``), then gunicorn gets SIGTERM and drains the rest. Whatever still runs
  ``graceful_timeout_s + 3`` s after the signal is killed, inside SageMaker's 30 s."""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from types import FrameType
from typing import NoReturn

from smserve.config import Settings
from smserve.errors import FrontEndError
from smserve.frontend import preflight, probe
from smserve.frontend.nginx import ProxyLayout, find_nginx, worker_user, write_config
from smserve.frontend.sidecar import Sidecar
from smserve.metrics import processes

logger = logging.getLogger(__name__)

SOCKET_WAIT_S = 60.0
KILL_MARGIN_S = 3
HALT_WAIT_S = 5.0  # for gunicorn to exit when a check fails because it halted
_PR_SET_PDEATHSIG = 1


def run_proxied(
    settings: Settings,
    serve_upstream: Callable[[str], int],
    start_failure: Callable[[], str | None] = lambda: None,
) -> int:
    """Serve ``settings.port`` (``settings.runtime_dir`` prepared) through nginx;
    ``serve_upstream(bind)`` runs gunicorn there; ``start_failure()`` says why a worker failed
    to start (None: none did). Returns the exit status; raises FrontEndError when the front
    end cannot work (after stopping what started)."""
    layout, nginx, config = _prepared(settings)
    group = Supervisor(settings.graceful_timeout_s, start_failure)
    group.install_signal_handlers()
    group.upstream = _fork(lambda: serve_upstream(f"unix:{layout.upstream_socket}"))
    sidecar = Sidecar(layout.sidecar_socket, settings.metrics_path, layout.run_dir / "metrics")
    if not group.wait_for_upstream(layout):
        return group.stop_after_failure("gunicorn")
    sockets = (layout.upstream_socket, layout.sidecar_socket)
    if not group.check(lambda: preflight.check_reachable(sockets, worker_user(os.geteuid() == 0))):
        return group.stop_after_failure("gunicorn")
    group.proxy = _fork(lambda: _exec_nginx(nginx, str(config)), own_group=True)
    sidecar.start(group.roles)
    return group.serve(settings.port, layout, sidecar)


def _prepared(settings: Settings) -> tuple[ProxyLayout, str, Path]:
    """The run directory's layout, the nginx executable, and its configuration, checked."""
    assert settings.runtime_dir is not None
    layout = ProxyLayout(settings.runtime_dir)
    nginx = find_nginx(settings)
    if nginx is None:
        raise FrontEndError("nginx is not installed (apt-get install nginx-light)")
    for path in (layout.upstream_socket, layout.sidecar_socket):
        preflight.check_socket_path(path)
    config = write_config(settings, layout)
    preflight.check_config(nginx, config)
    return layout, nginx, config


@dataclass
class Supervisor:
    """The two children, and what happens when either ends or a stop signal arrives."""

    graceful_timeout_s: int
    start_failure: Callable[[], str | None] = lambda: None
    upstream: int | None = None
    proxy: int | None = None
    stopping: bool = False  # a stop has begun (a signal, or a child's failure)
    failed: int | None = None  # the status to exit with once a child failed
    statuses: dict[int, int] = field(default_factory=dict)

    def install_signal_handlers(self) -> None:
        signal.signal(signal.SIGTERM, self._on_stop_signal)
        signal.signal(signal.SIGINT, self._on_stop_signal)
        signal.signal(signal.SIGALRM, self._on_deadline)

    def wait(self) -> int:
        """Reap children until both are gone; the server's exit status."""
        while self._alive():
            pid, status = os.waitpid(-1, 0)
            self._reaped(pid, os.waitstatus_to_exitcode(status))
        self._kill_proxy_group()
        return 0 if self.failed is None else self.failed

    def _kill_proxy_group(self) -> None:
        """nginx's workers outlive a killed master: end whatever is left of its group."""
        if self.proxy is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proxy, signal.SIGKILL)

    def wait_for_upstream(self, layout: ProxyLayout) -> bool:
        """True once gunicorn accepts on its socket; False if it exits or a stop came first."""
        deadline = time.monotonic() + SOCKET_WAIT_S
        while time.monotonic() < deadline and not self.stopping:
            if self._exited(self.upstream):
                return False
            if _accepts(layout):
                return True
            time.sleep(0.02)
        return False

    def stop_after_failure(self, name: str) -> int:
        """Stop what runs after ``name`` failed to start (or a stop signal came first)."""
        if not self.stopping:
            pid = self.proxy if name == "nginx" else self.upstream
            status = self.statuses.get(pid or -1)
            said = "" if status is None else f" (exit status {status})"
            logger.error("%s did not start%s; stopping the server", name, said)
            self.failed = status or 1
        self._begin_stop()
        return self.wait()

    def check(self, preflight_check: Callable[[], None]) -> bool:
        """True when the check passes; False when it failed because gunicorn is halting (a
        worker failed to boot); else the children are stopped and its FrontEndError raised."""
        try:
            preflight_check()
        except FrontEndError as exc:
            if self._halting():
                return False
            self.abort(exc)
        return True

    def _halting(self) -> bool:
        deadline = time.monotonic() + HALT_WAIT_S
        while self.start_failure() is None and not self._exited(self.upstream):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def abort(self, error: FrontEndError) -> NoReturn:
        """Stop both children, then raise ``error``."""
        logger.error("%s; stopping the server", error)
        self.failed = 1
        self._begin_stop()
        self.wait()
        raise error

    def serve(self, port: int, layout: ProxyLayout, sidecar: Sidecar) -> int:
        """Once nginx carries requests, /ping says so; then run until both children end."""
        failed = self.await_proxy(port, layout)
        if failed is not None:
            return failed
        sidecar.ready.set()
        logger.info("listening on port %d through nginx (upstream gunicorn)", port)
        return self.wait()

    def await_proxy(self, port: int, layout: ProxyLayout) -> int | None:
        """None once nginx carries a request to a worker and back; else the exit status to
        return (a child exited, a stop came first). A 502 aborts, unless gunicorn halts."""
        status = probe.through_nginx(port, self._starting)
        if status == HTTPStatus.BAD_GATEWAY and self._halting():
            status = None  # gunicorn closed its socket as it halted: a worker failed to start
        elif status == HTTPStatus.BAD_GATEWAY:
            self.abort(
                FrontEndError(
                    f"nginx answers 502 to a request for the workers although gunicorn's "
                    f"socket {layout.upstream_socket} accepts connections: nginx cannot use "
                    "it (its error above says why)"
                )
            )
        if status is not None:
            return None
        if self.stopping:
            return self.wait()
        name = "nginx" if self.proxy in self.statuses else "gunicorn"
        return self.stop_after_failure(name)

    def roles(self) -> dict[str, list[int]]:
        """The server's processes by role, for the metrics page."""
        found = {"supervisor": [os.getpid()]}
        if self.proxy is not None:
            found["nginx"] = processes.tree(self.proxy)
        if self.upstream is not None:
            found["gunicorn_master"] = [self.upstream]
            found["worker"] = processes.children(self.upstream)
        return found

    def _starting(self) -> bool:
        return not (self.stopping or self._exited(self.upstream) or self._exited(self.proxy))

    def _alive(self) -> bool:
        return any(pid is not None and pid not in self.statuses for pid in self._children())

    def _children(self) -> tuple[int | None, int | None]:
        return (self.proxy, self.upstream)

    def _reaped(self, pid: int, status: int) -> None:
        if pid not in self._children():
            return  # not ours (a grandchild re-parented here when we run as PID 1)
        self.statuses[pid] = status
        name = "nginx" if pid == self.proxy else "gunicorn"
        if not self.stopping:
            logger.error("%s exited unexpectedly (status %d); stopping the server", name, status)
            self.failed = status or 1
            self._begin_stop()
        elif pid == self.proxy:  # nginx has drained: now gunicorn
            self._signal(self.upstream, signal.SIGTERM)

    def _on_stop_signal(self, signum: int, frame: FrameType | None) -> None:
        logger.info("signal %d: draining nginx, then gunicorn", signum)
        self._begin_stop()

    def _begin_stop(self) -> None:
        if self.stopping:
            return
        self.stopping = True
        signal.alarm(self.graceful_timeout_s + KILL_MARGIN_S)
        if self.proxy is not None and self.proxy not in self.statuses:
            self._signal(self.proxy, signal.SIGQUIT)
        else:
            self._signal(self.upstream, signal.SIGTERM)

    def _on_deadline(self, signum: int, frame: FrameType | None) -> None:
        logger.error("still running %d s after the stop began; killing", self.graceful_timeout_s)
        for pid in self._children():
            self._signal(pid, signal.SIGKILL)

    def _signal(self, pid: int | None, signum: int) -> None:
        if pid is not None and pid not in self.statuses:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)

    def _exited(self, pid: int | None) -> bool:
        if pid is None or pid in self.statuses:
            return True
        reaped, status = os.waitpid(pid, os.WNOHANG)
        if reaped:
            self.statuses[pid] = os.waitstatus_to_exitcode(status)
        return bool(reaped)


def _accepts(layout: ProxyLayout) -> bool:
    if not layout.upstream_socket.exists():
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        try:
            probe.connect(str(layout.upstream_socket))
        except OSError:
            return False
    return True


def _fork(child: Callable[[], int], own_group: bool = False) -> int:
    """Fork; the child dies with this process, runs ``child`` and exits with its status.

    ``own_group``: the child leads a process group of its own (nginx, so that its workers can
    be killed with it when its master dies)."""
    pid = os.fork()
    if pid:
        return pid
    status = 1
    try:
        if own_group:
            os.setpgid(0, 0)
        _die_with_parent()
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGALRM):
            signal.signal(signum, signal.SIG_DFL)
        status = child()
    except BaseException:
        logger.exception("child process failed")
    finally:
        os._exit(status)


def _exec_nginx(nginx: str, config: str) -> int:
    os.execv(nginx, [nginx, "-c", config, "-e", "stderr"])


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):  # not Linux: the supervisor's own stop still applies
        pass
