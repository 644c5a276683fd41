"""application/x-parquet: a whole Parquet file as the body, in and out (``pyarrow.parquet``).

Decoding reads the file's columns by the rule of ``codecs/columnar.py``; row groups are read
with Arrow's threads. The size recorded in the footer is checked before any data is read, so
a small file that would decompress to far more values is a 413. Encoding writes one column
per output (see ``table_from_prediction``), Snappy-compressed as pandas and Spark write them.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]

from smserve.codecs.base import UNNAMED, DecodeContext
from smserve.codecs.columnar import batch_from_table, check_size, table_from_prediction
from smserve.errors import DecodeError
from smserve.media import PARQUET, MediaType
from smserve.types import Batch, Prediction


class ParquetCodec:
    """Decodes and encodes ``application/x-parquet``; it takes no parameters."""

    media_type = PARQUET
    chunked = False  # one file
    parameters: Mapping[str, frozenset[str] | None] = MappingProxyType({})

    def decode(self, body: bytes, media: MediaType, context: DecodeContext = UNNAMED) -> Batch:
        return batch_from_table(read_parquet(body), PARQUET, context)

    def encode(self, prediction: Prediction) -> bytes:
        sink = pa.BufferOutputStream()
        pq.write_table(table_from_prediction(prediction), sink)
        return bytes(sink.getvalue())


def read_parquet(body: bytes) -> pa.Table:
    """The whole table of a Parquet file's bytes; raises DecodeError (400) for a corrupt or
    truncated file and PayloadTooLarge (413) for one that decodes to too many values."""
    try:
        file = pq.ParquetFile(pa.BufferReader(body))
        metadata = file.metadata
        check_size(metadata.num_rows * metadata.num_columns, body, PARQUET)
        return file.read()
    except (pa.ArrowException, OSError) as exc:
        raise DecodeError(f"{PARQUET}: the body is not a readable Parquet file: {exc}") from None
