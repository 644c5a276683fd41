"""The start-up checks, each against the real thing: a port another socket holds, real nginx
refusing a configuration, and a real connect as nginx's worker user (as root)."""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from smserve.config import Settings
from smserve.errors import FrontEndError
from smserve.frontend import preflight
from smserve.frontend.nginx import ProxyLayout, find_nginx, worker_user, write_config

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="nginx drops to nobody only as root")


def test_a_port_in_use_is_named() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(FrontEndError, match=f"cannot listen on port {port}.*in use"):
            preflight.check_port(port)
    preflight.check_port(port)  # free again


def test_a_socket_path_too_long_is_refused(tmp_path: Path) -> None:
    preflight.check_socket_path(tmp_path / "gunicorn.sock")
    with pytest.raises(FrontEndError, match="SMSERVE_RUNTIME_DIR to a shorter directory"):
        preflight.check_socket_path(tmp_path / ("d" * 100) / "gunicorn.sock")


def test_nginx_refusing_the_configuration_is_quoted(tmp_path: Path) -> None:
    nginx = find_nginx(Settings())
    assert nginx is not None, "./run-tests installs nginx"
    config = write_config(Settings(port=18081), ProxyLayout(tmp_path))
    preflight.check_config(nginx, config)
    config.write_text(config.read_text().replace("tcp_nodelay on;", "tcp_nodelay maybe;"))
    with pytest.raises(FrontEndError, match='refuses its configuration.*"tcp_nodelay"'):
        preflight.check_config(nginx, config)


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory every user may traverse (pytest's own temp directories are 0700)."""
    path = Path(tempfile.mkdtemp(prefix="smserve-test-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


@root_only
def test_a_directory_nobody_may_not_traverse_is_named(open_dir: Path) -> None:
    private = open_dir / "private"
    private.mkdir(mode=0o700)
    sock_path = private / "run" / "gunicorn.sock"
    sock_path.parent.mkdir(mode=0o711)
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(sock_path))
        sock_path.chmod(0o777)
        listener.listen()
        with pytest.raises(FrontEndError) as raised:
            preflight.check_reachable([sock_path], worker_user(as_root=True))
        assert "Permission denied" in str(raised.value)
        assert f"{private} (mode 0700, owner root) does not let nobody traverse it" in str(
            raised.value
        )
        private.chmod(0o711)
        preflight.check_reachable([sock_path], worker_user(as_root=True))


def test_not_as_root_there_is_no_other_user_to_check(tmp_path: Path) -> None:
    preflight.check_reachable([tmp_path / "absent.sock"], None)


def test_find_nginx_honours_smserve_nginx(tmp_path: Path) -> None:
    from smserve.errors import ConfigError

    with pytest.raises(ConfigError, match="SMSERVE_NGINX=.*not an executable"):
        find_nginx(Settings(nginx=tmp_path / "nginx"))
    script = tmp_path / "nginx"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    assert find_nginx(Settings(nginx=script)) == str(script)
