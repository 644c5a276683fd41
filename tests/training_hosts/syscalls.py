"""Every ``bind`` and ``connect`` a host's processes make, as strace records them: a complete
record (no sampling can miss a socket that lived for a millisecond), taken with seccomp so
that only those two calls stop the traced process."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

_CALL = re.compile(r"^\d+\s+(bind|connect)\(\d+, \{sa_family=(AF_INET6?),(.*)$")
_PORT = re.compile(r"sin6?_port=htons\((\d+)\)")
_IPV4 = re.compile(r'inet_addr\("([^"]+)"\)')
_IPV6 = re.compile(r'inet_pton\(AF_INET6, "([^"]+)"')


@dataclass(frozen=True)
class SocketCall:
    """One bind (``address`` is the local end) or connect (``address`` is the peer)."""

    call: str
    address: str
    port: int


def traced(command: list[str], record: Path, calls: str = "bind,connect") -> list[str]:
    """``command`` run under strace, its ``calls`` (binds and connects unless told) written to
    ``record``."""
    strace = shutil.which("strace")
    if strace is None:
        pytest.fail("strace is needed to record every socket of a job (./run-tests installs it)")
    return [
        strace, "-f", "-qq", "--seccomp-bpf", "-e", f"trace={calls}", "-e", "signal=none",
        "-o", str(record), *command,
    ]  # fmt: skip


def socket_calls(record: Path) -> list[SocketCall]:
    """The IPv4 and IPv6 binds and connects in ``record`` (other families are left out)."""
    calls = []
    for line in record.read_text(encoding="utf-8").splitlines():
        match = _CALL.match(line)
        if match is None:
            continue
        call, family, rest = match.groups()
        address = (_IPV4 if family == "AF_INET" else _IPV6).search(rest)
        port = _PORT.search(rest)
        assert address, f"an unparsed {call}: {line}"
        assert port, f"an unparsed {call}: {line}"
        calls.append(SocketCall(call, address.group(1), int(port.group(1))))
    return calls
