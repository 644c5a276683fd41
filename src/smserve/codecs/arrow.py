"""Arrow IPC bodies, in and out: ``application/vnd.apache.arrow.stream`` (the streaming
format, what ``pyarrow.ipc.new_stream`` and Spark/Ray hand over) and
``application/vnd.apache.arrow.file`` (the random-access file format, ``.arrow``/Feather v2).

Decoding first reads what the body's messages declare (``arrow_sizes``: its rows, and the
bytes its compressed buffers inflate to) and charges it, with the decoded values, to the
request's memory budget; only then does pyarrow read the record batches. The column rule is
``codecs/columnar.py``'s. Encoding writes one column per output in the same format.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType

import pyarrow as pa  # type: ignore[import-untyped]

from smserve.budget import RequestBudget
from smserve.codecs.arrow_sizes import Declared, declared
from smserve.codecs.base import UNNAMED, DecodeContext
from smserve.codecs.columnar import (
    Selection,
    batch_from_table,
    count,
    select,
    table_from_prediction,
)
from smserve.errors import DecodeError
from smserve.media import ARROW_FILE, ARROW_STREAM, MediaType
from smserve.types import Batch, Prediction

# pyarrow parses a schema's flatbuffer into well under a byte per byte (measured: 60,000
# columns, 6.7 MB of metadata, 0.15 MB); charged generously, since it happens first.
SCHEMA_BYTES_PER_BYTE = 2


class ArrowCodec:
    """Decodes and encodes one Arrow IPC format: the stream (default) or, with
    ``file=True``, the file format. It takes no parameters."""

    parameters: Mapping[str, frozenset[str] | None] = MappingProxyType({})

    def __init__(self, file: bool = False) -> None:
        self.file = file
        self.media_type = ARROW_FILE if file else ARROW_STREAM
        self.chunked = False  # one stream or file

    def decode(self, body: bytes, media: MediaType, context: DecodeContext = UNNAMED) -> Batch:
        budget = context.budget.for_body(len(body))
        sizes = declared(body, self.media_type, self.file)
        budget.check(
            SCHEMA_BYTES_PER_BYTE * sizes.schema_bytes,
            f"{self.media_type}: the {sizes.schema_bytes}-byte schema",
        )
        try:
            batches, schema = self._batches(pa.BufferReader(body))
            selection = select(schema, self.media_type, context)
            self._check(sizes, selection, budget)
            table = pa.Table.from_batches(list(batches), schema)
        except (pa.ArrowException, OSError) as exc:
            raise DecodeError(
                f"{self.media_type}: the body is not a readable Arrow IPC "
                f"{'file' if self.file else 'stream'}: {exc}"
            ) from None
        return batch_from_table(table, self.media_type, context, selection)

    def _check(self, sizes: Declared, selection: Selection, budget: RequestBudget) -> None:
        """Charge the declared rows and inflated buffers before any batch is read."""
        needed = sizes.inflated + selection.decoded_bytes(sizes.rows)
        budget.check(
            needed,
            f"{self.media_type}: {count(sizes.rows, 'row')} of "
            f"{count(len(selection.names), 'column')} "
            f"(buffers inflating to {sizes.inflated} bytes)",
        )

    def _batches(self, source: pa.BufferReader) -> tuple[Iterator[pa.RecordBatch], pa.Schema]:
        if self.file:
            file = pa.ipc.open_file(source)
            return (file.get_batch(i) for i in range(file.num_record_batches)), file.schema
        stream = pa.ipc.open_stream(source)
        return iter(stream), stream.schema

    def encode(self, prediction: Prediction) -> bytes:
        table = table_from_prediction(prediction)
        sink = pa.BufferOutputStream()
        opener = pa.ipc.new_file if self.file else pa.ipc.new_stream
        with opener(sink, table.schema) as writer:
            writer.write_table(table)
        return bytes(sink.getvalue())
