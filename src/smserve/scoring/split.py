"""Split a stream into records and batch them into mini-batches, as Batch Transform does.

* ``Line``: a record is a line; every line counts, so record N is line N. A last line without
  a newline gets one. Lines are never parsed here: a blank line reaches the decoder, which
  rejects it in batch mode (one output line per input line would break otherwise).
* ``RecordIO``: a record is one RecordIO frame, or the frames of one multi-part record.
* ``None``: the whole input is one record.

``MultiRecord`` packs as many whole records as fit under ``max_payload_bytes``;
``SingleRecord`` sends one per mini-batch. A record larger than the limit raises
RecordTooLarge; malformed RecordIO framing raises DecodeError naming the byte offset (the
framing is read by the RecordIO codec's own reader, ``recordio.framing.framed_records``). At most
one mini-batch (plus one partial record) is held at a time."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO, Protocol

from smserve.codecs.recordio.framing import framed_records
from smserve.errors import PayloadTooLarge


class Readable(Protocol):
    def read(self, size: int, /) -> bytes: ...


class RecordTooLarge(PayloadTooLarge):
    """One record does not fit in a mini-batch; raising the limit is the fix."""


@dataclass(frozen=True, slots=True)
class Chunk:
    """One mini-batch: whole records, ``first_record`` the 1-based number of its first one
    in the file and ``offset`` the byte where it starts."""

    body: bytes
    first_record: int
    n_records: int
    offset: int


def chunks(
    stream: BinaryIO, split_type: str, max_payload_bytes: int, single_record: bool = False
) -> Iterator[Chunk]:
    """The mini-batches of ``stream`` in order (see the module doc)."""
    if split_type == "None":
        return _whole(stream, max_payload_bytes)
    if split_type == "RecordIO":
        records = _recordio_records(stream)
    elif single_record:
        records = _terminated(iter(stream))  # one line at a time: SingleRecord wants no more
    else:
        return _line_chunks(stream, max_payload_bytes)
    return _pack(records, max_payload_bytes, single_record)


def records_of(chunk: bytes, split_type: str) -> list[bytes]:
    """The records of one mini-batch, each as it would be sent alone."""
    if split_type == "None":
        return [chunk]
    if split_type == "RecordIO":
        return list(_recordio_records(_BytesReader(chunk)))
    return [line + b"\n" for line in chunk.split(b"\n")[:-1]]


def _whole(stream: BinaryIO, max_payload_bytes: int) -> Iterator[Chunk]:
    body = _read(stream, max_payload_bytes + 1)
    if len(body) > max_payload_bytes:
        raise too_large(1, 0, max_payload_bytes)
    if body:
        yield Chunk(body, 1, 1, 0)


def _line_chunks(stream: BinaryIO, max_payload_bytes: int) -> Iterator[Chunk]:
    """Reads ``max_payload_bytes`` at a time and cuts after the last whole line."""
    carry, record, offset = b"", 1, 0
    while True:
        buffer = carry + _read(stream, max_payload_bytes - len(carry))
        if not buffer:
            return
        at_end = len(buffer) < max_payload_bytes
        cut = len(buffer) if at_end else buffer.rfind(b"\n") + 1
        if cut == 0:
            raise too_large(record, offset, max_payload_bytes)
        body = buffer[:cut] if buffer[cut - 1 : cut] == b"\n" else buffer[:cut] + b"\n"
        n_records = body.count(b"\n")
        yield Chunk(body, record, n_records, offset)
        carry, record, offset = buffer[cut:], record + n_records, offset + cut


def _pack(records: Iterator[bytes], max_payload_bytes: int, single: bool) -> Iterator[Chunk]:
    parts: list[bytes] = []
    size, record, offset = 0, 1, 0
    for data in records:
        if len(data) > max_payload_bytes:
            raise too_large(record + len(parts), offset + size, max_payload_bytes)
        if parts and (single or size + len(data) > max_payload_bytes):
            yield Chunk(b"".join(parts), record, len(parts), offset)
            record, offset, parts, size = record + len(parts), offset + size, [], 0
        parts.append(data)
        size += len(data)
    if parts:
        yield Chunk(b"".join(parts), record, len(parts), offset)


def _terminated(lines: Iterator[bytes]) -> Iterator[bytes]:
    for line in lines:
        yield line if line.endswith(b"\n") else line + b"\n"


def _read(stream: Readable, size: int) -> bytes:
    """``size`` bytes, fewer only at the end: a pipe may return less than asked."""
    data = stream.read(size)
    while 0 < len(data) < size and (more := stream.read(size - len(data))):
        data += more
    return data


def _recordio_records(stream: Readable) -> Iterator[bytes]:
    """Whole records with their framing; a multi-part record's frames stay together."""
    return framed_records(lambda size: _read(stream, size))


class _BytesReader:
    """``read(n)`` over bytes without copying the whole body into a BytesIO first."""

    def __init__(self, data: bytes) -> None:
        self._view, self._at = memoryview(data), 0

    def read(self, size: int) -> bytes:
        start, self._at = self._at, self._at + size
        return bytes(self._view[start : self._at])


def too_large(record: int, offset: int, max_payload_bytes: int) -> RecordTooLarge:
    return RecordTooLarge(
        f"record {record} (byte {offset}) is larger than the mini-batch limit of "
        f"{max_payload_bytes} bytes; raise --max-payload-mb or split the input "
        "(--split-type Line or RecordIO)"
    )
