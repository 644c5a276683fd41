"""Proof that nothing outside a directory is opened or listed, without strace.

``OpenProbe``: a FIFO with a thread blocked opening its write end. Opening a FIFO for reading
completes only together with a writer's open, so any open of the FIFO for reading (a load
that followed a link outside, or a path with ``..``) releases the thread, and the probe
records that it was touched before the probe itself released it. A FIFO also makes a plain
``open`` block rather than fail quietly, so a regression cannot slip past as an empty file.

``ListingProbe``: an audit hook (``sys.addaudithook``) that records the real path of every
directory listed through ``os.scandir`` or ``os.listdir`` while it is active.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any


class OpenProbe:
    def __init__(self, path: Path) -> None:
        self.path = path
        os.mkfifo(path)
        self._released = False
        self.touched = False
        self._thread = threading.Thread(target=self._wait_for_a_reader, daemon=True)
        self._thread.start()

    def _wait_for_a_reader(self) -> None:
        with open(self.path, "wb"):  # blocks until something opens the FIFO for reading
            self.touched = not self._released

    def was_opened(self) -> bool:
        """Whether anything but the probe opened the FIFO (waits briefly for the thread)."""
        self._thread.join(timeout=0.5)
        return self.touched

    def release(self) -> None:
        self._released = True
        if self._thread.is_alive():
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
            self._thread.join(timeout=5)
            os.close(fd)


class ListingProbe:
    """Records listed directories while ``active``; one hook per process, installed once."""

    listed: list[Path] = []
    active = False
    _installed = False

    @classmethod
    def start(cls) -> type[ListingProbe]:
        if not cls._installed:
            sys.addaudithook(cls._hook)
            cls._installed = True
        cls.listed = []
        cls.active = True
        return cls

    @classmethod
    def stop(cls) -> None:
        cls.active = False

    @classmethod
    def _hook(cls, event: str, args: tuple[Any, ...]) -> None:
        if not cls.active or event not in ("os.scandir", "os.listdir"):
            return
        where = args[0]
        if isinstance(where, int):
            where = os.readlink(f"/proc/self/fd/{where}")
        cls.listed.append(Path(os.path.realpath(where if where is not None else ".")))

    @classmethod
    def listed_outside(cls, root: Path) -> list[Path]:
        real = Path(os.path.realpath(root))
        return [p for p in cls.listed if not p.is_relative_to(real)]
