"""RecordIO framing (dmlc/MXNet): split a body into record payloads, or frame payloads.

Each frame is ``u32le magic 0xCED7230A``, ``u32le lrec`` (bits 0-28: payload length, bits
29-31: continuation flag), the payload, then zero padding to a multiple of 4 bytes. Frames are
read sequentially by length; the body is never scanned for the magic. Anything malformed
(bad magic, a short header, payload or padding, a flag of 4-7, 1-3 stray trailing bytes)
raises DecodeError naming the byte offset. Padding bytes are skipped unread, as every reader
(dmlc, ml-io, the SageMaker SDK) does.

``read_payloads`` reads a body held whole (the codec's); ``framed_records`` reads a stream one
frame at a time (``smserve score``'s RecordIO split), with the same checks and messages.

Multi-part records (flag 1, then any number of 2, then 3) are handed on as their parts. Two
conventions exist: dmlc drops an aligned magic from the payload at each split point and puts it
back when reading; ml-io cuts anywhere and joins parts with nothing in between. A payload
cannot say which was used, so ``Payload.candidates`` offers the dmlc join first and the plain
join second; the record layer keeps the first that parses as a Record. The dmlc join goes first
because it is the canonical writer's convention; ml-io's test files only parse the plain way.
No SageMaker client writes multi-part records, and our own writer emits flag 0 only.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple, cast

import numpy as np

from smserve.errors import DecodeError

MAGIC = 0xCED7230A
MAGIC_BYTES = struct.pack("<I", MAGIC)
HEADER = struct.Struct("<II")
LENGTH_BITS = 29
LENGTH_MASK = (1 << LENGTH_BITS) - 1
COMPLETE, FIRST, MIDDLE, LAST = 0, 1, 2, 3


def padding(length: int) -> int:
    """Zero bytes that follow a payload of ``length`` bytes."""
    return -length % 4


class Frame(NamedTuple):
    """One frame; ``offset`` is where its header starts in the body."""

    offset: int
    flag: int
    payload: bytes

    @property
    def end(self) -> int:
        return self.offset + HEADER.size + len(self.payload) + padding(len(self.payload))


class Payload(NamedTuple):
    """One logical record: a single complete frame's payload, or a multi-part record's parts."""

    offset: int
    parts: tuple[bytes, ...]

    def candidates(self) -> tuple[bytes, ...]:
        """The payload bytes to try, in order (two for a multi-part record; see above)."""
        if len(self.parts) == 1:
            return self.parts
        return MAGIC_BYTES.join(self.parts), b"".join(self.parts)


def read_frame(body: bytes, offset: int) -> Frame:
    """The frame whose header starts at ``offset``; raises DecodeError if it is malformed."""
    flag, length = read_header(body[offset : offset + HEADER.size], offset)
    start = offset + HEADER.size
    check_room(offset, length, len(body) - start)
    return Frame(offset, flag, body[start : start + length])


def read_header(header: bytes, offset: int) -> tuple[int, int]:
    """``(flag, payload length)`` of the frame header ``header`` found at byte ``offset``;
    raises DecodeError for a short header, a bad magic or a flag over 3."""
    if len(header) < HEADER.size:
        raise DecodeError(
            f"RecordIO: {len(header)} stray bytes at byte offset {offset}; "
            f"a frame header needs {HEADER.size}"
        )
    magic, lrec = HEADER.unpack(header)
    if magic != MAGIC:
        raise DecodeError(
            f"RecordIO: bad magic 0x{magic:08X} at byte offset {offset} (expected "
            f"0x{MAGIC:08X}): no record starts at byte {offset}, or the one before it is cut"
        )
    flag, length = lrec >> LENGTH_BITS, lrec & LENGTH_MASK
    if flag > LAST:
        raise DecodeError(f"RecordIO: invalid continuation flag {flag} at byte offset {offset + 4}")
    return flag, length


def check_room(offset: int, length: int, left: int) -> None:
    """Raises DecodeError unless the ``left`` bytes after the header at ``offset`` hold its
    ``length``-byte payload and the padding."""
    if length + padding(length) > left:
        what = "payload" if length > left else "padding"
        raise DecodeError(
            f"RecordIO: truncated {what} at byte offset {offset + HEADER.size}: the record is "
            f"cut short (the header at byte offset {offset} announces {length} bytes plus "
            f"{padding(length)} padding, {left} remain)"
        )


def iter_frames(body: bytes) -> Iterator[Frame]:
    """Every frame of ``body``, in order."""
    offset = 0
    while offset < len(body):
        frame = read_frame(body, offset)
        yield frame
        offset = frame.end


def read_payloads(body: bytes) -> list[Payload]:
    """The logical records of ``body``; raises DecodeError on a bad multi-part sequence."""
    payloads: list[Payload] = []
    parts: list[Frame] = []
    sequence = MultiPart()
    for frame in iter_frames(body):
        parts.append(frame)
        if sequence.ends_record(frame.offset, frame.flag):
            payloads.append(Payload(parts[0].offset, tuple(part.payload for part in parts)))
            parts = []
    sequence.finish()
    return payloads


def framed_records(read: Callable[[int], bytes]) -> Iterator[bytes]:
    """The records of a stream, each with its framing (a multi-part record's frames together),
    read one frame at a time: ``read(n)`` returns ``n`` bytes, fewer only at the end."""
    offset, pending, sequence = 0, b"", MultiPart()
    while header := read(HEADER.size):
        flag, length = read_header(header, offset)
        rest = read(length + padding(length))
        check_room(offset, length, len(rest))
        pending += header + rest
        if sequence.ends_record(offset, flag):
            yield pending
            pending = b""
        offset += len(header) + len(rest)
    sequence.finish()


class MultiPart:
    """Checks the continuation flags of consecutive frames: a record is one complete frame
    (flag 0), or a first part (1), any middle parts (2) and a last part (3)."""

    def __init__(self) -> None:
        self.opened_at: int | None = None

    def ends_record(self, offset: int, flag: int) -> bool:
        """Whether a record ends with the frame at ``offset``; DecodeError if out of order."""
        _check_sequence(offset, flag, self.opened_at)
        if flag == FIRST:
            self.opened_at = offset
        if flag in (COMPLETE, LAST):
            self.opened_at = None
        return self.opened_at is None

    def finish(self) -> None:
        """Raises DecodeError when the input ended inside a multi-part record."""
        if self.opened_at is not None:
            raise DecodeError(
                f"RecordIO: the multi-part record at byte offset {self.opened_at} has no last "
                "part (flag 3) before the end of the body"
            )


def _check_sequence(offset: int, flag: int, opened_at: int | None) -> None:
    if flag in (COMPLETE, FIRST) and opened_at is not None:
        raise DecodeError(
            f"RecordIO: frame at byte offset {offset} has flag {flag} inside the "
            f"multi-part record that starts at byte offset {opened_at}"
        )
    if flag in (MIDDLE, LAST) and opened_at is None:
        raise DecodeError(
            f"RecordIO: frame at byte offset {offset} continues a multi-part record "
            f"(flag {flag}) but no first part (flag 1) precedes it"
        )


def frame(payload: bytes) -> bytes:
    """``payload`` as one complete frame (flag 0, zero padding); no magic escaping."""
    if len(payload) > LENGTH_MASK:
        raise ValueError(f"a RecordIO payload holds at most {LENGTH_MASK} bytes")
    header = HEADER.pack(MAGIC, len(payload))
    return header + payload + bytes(padding(len(payload)))


def frame_dtype(fields: list[tuple[str, Any, int]], frame_size: int) -> np.dtype[np.void]:
    """A structured dtype that views one frame of ``frame_size`` bytes; ``fields`` lists
    (name, numpy format, byte offset). The vectorised reader and writer both use it."""
    spec = {
        "names": [name for name, _, _ in fields],
        "formats": [kind for _, kind, _ in fields],
        "offsets": [offset for _, _, offset in fields],
        "itemsize": frame_size,
    }
    dtype: np.dtype[np.void] = np.dtype(cast(Any, spec))
    return dtype
