"""A front end that cannot work makes the real ``smserve serve`` exit non-zero within seconds,
naming the cause, instead of answering 502 forever: nginx's workers unable to reach the
sockets, the port taken (both front ends), nginx refusing its configuration, nginx missing or
dying at start, and a run directory too long for gunicorn's socket."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from smserve.config import Settings
from smserve.frontend.nginx import find_nginx
from tests.process.servers import free_port, run_cli, server_env

pytestmark = pytest.mark.process

WITHIN_S = 45  # the model check and gunicorn's start included, on two busy cores


def serve(model_dir: Path, extra: dict[str, str], port: int | None = None) -> tuple[int, str]:
    """Run ``smserve serve`` until it exits by itself; (status, stderr). Fails past WITHIN_S."""
    env = server_env(port or free_port(), {"SM_MODEL_DIR": str(model_dir), **extra})
    started = time.monotonic()
    result = run_cli(["serve"], env, timeout_s=WITHIN_S)
    assert time.monotonic() - started < WITHIN_S
    return result.returncode, result.stderr


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


@pytest.mark.skipif(os.geteuid() != 0, reason="nginx's workers drop to nobody only as root")
def test_a_run_directory_nginx_s_workers_cannot_traverse(
    xgb_model_dir: Path, tmp_path: Path
) -> None:
    # pytest's temp directories are 0700: nobody cannot reach a socket below them
    status, stderr = serve(xgb_model_dir, {"SMSERVE_RUNTIME_DIR": str(tmp_path)})
    assert status != 0
    assert "smserve: cannot start: nginx's workers run as nobody" in stderr
    assert "Permission denied" in stderr
    assert "does not let nobody traverse it" in stderr
    assert "SMSERVE_RUNTIME_DIR" in stderr


@pytest.mark.parametrize("frontend", ["nginx", "gunicorn"])
def test_a_port_in_use(xgb_model_dir: Path, taken_port: int, frontend: str) -> None:
    status, stderr = serve(xgb_model_dir, {"SMSERVE_FRONTEND": frontend}, port=taken_port)
    assert status == 2
    assert f"smserve: cannot start: cannot listen on port {taken_port}" in stderr
    assert "Address already in use" in stderr


def test_nginx_refusing_its_configuration(xgb_model_dir: Path, tmp_path: Path) -> None:
    real = find_nginx(Settings())
    assert real is not None, "./run-tests installs nginx"
    wrapper = tmp_path / "nginx"  # the real nginx, given one directive it does not know
    wrapper.write_text(f"#!/bin/sh\nexec {real} -g 'no_such_directive on;' \"$@\"\n")
    wrapper.chmod(0o755)
    status, stderr = serve(xgb_model_dir, {"SMSERVE_NGINX": str(wrapper)})
    assert status == 2
    assert "smserve: cannot start: nginx" in stderr
    assert 'unknown directive "no_such_directive"' in stderr


def test_nginx_dying_as_it_starts(xgb_model_dir: Path, tmp_path: Path) -> None:
    real = find_nginx(Settings())
    wrapper = tmp_path / "nginx"  # passes the configuration test, then cannot run
    wrapper.write_text(
        f'#!/bin/sh\ncase " $* " in *" -t "*) exec {real} "$@";; esac\n'
        "echo 'nginx: [emerg] cannot start' >&2\nexit 1\n"
    )
    wrapper.chmod(0o755)
    status, stderr = serve(xgb_model_dir, {"SMSERVE_NGINX": str(wrapper)})
    assert status == 1
    assert "nginx did not start (exit status 1)" in stderr


def test_nginx_missing(xgb_model_dir: Path, tmp_path: Path) -> None:
    status, stderr = serve(xgb_model_dir, {"SMSERVE_NGINX": str(tmp_path / "no-nginx")})
    assert status == 2
    assert f"smserve: invalid configuration: SMSERVE_NGINX={tmp_path / 'no-nginx'}" in stderr


def test_a_run_directory_too_long_for_gunicorn_s_socket(
    xgb_model_dir: Path, tmp_path: Path
) -> None:
    deep = tmp_path / ("d" * 100)
    status, stderr = serve(xgb_model_dir, {"SMSERVE_RUNTIME_DIR": str(deep)})
    assert status == 2
    assert "longer than a unix socket allows" in stderr
