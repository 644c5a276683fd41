"""gunicorn's configuration from Settings (no server started), the native thread caps, and
the forked-child call the master uses to load models."""

from __future__ import annotations

import gc
import os
import signal
from pathlib import Path
from types import SimpleNamespace

import pytest

from smserve.config import Settings
from smserve.errors import ModelLoadError, StartupError
from smserve.frontend.nginx import UPSTREAM_IDLE_S
from smserve.http import deaths
from smserve.http.accounting import AccessLog
from smserve.http.draining import BodyDrain
from smserve.http.process import (
    M_ARENA_MAX,
    M_MMAP_THRESHOLD,
    M_TRIM_THRESHOLD,
    THREAD_VARIABLES,
    call_in_child,
    limit_native_threads,
    malloc_settings,
    native_thread_limits,
)
from smserve.http.server import ServingApplication, gunicorn_options

# Python 3.12+ warns when forking a process that has threads (numpy's BLAS pool does).
pytestmark = pytest.mark.filterwarnings("ignore:.*multi-threaded.*fork:DeprecationWarning")


def test_gunicorn_options_come_from_settings() -> None:
    settings = Settings(port=9000, workers=3, threads=4, timeout_s=70, keep_alive_s=5)
    options = gunicorn_options(settings.replace(graceful_timeout_s=12, log_level="warning"))
    assert options["bind"] == ["0.0.0.0:9000"]
    assert (options["workers"], options["threads"]) == (3, 4)
    assert options["worker_class"] == "smserve.http.worker.JsonErrorWorker"
    assert (options["timeout"], options["keepalive"], options["graceful_timeout"]) == (70, 5, 12)
    assert (options["loglevel"], options["accesslog"]) == ("warning", None)
    assert options["preload_app"] is False


def test_at_debug_our_access_line_replaces_gunicorn_s() -> None:
    assert gunicorn_options(Settings(log_level="debug"))["accesslog"] is None
    app = ServingApplication(Settings(log_level="debug"), app_factory=lambda: _wsgi_app)
    try:
        loaded = app.load()
        assert isinstance(loaded, BodyDrain)
        assert isinstance(loaded.app, AccessLog)
        plain = ServingApplication(Settings(), app_factory=lambda: _wsgi_app).load()
        assert plain.app is _wsgi_app
    finally:
        gc.unfreeze()


def test_the_master_counts_worker_exits(tmp_path: Path) -> None:
    hook = gunicorn_options(Settings(runtime_dir=tmp_path))["child_exit"]
    assert callable(hook)
    master, worker = SimpleNamespace(LISTENERS=["socket"]), SimpleNamespace(pid=12345)
    hook(master, worker)
    hook(master, worker)
    assert '"worker_restarts": 2' in (tmp_path / "metrics" / "master.json").read_text()
    assert "child_exit" not in gunicorn_options(Settings())


def _wsgi_app(environ: object, start_response: object) -> list[bytes]:
    return []


def test_gunicorn_accepts_every_option() -> None:
    app = ServingApplication(Settings(port=9001, workers=2), app_factory=lambda: _wsgi_app)
    assert app.cfg.worker_class_str == "smserve.http.worker.JsonErrorWorker"
    assert (app.cfg.workers, app.cfg.address) == (2, [("0.0.0.0", 9001)])
    assert app.cfg.control_socket_disable is True
    try:
        loaded = app.load()  # the factory, called only in a worker, behind the body drain
        # what the worker holds once loaded is left out of the collector's full passes
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
    assert isinstance(loaded, BodyDrain)
    assert loaded.app is _wsgi_app


def test_behind_nginx_gunicorn_listens_on_the_unix_socket() -> None:
    app = ServingApplication(Settings(keep_alive_s=5), lambda: _wsgi_app, bind="unix:/tmp/x.sock")
    assert app.cfg.address == ["/tmp/x.sock"]
    assert app.cfg.keepalive > UPSTREAM_IDLE_S  # outlives nginx's idle upstream connections
    assert (app.cfg.limit_request_line, app.cfg.limit_request_field_size) == (0, 0)


@pytest.mark.parametrize(
    ("workers", "threads", "cpus", "share"),
    [(1, 1, 8, "8"), (4, 1, 8, "2"), (2, 2, 8, "2"), (8, 1, 8, "1"), (16, 4, 8, "1")],
)
def test_native_threads_share_the_cpus(workers: int, threads: int, cpus: int, share: str) -> None:
    limits = native_thread_limits(Settings(workers=workers, threads=threads), cpus)
    assert set(limits) == set(THREAD_VARIABLES)
    assert set(limits.values()) == {share}


def test_user_thread_settings_win() -> None:
    environ = {"OMP_NUM_THREADS": "3"}
    limit_native_threads(Settings(workers=2), environ, cpu_count=8)
    assert environ["OMP_NUM_THREADS"] == "3"
    assert environ["OPENBLAS_NUM_THREADS"] == "4"


def test_malloc_is_tuned_where_the_user_has_not_tuned_it() -> None:
    every = {M_MMAP_THRESHOLD: 32 << 20, M_TRIM_THRESHOLD: 64 << 20, M_ARENA_MAX: 1}
    assert dict(malloc_settings({})) == every
    arenas_set = dict(malloc_settings({"MALLOC_ARENA_MAX": "4"}))
    assert arenas_set == {M_MMAP_THRESHOLD: 32 << 20, M_TRIM_THRESHOLD: 64 << 20}
    assert malloc_settings({"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"}) == []
    assert dict(malloc_settings({"GLIBC_TUNABLES": "glibc.pthread.rseq=0"})) == every


def _fails_to_load(path: str) -> None:
    raise ModelLoadError(f"{path}: not a model")


def _dies(status: int) -> None:
    os._exit(status)


def test_call_in_child_returns_when_the_child_succeeds() -> None:
    call_in_child(len, "fine")


def test_call_in_child_raises_the_childs_startup_error() -> None:
    with pytest.raises(ModelLoadError, match="/m/xgboost-model: not a model"):
        call_in_child(_fails_to_load, "/m/xgboost-model")


def test_call_in_child_reports_a_child_that_died() -> None:
    with pytest.raises(StartupError, match=r"_dies failed \(exit status 5\)"):
        call_in_child(_dies, 5)


def test_a_child_killed_by_sigkill_is_not_blamed_on_the_oom_killer_when_it_was_not() -> None:
    with pytest.raises(StartupError, match=r"_killed was killed \(SIGKILL\)") as failed:
        call_in_child(_killed)
    if deaths.oom_kills() is not None:  # the cgroup counts OOM kills: none happened
        assert "not by the out-of-memory killer" in str(failed.value)


def _killed() -> None:
    os.kill(os.getpid(), signal.SIGKILL)  # what the out-of-memory killer does, or kill -9


def test_a_child_that_crashes_is_reported_as_a_crash_with_its_signal() -> None:
    with pytest.raises(StartupError, match=r"_crashes crashed with SIGSEGV \(signal 11\)"):
        call_in_child(_crashes)


def _crashes() -> None:
    os.kill(os.getpid(), signal.SIGSEGV)  # what XGBoost does on some invalid models
