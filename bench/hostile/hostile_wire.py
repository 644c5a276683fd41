"""What hostile.py needs to talk to a server and watch it: raw HTTP/1.1 over a socket (so a
request can say anything, and answers are read exactly as sent), and the memory of every
process in the server's tree from /proc (VmRSS, and VmHWM reset before each case)."""

from __future__ import annotations

import contextlib
import json
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.shared.proxied import children

PROC = Path("/proc")
MB = 1_000_000


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def envelope(self) -> bool:
        """An error answer in JSON with an ``error`` member (every door's envelope)."""
        if self.status < 400:
            return True
        if not self.headers.get("content-type", "").startswith("application/json"):
            return False
        with contextlib.suppress(ValueError):
            document = json.loads(self.body)
            return isinstance(document, dict) and isinstance(document.get("error"), str)
        return False

    @property
    def message(self) -> str:
        with contextlib.suppress(ValueError, AttributeError):
            return str(json.loads(self.body).get("error", ""))
        return self.body[:120].decode("utf-8", "replace")


def request(
    method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> bytes:
    """An HTTP/1.1 request's bytes, with a Content-Length unless ``headers`` frame it."""
    fields = {"Host": "localhost", **(headers or {})}
    if "Transfer-Encoding" not in fields and "Content-Length" not in fields:
        fields["Content-Length"] = str(len(body))
    lines = [f"{method} {path} HTTP/1.1", *(f"{k}: {v}" for k, v in fields.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def exchange(port: int, data: bytes, answers: int = 1, timeout_s: float = 15.0) -> list[Answer]:
    """Send ``data`` on a new connection and read up to ``answers`` answers."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        with contextlib.suppress(ConnectionError):  # the server may answer and close early
            sock.sendall(data)
        reader = sock.makefile("rb")
        found = []
        for _ in range(answers):
            answer = read_answer(reader)
            if answer is None:
                break
            found.append(answer)
        return found


def read_answer(reader: object) -> Answer | None:
    """One answer from a socket file; None when the connection closed before one began."""
    readline = reader.readline  # type: ignore[attr-defined]
    status_line = readline(65536)
    if not status_line:
        return None
    status = int(status_line.split()[1])
    headers: dict[str, str] = {}
    while (line := readline(65536)) not in (b"\r\n", b"\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    bodiless = status in (204, 304) or status < 200  # RFC 9112 6.3: no body, whatever follows
    return Answer(status, headers, b"" if bodiless else _body(reader, headers))


def _body(reader: object, headers: dict[str, str]) -> bytes:
    read, readline = reader.read, reader.readline  # type: ignore[attr-defined]
    if "content-length" in headers:
        return bytes(read(int(headers["content-length"])))
    if headers.get("transfer-encoding", "").lower() == "chunked":
        parts = []
        while (size := int(readline(65536).split(b";")[0], 16)) > 0:
            parts.append(read(size))
            readline(65536)
        readline(65536)
        return b"".join(parts)
    return bytes(read())


@dataclass
class Tree:
    """The server's processes: nginx's and the gunicorn workers (children of the gunicorn
    master, which is the supervisor's Python child)."""

    root: int
    nginx: list[int] = field(default_factory=list)
    workers: list[int] = field(default_factory=list)

    @classmethod
    def of(cls, root: int) -> Tree:
        tree = cls(root)
        for child in children(root):
            if _comm(child) == "nginx":
                tree.nginx = [child, *children(child)]
            else:
                tree.workers = children(child)
        return tree

    @property
    def pids(self) -> list[int]:
        return [*self.nginx, *self.workers]

    def reset_peaks(self) -> dict[int, int]:
        """Set every process's VmHWM to its VmRSS; the RSS of each, in bytes."""
        for pid in self.pids:
            with contextlib.suppress(OSError):
                (PROC / str(pid) / "clear_refs").write_text("5")
        return {pid: _status(pid, "VmRSS") for pid in self.pids}

    def growth(self, before: dict[int, int]) -> tuple[int, int]:
        """(the largest worker's, nginx's total) peak growth since ``before``, in bytes."""
        grown = {pid: _status(pid, "VmHWM") - rss for pid, rss in before.items()}
        worker = max((grown[pid] for pid in self.workers if pid in grown), default=0)
        nginx = sum(max(0, grown[pid]) for pid in self.nginx if pid in grown)
        return worker, nginx


def _comm(pid: int) -> str:
    with contextlib.suppress(OSError):
        return (PROC / str(pid) / "comm").read_text().strip()
    return ""


def _status(pid: int, key: str) -> int:
    """A /proc/<pid>/status figure in bytes (0 when the process has gone)."""
    with contextlib.suppress(OSError):
        for line in (PROC / str(pid) / "status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def timed(call: object) -> tuple[object, float]:
    start = time.monotonic()
    result = call()  # type: ignore[operator]
    return result, time.monotonic() - start
