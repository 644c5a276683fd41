"""application/x-parquet: a whole Parquet file as the body, in and out (``pyarrow.parquet``).

Decoding reads the file's columns by the rule of ``codecs/columnar.py``; row groups are read
with Arrow's threads. Nothing is read before the request's memory budget allows it: the
footer's length and column count are checked before pyarrow parses the footer, then the
schema picks the columns, then the rows the footer declares and the bytes the pages inflate
to (``parquet_sizes``) are checked before any data is read. Encoding writes one column per
output (see ``table_from_prediction``), Snappy-compressed as pandas and Spark write them.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]

from smserve.budget import RequestBudget
from smserve.codecs.base import UNNAMED, DecodeContext
from smserve.codecs.columnar import (
    Selection,
    batch_from_table,
    count,
    select,
    table_from_prediction,
)
from smserve.codecs.parquet_sizes import footer_length, inflated_bytes, schema_elements
from smserve.errors import DecodeError
from smserve.media import PARQUET, MediaType
from smserve.types import Batch, Prediction

# Measured with pyarrow 26: parsing a footer takes about one byte per footer byte, reading a
# column about 5 KiB beyond its values (its reader and builders), whatever its row count;
# both are charged from the footer's own declarations before pyarrow parses it.
FOOTER_BYTES_PER_BYTE = 2
COLUMN_BYTES = 8 * 1024


class ParquetCodec:
    """Decodes and encodes ``application/x-parquet``; it takes no parameters."""

    media_type = PARQUET
    chunked = False  # one file
    parameters: Mapping[str, frozenset[str] | None] = MappingProxyType({})

    def decode(self, body: bytes, media: MediaType, context: DecodeContext = UNNAMED) -> Batch:
        budget = context.budget.for_body(len(body))
        table, selection = read_parquet(body, context, budget)
        return batch_from_table(table, PARQUET, context, selection)

    def encode(self, prediction: Prediction) -> bytes:
        sink = pa.BufferOutputStream()
        pq.write_table(table_from_prediction(prediction), sink)
        return bytes(sink.getvalue())


def read_parquet(
    body: bytes, context: DecodeContext, budget: RequestBudget
) -> tuple[pa.Table, Selection]:
    """The table of a Parquet file's bytes and its feature columns; raises DecodeError (400)
    for a corrupt or truncated file, PayloadTooLarge (413) for one over ``budget``."""
    footer = footer_length(body)
    elements = schema_elements(body, footer)
    metadata_bytes = FOOTER_BYTES_PER_BYTE * footer + COLUMN_BYTES * elements
    budget.check(metadata_bytes, f"{PARQUET}: a footer declaring {elements} schema elements")
    try:
        file = pq.ParquetFile(pa.BufferReader(body))
        selection = select(file.schema_arrow, PARQUET, context)
        _check_declared(body, file.metadata, metadata_bytes, selection, budget)
        return file.read(), selection
    except (pa.ArrowException, OSError) as exc:
        raise DecodeError(f"{PARQUET}: the body is not a readable Parquet file: {exc}") from None


def _check_declared(
    body: bytes,
    metadata: pq.FileMetaData,
    metadata_bytes: int,
    selection: Selection,
    budget: RequestBudget,
) -> None:
    """Charge what the file declares: its rows, then the bytes its pages inflate to."""
    rows = metadata.num_rows
    what = f"{PARQUET}: {count(rows, 'row')} of {count(len(selection.names), 'column')}"
    fixed = metadata_bytes + selection.decoded_bytes(rows, growing=True)  # builders grow
    budget.check(fixed, what)
    inflated = inflated_bytes(body, metadata, budget.limit - fixed)
    budget.check(fixed + inflated, f"{what} (pages inflating to {inflated} bytes)")
