"""Helpers for the gRPC door of a real ``smserve serve``: its process tree (which processes
hold gRPC) and raw sockets that misbehave as a client can."""

from __future__ import annotations

import os
import socket
from pathlib import Path

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
INFER_PATH = b"/inference.GRPCInferenceService/ModelInfer"


def children(pid: int) -> list[int]:
    """The live processes whose parent is ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def command(pid: int) -> str:
    return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode()


def holds_grpc(pid: int) -> bool:
    """Whether grpcio's native library is mapped into ``pid``."""
    return "cygrpc" in (Path("/proc") / str(pid) / "maps").read_text()


def gunicorn_tree(supervisor: int) -> tuple[int, list[int]]:
    """(the gunicorn master, its workers) under the supervisor ``smserve serve``."""
    (master,) = [pid for pid in children(supervisor) if "nginx" not in command(pid)]
    return master, children(master)


def _frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
    return (
        len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload
    )


def _header(name: bytes, value: bytes) -> bytes:
    """HPACK: a literal header field without indexing, new name, no Huffman coding."""
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


def stalled_call(port: int) -> socket.socket:
    """A connection that opens a ModelInfer call and sends 8 bytes of a 1000-byte message,
    then nothing (it never answers the server's pings either)."""
    headers = b"".join(
        _header(name, value)
        for name, value in (
            (b":method", b"POST"),
            (b":scheme", b"http"),
            (b":path", INFER_PATH),
            (b":authority", b"127.0.0.1"),
            (b"content-type", b"application/grpc"),
            (b"te", b"trailers"),
        )
    )
    partial = b"\x00" + (1000).to_bytes(4, "big") + b"\x0a\x05model"[:8]
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    settings = _frame(4, 0, 0, b"")
    sock.sendall(PREFACE + settings + _frame(1, 4, 1, headers) + _frame(0, 0, 1, partial))
    return sock


def garbage(port: int, data: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(data)
    return sock


def closed_within(sock: socket.socket, timeout_s: float) -> bool:
    """Whether the server closes ``sock`` within ``timeout_s`` (whatever it sends first)."""
    sock.settimeout(timeout_s)
    try:
        while sock.recv(65536):
            pass
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True
    return True


def pids_alive(pids: list[int]) -> bool:
    return all(os.path.exists(f"/proc/{pid}") for pid in pids)
