"""The sizes a Parquet body declares, read before pyarrow reads any data.

pyarrow trusts what a file says: it allocates each page's ``uncompressed_page_size`` and
inflates the page into it, so a 68 KB file that honestly holds 3 rows can hold a page that
inflates to 2 GiB. What the pages of a column chunk can inflate to is bounded by its
compressed size times its codec's largest ratio (Snappy about 21, LZ4 255, gzip 1032); when
those bounds fit the request's budget, nothing more is read. Otherwise (ZSTD and Brotli have
no useful bound: 32,000 and 600,000 to one), each column chunk's page headers (Thrift compact
``PageHeader`` structs, read here in plain Python, a few fields each) are walked for the bytes
its pages declare. Before any of that, the footer's length and the number of schema elements
it declares (the list header of its second field: no parse) are known, since pyarrow's cost of
parsing and reading a file grows with them.

A page or footer that does not fit where the file says it is, or that the walk cannot read,
is a DecodeError naming it.
"""

from __future__ import annotations

import pyarrow.parquet as pq  # type: ignore[import-untyped]

from smserve.errors import DecodeError
from smserve.media import PARQUET

MAGIC = b"PAR1"
MAX_DEPTH = 32  # nested structs in a page header (real ones nest three deep)
# The most a codec inflates (its format's limit: Snappy's 64-byte copy in 3 bytes, LZ4's
# 255-byte length bytes, deflate's 258-byte match in 2 bits); ZSTD and BROTLI pages are read.
MAX_INFLATION = {"UNCOMPRESSED": 1, "SNAPPY": 22, "LZ4": 256, "LZ4_RAW": 256, "GZIP": 1032}
# Thrift compact types (the low nibble of a field header).
_TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(1, 13)
_UNCOMPRESSED, _COMPRESSED = 2, 3  # PageHeader's fields
_FIXED = {_BYTE: 1, _DOUBLE: 8}
_INTEGERS = frozenset({_I16, _I32, _I64})


class Malformed(Exception):
    """The file does not add up; the message says what."""


def footer_length(body: bytes) -> int:
    """The length of the footer ``body`` ends with; raises DecodeError when it cannot be."""
    if len(body) < 2 * len(MAGIC) + 4 or not body.startswith(MAGIC) or not body.endswith(MAGIC):
        raise _error("it does not start and end with PAR1")
    length = int.from_bytes(body[-8:-4], "little")
    if length > len(body) - 2 * len(MAGIC) - 4:
        raise _error(f"its footer declares {length} bytes, more than the file holds")
    return length


def inflated_bytes(body: bytes, metadata: pq.FileMetaData, allowance: int) -> int:
    """What the file's pages inflate to, or more: the codecs' bounds where they are known,
    what the page headers declare for the rest (and for all, when the bounds exceed
    ``allowance``). Raises DecodeError when a chunk's pages do not add up."""
    groups = map(metadata.row_group, range(metadata.num_row_groups))
    chunks = [group.column(column) for group in groups for column in range(group.num_columns)]
    ratios = [MAX_INFLATION.get(chunk.compression) for chunk in chunks]
    try:
        walked = sum(
            _inflated(body, c) for c, ratio in zip(chunks, ratios, strict=True) if ratio is None
        )
        bound = sum(
            c.total_compressed_size * ratio
            for c, ratio in zip(chunks, ratios, strict=True)
            if ratio
        )
        if walked + bound <= allowance:
            return int(walked + bound)
        return walked + sum(
            _inflated(body, c) for c, ratio in zip(chunks, ratios, strict=True) if ratio
        )
    except Malformed as exc:
        raise _error(str(exc)) from None


def _inflated(body: bytes, chunk: pq.ColumnChunkMetaData) -> int:
    """What one compressed column chunk's pages declare they inflate to."""
    if chunk.compression == "UNCOMPRESSED":
        return 0
    start, end = _chunk_range(body, chunk)
    total, position = 0, start
    while position < end:
        uncompressed, compressed, header_end = page_sizes(body, position)
        if min(uncompressed, compressed) < 0:
            raise Malformed(f"the page header at byte {position} declares a negative size")
        position = header_end + compressed
        if position > end:
            raise Malformed(f"the page at byte {header_end} runs past its column chunk")
        total += uncompressed
    return total


def _chunk_range(body: bytes, chunk: pq.ColumnChunkMetaData) -> tuple[int, int]:
    """Where a column chunk's pages are: from its first page (the dictionary's, if any; a
    writer leaves offsets 0 when there is none) for its compressed size."""
    offsets = [chunk.data_page_offset]
    if chunk.has_dictionary_page:
        offsets.append(chunk.dictionary_page_offset)
    starts = [offset for offset in offsets if offset is not None and offset >= len(MAGIC)]
    size = chunk.total_compressed_size
    if not starts:
        if size:
            raise Malformed("a column chunk has pages but no page offset")
        return 0, 0
    start = min(starts)
    if start + size > len(body):
        raise Malformed(f"a column chunk at byte {start} runs past the end of the file")
    return start, start + size


def page_sizes(data: bytes, position: int) -> tuple[int, int, int]:
    """(uncompressed_page_size, compressed_page_size, where the header ends) of the Thrift
    compact PageHeader at ``position``. Tight loops over the bytes: a file has a header per
    page per column, and ZSTD files are walked on every request."""
    sizes = {_UNCOMPRESSED: -1, _COMPRESSED: -1}
    field = 0
    try:
        while (header := data[position]) != 0:
            field, position = _field_id(data, position + 1, header, field)
            kind = header & 0x0F
            if field in sizes and kind == _I32:
                value, position = _varint(data, position)
                sizes[field] = (value >> 1) ^ -(value & 1)
            elif kind == _STRUCT:
                position = _skip_struct(data, position, 1)
            else:
                position = _skip(data, position, kind, 0)
        return sizes[_UNCOMPRESSED], sizes[_COMPRESSED], position + 1
    except IndexError:
        raise Malformed("a page header runs past the end of the file") from None


def _field_id(data: bytes, position: int, header: int, last: int) -> tuple[int, int]:
    """The id of the field whose header byte is ``header`` (a delta from ``last``, or a
    zigzag varint after it), and where its value starts."""
    if header >> 4:
        return last + (header >> 4), position
    value, position = _varint(data, position)
    return (value >> 1) ^ -(value & 1), position


def _varint(data: bytes, position: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, position
        shift += 7
        if shift > 63:
            raise Malformed(f"byte {position}: a varint longer than 64 bits")


def _varint_end(data: bytes, position: int) -> int:
    start = position
    while data[position] & 0x80:
        position += 1
        if position - start > 9:
            raise Malformed(f"byte {position}: a varint longer than 64 bits")
    return position + 1


def _skip(data: bytes, position: int, kind: int, depth: int) -> int:
    """Where the value of Thrift compact type ``kind`` at ``position`` ends."""
    if kind in (_TRUE, _FALSE):
        return position
    if kind in (_I16, _I32, _I64):
        return _varint_end(data, position)
    if kind in _FIXED:
        return position + _FIXED[kind]
    if kind == _BINARY:
        length, position = _varint(data, position)
        return position + length
    if depth >= MAX_DEPTH or kind not in (_LIST, _SET, _MAP, _STRUCT):
        raise Malformed(f"byte {position}: Thrift type {kind} at depth {depth} is not readable")
    if kind == _STRUCT:
        return _skip_struct(data, position, depth + 1)
    return _skip_container(data, position, kind, depth + 1)


def _skip_struct(data: bytes, position: int, depth: int) -> int:
    """Where the struct at ``position`` ends; its integers and binaries are skipped here,
    without a call each (most of a page header's fields are)."""
    while (header := data[position]) != 0:
        position += 1
        if header < 0x10:  # a long field id follows
            position = _varint_end(data, position)
        kind = header & 0x0F
        if kind in _INTEGERS:
            while data[position] & 0x80:
                position += 1
            position += 1
        elif kind == _BINARY:
            length, position = _varint(data, position)
            position += length
        elif kind not in (_TRUE, _FALSE):
            position = _skip(data, position, kind, depth)
    return position + 1


def _skip_container(data: bytes, position: int, kind: int, depth: int) -> int:
    """A list or set (count and type in one byte, or a varint count), or a map."""
    if kind == _MAP:
        count, position = _varint(data, position)
        if not count:
            return position
        kinds = data[position]
        position += 1
        for _ in range(count):
            position = _skip(data, position, kinds >> 4, depth)
            position = _skip(data, position, kinds & 0x0F, depth)
        return position
    header = data[position]
    count, element = header >> 4, header & 0x0F
    position += 1
    if count == 15:
        count, position = _varint(data, position)
    element = _BYTE if element in (_TRUE, _FALSE) else element
    for _ in range(count):
        position = _skip(data, position, element, depth)
    return position


def schema_elements(body: bytes, footer: int) -> int:
    """How many schema elements (columns, and the groups above them) the footer declares:
    the size of its ``schema`` list (its second field), read from the list's header without
    parsing the list."""
    position = len(body) - 8 - footer
    field = 0
    try:
        while (header := body[position]) != 0:
            field, position = _field_id(body, position + 1, header, field)
            kind = header & 0x0F
            if field == 2 and kind == _LIST:
                count = body[position] >> 4
                return _varint(body, position + 1)[0] if count == 15 else count
            position = _skip(body, position, kind, 0)
    except (IndexError, Malformed) as exc:
        raise _error(f"its footer cannot be read ({exc or 'it ends too soon'})") from None
    raise _error("its footer has no schema")


def _error(problem: str) -> DecodeError:
    return DecodeError(f"{PARQUET}: the body is not a readable Parquet file: {problem}")
