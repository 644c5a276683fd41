"""Run gunicorn (on a unix socket) and nginx (on the port) side by side, as one server.

* Start: the gunicorn master is forked first (it runs ``serve_upstream``, which never returns
  until gunicorn stops); once its socket accepts connections, nginx starts. Both children die
  with this process (PR_SET_PDEATHSIG), so a killed supervisor leaves no orphan listening.
* Failure: when either child exits on its own, the other is stopped and ``run`` returns a
  non-zero status (the child's own, or 1), so the container exits and its platform restarts it.
* SIGTERM/SIGINT: nginx is asked to quit gracefully (SIGQUIT: stop accepting, finish every
  in-flight request, at most ``graceful_timeout_s``); once it has gone, gunicorn gets SIGTERM
  and drains the rest. Whatever still runs ``graceful_timeout_s + 3`` seconds after the signal
  is killed, inside SageMaker's 30 s.
"""

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
from types import FrameType

from smserve.config import Settings
from smserve.errors import StartupError
from smserve.frontend.nginx import ProxyLayout, find_nginx, write_config

logger = logging.getLogger(__name__)

SOCKET_WAIT_S = 60.0
KILL_MARGIN_S = 3
_PR_SET_PDEATHSIG = 1


def run_proxied(settings: Settings, serve_upstream: Callable[[str], int]) -> int:
    """Serve ``settings.port`` through nginx; ``serve_upstream(bind)`` runs gunicorn there.

    ``settings.runtime_dir`` must be a prepared run directory. Returns the exit status.
    """
    assert settings.runtime_dir is not None
    layout = ProxyLayout(settings.runtime_dir)
    nginx = find_nginx()
    if nginx is None:
        raise StartupError("nginx is not installed")
    config = write_config(settings, layout)
    group = Supervisor(settings.graceful_timeout_s)
    group.install_signal_handlers()
    group.upstream = _fork(lambda: serve_upstream(f"unix:{layout.upstream_socket}"))
    if not group.wait_for_upstream(layout):
        return group.stop_after_failure("gunicorn")
    group.proxy = _fork(lambda: _exec_nginx(nginx, str(config)), own_group=True)
    logger.info("listening on port %d through nginx (upstream gunicorn)", settings.port)
    return group.wait()


@dataclass
class Supervisor:
    """The two children, and what happens when either ends or a stop signal arrives."""

    graceful_timeout_s: int
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
            logger.error("%s did not start; stopping the server", name)
            self.failed = self.statuses.get(self.upstream or -1) or 1
        self._begin_stop()
        return self.wait()

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
