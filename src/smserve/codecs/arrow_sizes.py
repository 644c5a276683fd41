"""The sizes an Arrow IPC body declares, read from its message metadata before pyarrow reads
any record batch.

pyarrow decompresses a compressed buffer (ZSTD or LZ4) whole, to the uncompressed length
written in front of it, before anything can look at the result: a 60 KB body can ask for
gigabytes. So the body's framing and each message's flatbuffer (Arrow's ``Message.fbs``,
``File.fbs``) are read here, in plain Python over the bytes, for what the messages declare:
how big the schema's metadata is, how many rows the record batches hold, and how many bytes
their compressed buffers inflate to. Anything that does not add up (a message or buffer past
the end of the body, a length that cannot be) is a DecodeError naming it; the caller checks
the rest against the request's budget. Only metadata is read: a few fields per message.

Stream: messages back to back, each ``0xFFFFFFFF``, an int32 metadata length (or that length
alone, the pre-1.0 form), the ``Message`` flatbuffer, then ``bodyLength`` bytes of body; a zero
length ends it. File: ``ARROW1``, a stream, the ``Footer`` flatbuffer, its int32 length,
``ARROW1``; the footer's blocks say where the record batches are.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from smserve.errors import DecodeError

MAGIC = b"ARROW1"
CONTINUATION = 0xFFFFFFFF
# Message.header's union types (Message.fbs).
SCHEMA, DICTIONARY_BATCH, RECORD_BATCH = 1, 2, 3
NOT_COMPRESSED = -1  # a compressed body's buffer stored as is
_I32, _U32, _U16, _I64 = (struct.Struct(f"<{code}") for code in "iIHq")
_U8 = struct.Struct("<B")
_BLOCK_BYTES, _BUFFER_BYTES = 24, 16  # File.fbs Block, Schema.fbs Buffer (structs)


class Malformed(Exception):
    """The metadata does not add up; the message says what."""


@dataclass(frozen=True, slots=True)
class Declared:
    """What a body's messages declare: the bytes of its schema's metadata, its record
    batches' rows, and the bytes its compressed buffers inflate to."""

    schema_bytes: int
    rows: int
    inflated: int


def declared(body: bytes, media_type: str, file: bool) -> Declared:
    """The sizes ``body`` declares; raises DecodeError when its metadata does not add up."""
    view = memoryview(body)  # slices of it are not copies
    try:
        return _file(view) if file else _stream(view)
    except Malformed as exc:
        kind = "file" if file else "stream"
        raise DecodeError(
            f"{media_type}: the body is not a readable Arrow IPC {kind}: {exc}"
        ) from None


def _stream(body: memoryview, start: int = 0) -> Declared:
    schema_bytes = rows = inflated = 0
    offset = start
    while offset < len(body):
        message = _message_at(body, offset)
        if message is None:
            break
        if message.kind == SCHEMA:
            schema_bytes = max(schema_bytes, message.metadata_bytes)
        rows += message.rows
        inflated += message.inflated
        offset = message.end
    return Declared(schema_bytes, rows, inflated)


def _file(body: memoryview) -> Declared:
    magic = len(MAGIC)
    if len(body) < 2 * magic + 4 or body[:magic] != MAGIC or body[-magic:] != MAGIC:
        raise Malformed("it does not start and end with ARROW1")
    footer_length = _read(_I32, body, len(body) - len(MAGIC) - 4)
    footer_start = len(body) - len(MAGIC) - 4 - footer_length
    if footer_length <= 0 or footer_start < len(MAGIC):
        raise Malformed(f"its footer length {footer_length} does not fit the body")
    footer = _Table.root(body[footer_start : footer_start + footer_length])
    rows = inflated = 0
    for field in (2, 3):  # dictionaries, recordBatches: vectors of Block structs
        for at in footer.structs(field, _BLOCK_BYTES):
            message = _message_at(body, _read(_I64, footer.data, at))
            if message is not None:
                rows += message.rows
                inflated += message.inflated
    return Declared(footer_length, rows, inflated)


@dataclass(frozen=True, slots=True)
class _Message:
    kind: int
    metadata_bytes: int
    rows: int
    inflated: int
    end: int


def _message_at(body: memoryview, offset: int) -> _Message | None:
    """The message at ``offset``, None at the end-of-stream marker."""
    if offset < 0 or offset + 4 > len(body):
        raise Malformed(f"a message at byte {offset} is past the end of the body")
    length, start = _read(_U32, body, offset), offset + 4
    if length == CONTINUATION:  # else the pre-1.0 form: the length alone
        length, start = _read(_U32, body, start), start + 4
    if length == 0:
        return None
    end = start + length
    if end > len(body):
        raise Malformed(f"the message at byte {offset} declares {length} bytes of metadata")
    message = _Table.root(body[start:end])
    kind, body_length = message.scalar(1, _U8), message.scalar(3, _I64)
    if body_length < 0 or end + body_length > len(body):
        raise Malformed(f"the message at byte {offset} declares a {body_length}-byte body")
    rows, inflated = _batch_sizes(message, kind, body[end : end + body_length])
    return _Message(kind, length, rows, inflated, end + body_length)


def _batch_sizes(message: _Table, kind: int, body: memoryview) -> tuple[int, int]:
    """(rows, inflated bytes) of a record or dictionary batch message; (0, 0) otherwise."""
    if kind not in (RECORD_BATCH, DICTIONARY_BATCH):
        return 0, 0
    batch = message.table(2)
    if kind == DICTIONARY_BATCH:
        batch = batch.table(1) if batch is not None else None
    if batch is None:
        raise Malformed("a batch message has no batch")
    rows = batch.scalar(0, _I64)
    if rows < 0:
        raise Malformed(f"a record batch declares {rows} rows")
    inflated = _inflated(batch, body) if batch.table(3) is not None else 0
    return (rows if kind == RECORD_BATCH else 0), inflated


def _inflated(batch: _Table, body: memoryview) -> int:
    """The bytes a compressed batch's buffers inflate to: each one's declared length (an
    uncompressed batch's buffers are read in place: pyarrow checks their bounds)."""
    total = 0
    for at in batch.structs(2, _BUFFER_BYTES):
        offset, length = _read(_I64, batch.data, at), _read(_I64, batch.data, at + 8)
        if offset < 0 or length < 0 or offset + length > len(body):
            raise Malformed(f"a buffer at {offset} of {length} bytes is outside its message body")
        if length:
            if length < 8:
                raise Malformed(f"a compressed buffer of {length} bytes has no length prefix")
            inflated = _read(_I64, body, offset)
            if inflated < NOT_COMPRESSED:
                raise Malformed(f"a compressed buffer declares {inflated} bytes")
            total += max(inflated, 0)
    return total


class _Table:
    """One flatbuffer table in ``data``: fields by their id, every offset bounds-checked."""

    def __init__(self, data: memoryview, position: int) -> None:
        self.data, self.position = data, position
        vtable = position - _read(_I32, data, position)
        self.vtable, self.vtable_size = vtable, _read(_U16, data, vtable)

    @classmethod
    def root(cls, data: memoryview) -> _Table:
        return cls(data, _read(_U32, data, 0))

    def _field(self, field: int) -> int:
        """The position of ``field``'s value, 0 when it is absent."""
        entry = 4 + 2 * field
        if entry + 2 > self.vtable_size:
            return 0
        relative = _read(_U16, self.data, self.vtable + entry)
        return self.position + relative if relative else 0

    def scalar(self, field: int, kind: struct.Struct, default: int = 0) -> int:
        at = self._field(field)
        return _read(kind, self.data, at) if at else default

    def _target(self, field: int) -> int:
        at = self._field(field)
        return at + _read(_U32, self.data, at) if at else 0

    def table(self, field: int) -> _Table | None:
        target = self._target(field)
        return _Table(self.data, target) if target else None

    def structs(self, field: int, size: int) -> range:
        """The positions of a vector of ``size``-byte structs (empty when absent)."""
        target = self._target(field)
        if not target:
            return range(0)
        count = _read(_U32, self.data, target)
        if target + 4 + count * size > len(self.data):
            raise Malformed(f"a vector of {count} entries runs past its metadata")
        return range(target + 4, target + 4 + count * size, size)


def _read(kind: struct.Struct, data: memoryview, at: int) -> int:
    if at < 0 or at + kind.size > len(data):
        raise Malformed(f"its metadata points outside itself (byte {at})")
    value: int = kind.unpack_from(data, at)[0]
    return value
