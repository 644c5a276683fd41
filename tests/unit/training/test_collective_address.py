"""XGBoost's collective held to one address: a real group of one (XGBoost's own tracker and
communicator), its sockets read from the kernel, and the socket options its connections set
recorded by strace."""

from __future__ import annotations

import importlib
import logging
import re
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from smserve.training.collective import Meeting, joined
from smserve.training.collective_address import held_to
from tests.training_hosts.hosts import free_port
from tests.training_hosts.syscalls import traced

ADDRESS = "127.0.0.9"


def sockets_now() -> set[tuple[str, int, str]]:
    """(local address, local port, status) of every inet socket of this process."""
    return {
        (c.laddr.ip, c.laddr.port, c.status) for c in psutil.Process().net_connections(kind="inet")
    }


def test_a_group_holds_its_listeners_and_connections_to_the_host_address() -> None:
    before = sockets_now()
    meeting = Meeting(ADDRESS, ADDRESS, free_port(ADDRESS), 0, 1, 30)
    with joined(meeting) as group:
        during = sockets_now() - before
        assert group.size == 1
    listening = {port for _, port, status in during if status == psutil.CONN_LISTEN}
    # the tracker's listener and XGBoost's error listener (its peer listener is closed once
    # the group is formed); the error listener is on the wildcard address without this
    assert meeting.port in listening, during
    assert len(listening) == 2, during
    assert {ip for ip, _, _ in during} == {ADDRESS}, during
    # leaving the group went through too: XGBoost wakes its error listener through 127.0.0.1
    # at shutdown, which now reaches it on ADDRESS, and that listener's thread closes it
    deadline = time.monotonic() + 10
    while any(s == psutil.CONN_LISTEN for _, _, s in sockets_now() - before):
        assert time.monotonic() < deadline, sockets_now() - before
        time.sleep(0.01)


_TRACED = re.compile(r"^(\d+)\s+(setsockopt|connect)\((\d+), (.*)$")


def connects_without_nodelay(record: Path) -> tuple[list[str], int]:
    """The inet connects in an strace ``record`` whose thread set no TCP_NODELAY on their socket
    since its previous connect; and how many inet connects there were."""
    since_connect: dict[str, list[str]] = {}  # per thread: the calls since its last connect
    missing, connects = [], 0
    for line in record.read_text(encoding="utf-8").splitlines():
        match = _TRACED.match(line)
        if match is None:
            continue
        thread, call, fd, rest = match.groups()
        if call == "setsockopt":
            since_connect.setdefault(thread, []).append(f"{fd} {rest}")
        elif rest.startswith("{sa_family=AF_INET"):
            connects += 1
            if f"{fd} SOL_TCP, TCP_NODELAY, [1]" not in "|".join(since_connect.get(thread, [])):
                missing.append(line)
            since_connect[thread] = []
    return missing, connects


def test_the_collectives_connections_send_without_nagles_delay(tmp_path: Path) -> None:
    # XGBoost's tracker protocol writes a length, then the message: with Nagle's algorithm the
    # message waits for the length's delayed acknowledgement (40 ms a meeting on loopback)
    record = tmp_path / "calls.strace"
    meeting = (ADDRESS, ADDRESS, free_port(ADDRESS), 0, 1, 30)
    group_of_one = (
        "from smserve.training.collective import Meeting, joined\n"
        f"with joined(Meeting(*{meeting!r})):\n    pass\n"
    )
    command = [sys.executable, "-c", group_of_one]
    subprocess.run(traced(command, record, calls="setsockopt,connect"), check=True)
    missing, connects = connects_without_nodelay(record)
    assert connects >= 3, record.read_text()  # to the tracker, again to leave, its error port
    assert missing == []


def test_an_address_of_another_machine_is_not_held_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING), held_to("192.0.2.1") as held:  # TEST-NET-1
        assert not held
    assert "not on 192.0.2.1 alone: 192.0.2.1 is not an address of this machine" in caplog.text


def test_the_extension_refuses_a_library_that_is_not_loaded_and_a_non_address() -> None:
    extension = importlib.import_module("smserve.training._collective_address")
    with pytest.raises(OSError, match="not loaded in this process"):
        extension.hold("libsmserve-never-loaded.so", ADDRESS)
    with pytest.raises(ValueError, match="not an IPv4 or IPv6 address"):
        extension.hold("libc.so.6", "algo-1")
