"""One memory budget per request: how much decoding a body may make a worker allocate,
decided from the body's size before anything is allocated.

A body's decoded values and every buffer on the way (decompressed pages and buffers, parsed
JSON objects, a CSV reader's columns) may take at most ``ratio`` bytes per byte of the body
(``SMSERVE_REQUEST_MEMORY_RATIO``), never less than ``FLOOR_BYTES`` (so small bodies always
work) and never more than ``cap_bytes`` (``SMSERVE_REQUEST_MEMORY_MB``, by default half the
container's memory shared among every request thread of every worker). Decoders check what a
body *declares* (row and column counts, buffer and page sizes, shapes) against the limit
before they decompress or allocate, and answer 413 worded by ``over``, naming the setting
that binds. docs/design/memory-budget.md lists what each format counts.
"""

from __future__ import annotations

from dataclasses import dataclass

from smserve.config import DEFAULT_REQUEST_MEMORY_RATIO, MIB, Settings
from smserve.errors import PayloadTooLarge

FLOOR_BYTES = 16 * MIB  # any body may decode to this much (when the cap allows)
# Parsing JSON into Python objects (orjson or the standard library) and the arrays made from
# them: at most 46 bytes per body byte measured (a list every two bytes), about 20 for rows
# of numbers (bench/inprocess/decode_memory.py). Every JSON door charges this.
JSON_BYTES_PER_BYTE = 48
CAP_SETTING = "SMSERVE_REQUEST_MEMORY_MB"
RATIO_SETTING = "SMSERVE_REQUEST_MEMORY_RATIO"
PAYLOAD_SETTING = "SAGEMAKER_MAX_PAYLOAD_IN_MB"


@dataclass(frozen=True, slots=True)
class MemoryBudget:
    """A worker's rule for every request: ``cap_bytes`` at most, ``ratio`` bytes per body
    byte, at least ``FLOOR_BYTES`` (within the cap)."""

    cap_bytes: int = 512 * MIB
    ratio: int = DEFAULT_REQUEST_MEMORY_RATIO

    @classmethod
    def of(cls, settings: Settings) -> MemoryBudget:
        return cls(settings.request_memory_bytes, settings.request_memory_ratio)

    def inflation_limit(self, payload_bytes: int) -> tuple[int, str]:
        """How far a gzip or deflate body may inflate, and the setting that raises it: the
        payload limit, or the cap when that is smaller."""
        if payload_bytes <= self.cap_bytes:
            return payload_bytes, PAYLOAD_SETTING
        return self.cap_bytes, CAP_SETTING

    def for_body(self, body_bytes: int) -> RequestBudget:
        """The budget of one request whose body (as decoded: inflated) has ``body_bytes``."""
        by_ratio = max(FLOOR_BYTES, self.ratio * body_bytes)
        if by_ratio < self.cap_bytes:
            return RequestBudget(by_ratio, RATIO_SETTING, self.ratio)
        return RequestBudget(self.cap_bytes, CAP_SETTING, self.cap_bytes // MIB)


@dataclass(frozen=True, slots=True)
class RequestBudget:
    """What one request may allocate: ``limit`` bytes, set by the setting ``variable``
    (whose value is ``value``)."""

    limit: int
    variable: str
    value: int

    def check(self, needed: int, what: str) -> None:
        """Raise PayloadTooLarge (413) when ``needed`` bytes, for ``what``, exceed the limit.
        Callers count what the body declares, before allocating any of it."""
        if needed > self.limit:
            raise self.over(needed, what)

    def check_pieces(
        self, body: bytes, per_byte: int, per_piece: int, separators: bytes, media_type: str
    ) -> None:
        """Charge ``per_byte`` for each byte of ``body`` and ``per_piece`` for each value its
        ``separators`` split it into: first as if every byte were one (no pass over the
        body), and only when that is over the limit with them counted (one pass per
        separator)."""
        pieces = len(body) + 1
        if per_byte * len(body) + per_piece * pieces <= self.limit:
            return
        pieces = 1 + sum(map(body.count, separators))
        self.check(per_byte * len(body) + per_piece * pieces, f"{media_type}: {pieces} values")

    def over(self, needed: int, what: str) -> PayloadTooLarge:
        """The 413 for ``what`` needing ``needed`` bytes, worded the same by every decoder."""
        return PayloadTooLarge(
            f"{what} needs {needed} bytes of memory to decode, over the {self.limit}-byte "
            f"limit for this request ({self.variable}={self.value}); send fewer rows per "
            f"request or raise {self.variable}"
        )


UNLIMITED = RequestBudget(1 << 62, CAP_SETTING, 1 << 42)  # for callers outside a request
DEFAULT = MemoryBudget()  # Settings' defaults, for doors built without settings (tests)
