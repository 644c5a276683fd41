"""Progress of a run: a bar redrawn in place on a terminal (records, records/s, bytes,
ETA), plain log lines every ``interval_s`` otherwise, and a summary line at the end."""

from __future__ import annotations

import logging
import time
from typing import TextIO

logger = logging.getLogger(__name__)

BAR_WIDTH = 24
REDRAW_S = 0.2  # a terminal is redrawn at most this often


class Progress:
    """Counts records and input bytes; ``total_bytes`` None (standard input) means no ETA."""

    def __init__(
        self, stream: TextIO, total_bytes: int | None, is_tty: bool, interval_s: float = 10.0
    ) -> None:
        self.stream, self.total_bytes, self.is_tty = stream, total_bytes, is_tty
        self.interval_s = REDRAW_S if is_tty else interval_s
        self.records = self.bytes_done = 0
        self.started = self._shown = time.monotonic()
        self.first: tuple[float, int] | None = None

    def advance(self, records: int, input_bytes: int) -> None:
        if self.first is None:  # start-up (workers loading the model) ends here
            self.first = (time.monotonic(), records)
        self.records += records
        self.bytes_done += input_bytes
        now = time.monotonic()
        if now - self._shown >= self.interval_s:
            self._shown = now
            self._show(now)

    def finish(self) -> str:
        """Clears the bar and returns the summary: records, seconds and records/s."""
        if self.is_tty:
            self.stream.write("\r" + " " * 100 + "\r")
            self.stream.flush()
        now = time.monotonic()
        elapsed = max(now - self.started, 1e-9)
        return (
            f"{self.records:,} records in {elapsed:.1f} s ({self.records / elapsed:,.0f} "
            f"records/s, {self.bytes_done / elapsed / 1e6:.1f} MB/s{self._steady(now)})"
        )

    def _steady(self, now: float) -> str:
        """The rate once the first answer was in, which leaves start-up out."""
        if self.first is None or now - self.first[0] <= 0:
            return ""
        start_up = self.first[0] - self.started
        rate = (self.records - self.first[1]) / (now - self.first[0])
        return f"; {rate:,.0f} records/s after {start_up:.1f} s of start-up"

    def _show(self, now: float) -> None:
        if self.is_tty:
            self.stream.write("\r" + self.line(now))
            self.stream.flush()
        else:
            logger.info("%s", self.line(now))

    def line(self, now: float) -> str:
        elapsed = max(now - self.started, 1e-9)
        rate = f"{self.records:,} records  {self.records / elapsed:,.0f} records/s"
        done = f"{self.bytes_done / 1e6:,.1f}"
        if not self.total_bytes:
            return f"{rate}  {done} MB"
        fraction = min(self.bytes_done / self.total_bytes, 1.0)
        filled = int(fraction * BAR_WIDTH)
        bar = "#" * filled + "." * (BAR_WIDTH - filled)
        return (
            f"{fraction:4.0%} [{bar}] {rate}  {done}/{self.total_bytes / 1e6:,.1f} MB  "
            f"ETA {_eta(elapsed, fraction)}"
        )


def _eta(elapsed: float, fraction: float) -> str:
    if fraction <= 0:
        return "--:--"
    seconds = int(elapsed * (1 - fraction) / fraction)
    return f"{seconds // 60:d}:{seconds % 60:02d}"
