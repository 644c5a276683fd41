"""The serving process: gunicorn configured from Settings, with the model loaded in each worker.

Worker model. Behind nginx, ``http.upstream``'s worker: nginx is its only peer and has read each
request whole, so its request threads (``settings.threads``) each take the next ready connection
from one epoll set and answer on it directly. gunicorn alone faces clients, so it keeps ``gthread``
workers (``http.worker``), which park idle keep-alive connections in a selector and hand requests
to a pool of ``settings.threads`` threads (a sync worker would close every connection after one
response). Each worker process builds its own app and InferenceService in
``load()`` (no preload), as the built-in XGBoost container does: no booster or OpenMP state
crosses a fork, and a worker only accepts connections once its model is loaded, so /ping is 200
as soon as a worker answers.

Start-up. The model is loaded once, by each worker as it boots; never by the master (loading
runs OpenMP code, after which the master could not fork: see http/process.py). A worker that
cannot load it reports why and the master halts (``http.boot``); ``run()`` then raises that
StartupError (the CLI prints it and exits 2), so a bad model never yields a server answering
503 or respawning workers forever. A worker that fails to boot for any other reason exits with
gunicorn's boot-error status, and the master halts with it (status 3).

Shutdown. SIGTERM makes gunicorn stop accepting, let in-flight requests finish within
``graceful_timeout_s`` and exit 0 (SageMaker sends SIGKILL 30 s after SIGTERM).

Access log. Off unless the log level is ``debug``: one log line per request costs time on the
hot path, and SageMaker records invocations itself. At debug, ``accounting.AccessLog`` writes
one line per request (with the caller's inference id and the model that answered) instead of
gunicorn's access log. Errors are always logged.

Worker restarts. The master counts every worker that exits (gunicorn's ``child_exit`` hook)
in the metrics directory, for ``smserve_worker_restarts_total``.

Front end. With nginx installed (or SMSERVE_FRONTEND=nginx), gunicorn listens on a unix socket in
the run directory and nginx on the port, run side by side by ``frontend.supervisor``; without
it, gunicorn listens on the port itself (see ``smserve.frontend``). Behind nginx, gunicorn's
header limits are lifted (nginx enforces its own, and answers them in JSON) and its keep-alive
outlives nginx's idle upstream connections.

Note that with either worker, gunicorn's ``timeout`` guards the worker's main thread, not the length
of a request: a slow prediction is bounded by the platform's invocation timeout, not by gunicorn."""

from __future__ import annotations

import functools
import gc
import os
from collections.abc import Callable
from typing import Any

from gunicorn.app.base import BaseApplication
from gunicorn.errors import HaltServer

from smserve import door_table, frontend
from smserve.config import Settings
from smserve.doors import Listener
from smserve.errors import StartupError
from smserve.frontend import nginx, preflight, supervisor
from smserve.http import boot, listeners
from smserve.http.accounting import AccessLog
from smserve.http.app import create_app
from smserve.http.draining import BodyDrain
from smserve.metrics import count_worker_exit
from smserve.repository import runtime

WSGIApp = Callable[..., Any]
AppFactory = Callable[[], WSGIApp]

GTHREAD_WORKER = "smserve.http.worker.JsonErrorWorker"  # gthread, JSON parse errors
UPSTREAM_WORKER = "smserve.http.upstream.worker.UpstreamWorker"  # nginx's connections only

# gunicorn's default heartbeat files live in /tmp, which is a slow overlay in containers.
_SHM = "/dev/shm"


def gunicorn_options(settings: Settings, bind: str | None = None) -> dict[str, object]:
    """gunicorn settings (by their config-file names) for ``settings``; ``bind`` is a unix
    socket (``unix:PATH``) behind nginx, else None: the port, for gunicorn alone."""
    options = _common_options(settings)
    if bind is None:
        return {**options, "bind": [f"{settings.bind_host}:{settings.port}"]}
    return {**options, **_behind_proxy(settings), "bind": [bind]}


def _behind_proxy(settings: Settings) -> dict[str, object]:
    return {
        "worker_class": UPSTREAM_WORKER,
        "keepalive": max(settings.keep_alive_s, nginx.UPSTREAM_IDLE_S + 15),
        "limit_request_line": 0,  # 0: unlimited; nginx answers 414 itself
        "limit_request_field_size": 0,
        "limit_request_fields": 32768,
    }


def _common_options(settings: Settings) -> dict[str, object]:
    return {
        "workers": settings.workers,
        "worker_class": GTHREAD_WORKER,
        "threads": settings.threads,
        "timeout": settings.timeout_s,
        "keepalive": settings.keep_alive_s,
        "graceful_timeout": settings.graceful_timeout_s,
        "loglevel": settings.log_level,
        "accesslog": None,  # at debug, AccessLog's line instead
        "errorlog": "-",
        "preload_app": False,
        "proc_name": "smserve",
        # The control socket is a management thread plus a file under $HOME; not needed here.
        "control_socket_disable": True,
        "worker_tmp_dir": _SHM if os.path.isdir(_SHM) else None,
        **_restart_counter(settings),
    }


def _restart_counter(settings: Settings) -> dict[str, object]:
    """gunicorn's ``child_exit`` hook (in the master): counts worker exits for the metrics and
    halts the server when a worker died loading the model (``boot.died_loading``)."""
    run_dir = settings.runtime_dir
    if run_dir is None:
        return {}

    def child_exit(arbiter: Any, worker: Any) -> None:
        try:
            (run_dir / "metrics").mkdir(exist_ok=True)
            count_worker_exit(run_dir / "metrics")
        except OSError:  # the run directory is going away: the server is stopping
            return
        # gunicorn empties LISTENERS first when it stops: a worker killed then is no failure.
        boot.died_loading(run_dir, worker.pid, stopping=not arbiter.LISTENERS)

    return {"child_exit": child_exit}


class ServingApplication(BaseApplication):  # type: ignore[misc]  # gunicorn is untyped
    """gunicorn without its command line: options come from Settings, the app from a factory
    called once in each worker (by default: ``create_app(settings)``, which loads the model)."""

    def __init__(
        self, settings: Settings, app_factory: AppFactory | None = None, bind: str | None = None
    ) -> None:
        self._options = gunicorn_options(settings, bind)
        self._settings = settings
        self._payload_limit = settings.max_payload_bytes
        self._factory: AppFactory = app_factory or (lambda: create_app(settings))
        self._access_log = settings.log_level == "debug"
        self.listeners: tuple[Listener, ...] = ()  # this worker's, once loaded
        super().__init__()

    def load_config(self) -> None:
        for name, value in self._options.items():
            self.cfg.set(name, value)

    def load(self) -> WSGIApp:
        wsgi = boot.load_reporting(self._factory, self._settings.runtime_dir)
        app = AccessLog(wsgi) if self._access_log else wsgi
        # Outermost: a body the app did not read is drained (or the connection closed) first.
        app = BodyDrain(app, self._payload_limit)
        self.listeners = listeners.start(self._settings, wsgi)
        # What the worker has built so far (modules, the model) lives as long as it does: out of
        # the cyclic collector's reach, a full collection scans only what requests create. (The
        # benchmark worker holds ~134,000 objects, 15-70 ms per full collection, and a request
        # with a large answer triggers one every few requests.)
        gc.freeze()
        return app


def run(settings: Settings, app_factory: AppFactory | None = None) -> int:
    """Serve until gunicorn stops; returns its exit status.

    Raises StartupError when the model cannot be loaded (ModelLoadError, or a worker killed
    while loading it), a setting is invalid or a door the settings ask for cannot run
    (ConfigError) or the front end cannot start (FrontEndError).
    """
    settings = prepare_doors(settings)
    # One run directory (multi-model registry, metrics) shared by every worker forked below.
    settings = runtime.prepare(settings)
    starter = os.getpid()
    chosen = frontend.choose(settings, nginx.find_nginx(settings))
    preflight.check_port(settings.port)  # before either binds it: a clear message, at once
    if chosen == frontend.GUNICORN:
        status = serve_gunicorn(settings, app_factory)
    else:
        upstream = functools.partial(serve_gunicorn, settings, app_factory)
        recorded = functools.partial(boot.read_failure, settings.runtime_dir)
        status = supervisor.run_proxied(settings, upstream, recorded)
    if os.getpid() != starter:  # a worker ending: gunicorn alone forks them in this call
        return status
    failure = boot.read_failure(settings.runtime_dir) if status != 0 else None
    if failure is not None:
        raise StartupError(failure)
    return status


def prepare_doors(settings: Settings) -> Settings:
    """``settings`` after every door's ``prepare`` (``DoorSpec``), in the table's order."""
    for door in door_table.DOORS:
        if door.prepare is not None:
            settings = door.prepare(settings)
    return settings


def serve_gunicorn(
    settings: Settings, app_factory: AppFactory | None = None, bind: str | None = None
) -> int:
    """Run the gunicorn master until it stops; its exit status."""
    try:
        ServingApplication(settings, app_factory, bind).run()
    except SystemExit as stop:
        # gunicorn ends its master (and each forked worker) with sys.exit(status).
        return _exit_status(stop.code)
    except HaltServer as halt:
        # gunicorn halting for one worker's boot error reaps the others in ``stop()``, and a
        # second worker that failed to boot too raises HaltServer again, out of Arbiter.run
        # (seen with 2 workers and a bad model config: a traceback, and exit 1 instead of 2).
        return int(halt.exit_status)
    return 0


def _exit_status(code: object) -> int:
    if code is None:
        return 0
    return code if isinstance(code, int) else 1
