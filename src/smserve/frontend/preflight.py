"""Checks that make a front end that cannot work fail at once, with its cause, instead of
serving 502 forever.

Each raises FrontEndError with a message that says what is wrong and what to change:

* ``check_port``: the port is free (both front ends bind it);
* ``check_socket_path``: the run directory is short enough for unix sockets (108 bytes);
* ``check_config``: ``nginx -t`` accepts the rendered configuration (its own error quoted);
* ``check_reachable``: nginx's workers, which drop to ``nobody`` when nginx starts as root,
  can connect to the sockets nginx proxies to. The check connects as that user from a
  forked child, so it sees what nginx will see (permissions of every directory above the
  socket, and anything else the kernel refuses), and names the first directory that user may
  not traverse.
"""

from __future__ import annotations

import errno
import grp
import os
import pwd
import socket
import stat
import subprocess
from collections.abc import Sequence
from pathlib import Path

from smserve.errors import FrontEndError

SUN_PATH_MAX = 107  # bytes of a unix socket path (sun_path holds 108, with the final NUL)
NGINX_TEST_TIMEOUT_S = 30
_EXIT_FAILED = 255  # the child could not even try


def check_port(port: int) -> None:
    """Raises FrontEndError when ``port`` cannot be bound (another process listens there)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("0.0.0.0", port))
        except OSError as exc:
            raise FrontEndError(
                f"cannot listen on port {port} (SAGEMAKER_BIND_TO_PORT): {exc.strerror}; "
                "is another server running on it?"
            ) from None


def check_socket_path(path: Path) -> None:
    if len(os.fsencode(path)) > SUN_PATH_MAX:
        raise FrontEndError(
            f"the socket path {path} is longer than a unix socket allows ({SUN_PATH_MAX} "
            "bytes): set SMSERVE_RUNTIME_DIR to a shorter directory"
        )


def check_config(nginx: str, config: Path) -> None:
    """Raises FrontEndError quoting nginx when ``nginx -t`` refuses ``config``."""
    command = [nginx, "-t", "-q", "-c", str(config), "-e", "stderr"]
    try:
        tested = subprocess.run(
            command, capture_output=True, text=True, timeout=NGINX_TEST_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise FrontEndError(f"cannot run {nginx}: {exc}") from None
    if tested.returncode != 0:
        said = " ".join(tested.stderr.split())[-2000:] or f"exit status {tested.returncode}"
        raise FrontEndError(f"nginx ({nginx}) refuses its configuration {config}: {said}")


def check_reachable(sockets: Sequence[Path], user: tuple[str, str] | None) -> None:
    """Raises FrontEndError when ``user`` (nginx's workers; None: this process's user, which
    can) cannot connect to one of ``sockets``."""
    if user is None:
        return
    uid, gid = pwd.getpwnam(user[0]).pw_uid, grp.getgrnam(user[1]).gr_gid
    for path in sockets:
        code = _connect_as(uid, gid, path)
        if code != 0:
            raise FrontEndError(_unreachable(path, code, user, uid, gid))


def _connect_as(uid: int, gid: int, path: Path) -> int:
    """0 when a process of ``uid``/``gid`` can connect to ``path``, else the errno."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child's status is the result
        code = _EXIT_FAILED
        try:
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
                probe.connect(str(path))
            code = 0
        except OSError as exc:
            code = (exc.errno or _EXIT_FAILED) & 0xFF
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _unreachable(path: Path, code: int, user: tuple[str, str], uid: int, gid: int) -> str:
    reason = os.strerror(code) if code != _EXIT_FAILED else "the check could not run"
    said = (
        f"nginx's workers run as {user[0]}:{user[1]} (nginx drops to it when started as root) "
        f"and cannot connect to {path}: {reason}"
    )
    blocking = _untraversable(path.parent, uid, gid) if code == errno.EACCES else None
    if blocking is None:
        return f"{said}; set SMSERVE_RUNTIME_DIR to a directory every user may traverse"
    mode = stat.S_IMODE(blocking.stat().st_mode)
    return (
        f"{said}: {blocking} (mode {mode:04o}, owner {_owner(blocking)}) does not let "
        f"{user[0]} traverse it. Set SMSERVE_RUNTIME_DIR to a directory every user may "
        "traverse (chmod o+x on it and each directory above it), such as /tmp"
    )


def _untraversable(directory: Path, uid: int, gid: int) -> Path | None:
    """The first directory from / down to ``directory`` that ``uid``/``gid`` may not search."""
    for candidate in [*reversed(directory.parents), directory]:
        info = candidate.stat()
        if info.st_uid == uid:
            allowed = info.st_mode & stat.S_IXUSR
        elif info.st_gid == gid:
            allowed = info.st_mode & stat.S_IXGRP
        else:
            allowed = info.st_mode & stat.S_IXOTH
        if not allowed:
            return candidate
    return None


def _owner(path: Path) -> str:
    try:
        return pwd.getpwuid(path.stat().st_uid).pw_name
    except KeyError:
        return str(path.stat().st_uid)
