"""Hostile request bodies for hostile.py (and the tests that sample it): compressed and
declared-size bombs per format, wide rows, deep and long JSON. Each is built without ever
holding what it inflates to: compressed frames of zeros are made once and repeated, and the
Parquet and Arrow metadata around them is written here (Thrift compact, flatbuffer patches),
so a 66 KB body can honestly inflate to 2 GiB."""

from __future__ import annotations

import io
import struct
from collections.abc import Iterable

import numpy as np
import pyarrow as pa

GIB = 1 << 30
END_OF_STREAM = b"\xff\xff\xff\xff\x00\x00\x00\x00"
FRAME_BYTES = 16 << 20  # zeros per compressed frame; frames are repeated up to the total
# Parquet codec numbers (parquet.thrift CompressionCodec) and Thrift compact types.
UNCOMPRESSED, ZSTD = 0, 6
_I32, _I64, _BINARY, _LIST, _STRUCT = 5, 6, 8, 9, 12


def zeros_compressed(total: int, codec: str) -> bytes:
    """Concatenated ``codec`` frames that inflate to ``total`` zero bytes."""
    whole, rest = divmod(total, FRAME_BYTES)
    frame = pa.compress(bytes(FRAME_BYTES), codec=codec, asbytes=True) if whole else b""
    tail = pa.compress(bytes(rest), codec=codec, asbytes=True) if rest else b""
    return frame * whole + tail


# Arrow IPC


def arrow_bomb(inflated: int, codec: str = "zstd", file: bool = False, lie: bool = False) -> bytes:
    """One float64 column whose one compressed buffer inflates to ``inflated`` bytes (rows to
    match). ``lie``: the buffer only declares that length; its data is a few zeros."""
    rows = inflated // 8
    data = zeros_compressed(64 if lie else inflated, codec)
    buffer = struct.pack("<q", inflated) + data
    template = _arrow_template(codec, file)
    if file:
        return _patched_file(template, rows, buffer)
    return _patched_stream(template, rows, buffer)


def _arrow_template(codec: str, file: bool) -> bytes:
    table = pa.table({"f0": pa.array([0.0] * 8)})
    sink = pa.BufferOutputStream()
    options = pa.ipc.IpcWriteOptions(compression=codec)
    opener = pa.ipc.new_file if file else pa.ipc.new_stream
    with opener(sink, table.schema, options=options) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue())


def _messages(body: bytes, start: int) -> Iterable[tuple[int, int, int]]:
    """(offset, metadata start, metadata length) of each message from ``start`` to EOS."""
    offset = start
    while True:
        (length,) = struct.unpack_from("<I", body, offset + 4)
        if length == 0:
            return
        yield offset, offset + 8, length
        message = _root(body, offset + 8)
        present = _has(body, message, 3)
        body_length = struct.unpack_from("<q", body, _field(body, message, 3))[0] if present else 0
        offset += 8 + length + body_length


def _record_batch(body: bytes, start: int) -> tuple[int, int, int]:
    """The record batch message after ``start``: (offset, metadata start, metadata length)."""
    for offset, meta, length in _messages(body, start):
        if body[_field(body, _root(body, meta), 1)] == 3:  # Message.header_type: RecordBatch
            return offset, meta, length
    raise ValueError("no record batch")


def _patch_batch(body: bytearray, meta: int, rows: int, buffer: bytes) -> None:
    """Set the record batch whose metadata starts at ``meta`` to ``rows`` rows and one data
    ``buffer`` (the column's validity buffer empty)."""
    message = _root(body, meta)
    batch = _target(body, message, 2)
    struct.pack_into("<q", body, _field(body, message, 3), _padded(len(buffer)))  # bodyLength
    struct.pack_into("<q", body, _field(body, batch, 0), rows)  # RecordBatch.length
    nodes, buffers = _target(body, batch, 1), _target(body, batch, 2)
    struct.pack_into("<qq", body, nodes + 4, rows, 0)  # FieldNode: length, null_count
    struct.pack_into("<qq", body, buffers + 4, 0, 0)  # Buffer 0 (validity): none
    struct.pack_into("<qq", body, buffers + 4 + 16, 0, len(buffer))  # Buffer 1: the data


def _patched_stream(template: bytes, rows: int, buffer: bytes) -> bytes:
    _, meta, length = _record_batch(template, 0)
    head = bytearray(template[: meta + length])
    _patch_batch(head, meta, rows, buffer)
    return bytes(head) + buffer + bytes(_padded(len(buffer)) - len(buffer)) + END_OF_STREAM


def _padded(length: int) -> int:
    return length + -length % 8


def _patched_file(template: bytes, rows: int, buffer: bytes) -> bytes:
    _, meta, length = _record_batch(template, 8)
    head = bytearray(template[: meta + length])
    _patch_batch(head, meta, rows, buffer)
    (footer_length,) = struct.unpack_from("<i", template, len(template) - 10)
    footer = bytearray(template[len(template) - 10 - footer_length : len(template) - 10])
    blocks = _target(footer, _root(footer, 0), 3)  # Footer.recordBatches: one Block
    struct.pack_into("<q", footer, blocks + 4 + 16, _padded(len(buffer)))  # Block.bodyLength
    padding = bytes(_padded(len(buffer)) - len(buffer))
    return bytes(head) + buffer + padding + END_OF_STREAM + bytes(footer) + template[-10:]


def _root(data: bytes | bytearray, start: int) -> int:
    """The root table of the flatbuffer that starts at ``start``."""
    return start + int(struct.unpack_from("<I", data, start)[0])


def _relative(data: bytes | bytearray, table: int, field: int) -> int:
    vtable = table - struct.unpack_from("<i", data, table)[0]
    (size,) = struct.unpack_from("<H", data, vtable)
    if 4 + 2 * field + 2 > size:
        return 0
    return int(struct.unpack_from("<H", data, vtable + 4 + 2 * field)[0])


def _has(data: bytes | bytearray, table: int, field: int) -> bool:
    return _relative(data, table, field) != 0


def _field(data: bytes | bytearray, table: int, field: int) -> int:
    """The position of a flatbuffer table's field (which must be present)."""
    relative = _relative(data, table, field)
    assert relative, f"field {field} is absent"
    return table + relative


def _target(data: bytes | bytearray, table: int, field: int) -> int:
    """Where a table's offset field points: a table, or a vector's length."""
    at = _field(data, table, field)
    return at + int(struct.unpack_from("<I", data, at)[0])


# Parquet, written field by field (Thrift compact protocol), so that the metadata can say
# anything: a page that inflates to 2 GiB under a footer that honestly says 3 rows, or
# 60,000 one-row columns.


def parquet_page_bomb(
    page_bytes: int, rows: int = 3, codec: int = ZSTD, lie: bool = False, chunk_short: int = 0
) -> bytes:
    """One DOUBLE column of ``rows`` rows (zeros) in one data page that inflates to
    ``page_bytes``; the footer honestly says ``rows`` rows. ``lie``: the page header only
    declares that size; its data inflates to the rows alone. ``chunk_short``: the column
    chunk's compressed size says that many bytes fewer than its page takes."""
    inflated = 8 * rows if lie else page_bytes
    data = zeros_compressed(inflated, "zstd") if codec == ZSTD else bytes(inflated)
    return _parquet([(data, page_bytes)], rows, codec, chunk_short=chunk_short)


def parquet_wide(columns: int, rows: int = 1) -> bytes:
    """``columns`` DOUBLE columns of ``rows`` rows each, uncompressed: mostly metadata."""
    page = bytes(8 * rows)
    return _parquet([(page, len(page))] * columns, rows, UNCOMPRESSED)


def parquet_rows_lie(rows: int) -> bytes:
    """A footer declaring ``rows`` rows over one real row of 50 columns."""
    page = bytes(8)
    return _parquet([(page, len(page))] * 50, rows, UNCOMPRESSED, page_rows=1)


def parquet_footer_disagrees(file_rows: int) -> bytes:
    """One row of 50 columns in one row group of 1 row, under a footer declaring
    ``file_rows`` rows in the file."""
    page = bytes(8)
    return _parquet([(page, len(page))] * 50, 1, UNCOMPRESSED, file_rows=file_rows)


def _parquet(
    pages: list[tuple[bytes, int]],
    rows: int,
    codec: int,
    page_rows: int | None = None,
    chunk_short: int = 0,
    file_rows: int | None = None,
) -> bytes:
    body = bytearray(b"PAR1")
    chunks = []
    for data, inflated in pages:
        offset = len(body)
        header = _struct(
            [
                (1, _I32, 0),  # DATA_PAGE
                (2, _I32, inflated),
                (3, _I32, len(data)),
                (
                    5,
                    _STRUCT,
                    [(1, _I32, page_rows or rows), (2, _I32, 0), (3, _I32, 3), (4, _I32, 3)],
                ),
            ]
        )
        body += header + data
        chunks.append((offset, len(header) + inflated, len(header) + len(data) - chunk_short))
    footer = _struct(
        [
            (1, _I32, 1),
            (
                2,
                _LIST,
                (
                    _STRUCT,
                    [_schema_root(len(pages))] + [_schema_column(i) for i in range(len(pages))],
                ),
            ),
            (3, _I64, rows if file_rows is None else file_rows),
            (4, _LIST, (_STRUCT, [_row_group(chunks, rows, codec)])),
        ]
    )
    return bytes(body + footer + struct.pack("<I", len(footer)) + b"PAR1")


def _schema_root(children: int) -> list[tuple[int, int, object]]:
    return [(4, _BINARY, b"schema"), (5, _I32, children)]


def _schema_column(index: int) -> list[tuple[int, int, object]]:
    return [(1, _I32, 5), (3, _I32, 0), (4, _BINARY, f"f{index}".encode())]  # DOUBLE, REQUIRED


def _row_group(
    chunks: list[tuple[int, int, int]], rows: int, codec: int
) -> list[tuple[int, int, object]]:
    columns = [_column_chunk(i, *chunk, rows, codec) for i, chunk in enumerate(chunks)]
    total = sum(chunk[1] for chunk in chunks)
    return [(1, _LIST, (_STRUCT, columns)), (2, _I64, total), (3, _I64, rows)]


def _column_chunk(
    index: int, offset: int, uncompressed: int, compressed: int, rows: int, codec: int
) -> list[tuple[int, int, object]]:
    metadata = [
        (1, _I32, 5),
        (2, _LIST, (_I32, [0, 3])),  # PLAIN, RLE
        (3, _LIST, (_BINARY, [f"f{index}".encode()])),
        (4, _I32, codec),
        (5, _I64, rows),
        (6, _I64, uncompressed),
        (7, _I64, compressed),
        (9, _I64, offset),
    ]
    return [(2, _I64, offset), (3, _STRUCT, metadata)]


def _struct(fields: list[tuple[int, int, object]]) -> bytes:
    out, last = bytearray(), 0
    for field, kind, value in fields:
        out.append((field - last) << 4 | kind)
        out += _value(kind, value)
        last = field
    return bytes(out + b"\x00")


def _value(kind: int, value: object) -> bytes:
    if kind in (_I32, _I64):
        assert isinstance(value, int)
        return _varint((value << 1) ^ (value >> 63))
    if kind == _BINARY:
        assert isinstance(value, bytes)
        return _varint(len(value)) + value
    if kind == _STRUCT:
        return _struct(value)  # type: ignore[arg-type]
    element, items = value  # type: ignore[misc]
    head = (
        bytes([len(items) << 4 | element])
        if len(items) < 15
        else bytes([0xF0 | element]) + _varint(len(items))
    )
    return head + b"".join(_value(element, item) for item in items)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        if value < 0x80:
            return bytes(out + bytes([value]))
        out.append(value & 0x7F | 0x80)
        value >>= 7


# NumPy .npy


def npy_header(descr: str, shape: tuple[int, ...], fortran: bool = False) -> bytes:
    """A .npy header only (version 1.0, or 2.0 past 64 KiB): what it declares, no values."""
    text = f"{{'descr': {descr!r}, 'fortran_order': {fortran}, 'shape': {shape}, }}"
    header = text.encode("latin1") + b"\n"
    if len(header) < 1 << 16:
        return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header
    return b"\x93NUMPY\x02\x00" + struct.pack("<I", len(header)) + header


def npy_object_array() -> bytes:
    """An object array, saved as numpy saves one: a pickle after the header."""
    buffer = io.BytesIO()
    np.save(buffer, np.array([[1.0, None]], dtype=object), allow_pickle=True)
    return buffer.getvalue()


def npy_fortran(rows: int, columns: int) -> bytes:
    """A valid Fortran-order float64 array (served: read in its own order)."""
    matrix = np.asfortranarray(np.full((rows, columns), 0.5))
    buffer = io.BytesIO()
    np.save(buffer, matrix, allow_pickle=False)
    return buffer.getvalue()
