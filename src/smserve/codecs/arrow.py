"""Arrow IPC bodies, in and out: ``application/vnd.apache.arrow.stream`` (the streaming
format, what ``pyarrow.ipc.new_stream`` and Spark/Ray hand over) and
``application/vnd.apache.arrow.file`` (the random-access file format, ``.arrow``/Feather v2).

Decoding reads the record batches one at a time, counting values as it goes (a compressed
body that decodes to far more values is a 413), then applies the column rule of
``codecs/columnar.py``. Encoding writes one column per output in the same format.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from types import MappingProxyType

import pyarrow as pa  # type: ignore[import-untyped]

from smserve.codecs.base import UNNAMED, DecodeContext
from smserve.codecs.columnar import batch_from_table, check_size, table_from_prediction
from smserve.errors import DecodeError
from smserve.media import ARROW_FILE, ARROW_STREAM, MediaType
from smserve.types import Batch, Prediction


class ArrowCodec:
    """Decodes and encodes one Arrow IPC format: the stream (default) or, with
    ``file=True``, the file format. It takes no parameters."""

    parameters: Mapping[str, frozenset[str] | None] = MappingProxyType({})

    def __init__(self, file: bool = False) -> None:
        self.file = file
        self.media_type = ARROW_FILE if file else ARROW_STREAM
        self.chunked = False  # one stream or file

    def decode(self, body: bytes, media: MediaType, context: DecodeContext = UNNAMED) -> Batch:
        return batch_from_table(self.read(body), self.media_type, context)

    def read(self, body: bytes) -> pa.Table:
        """The table of an IPC body; raises DecodeError (400) for a corrupt or truncated
        body and PayloadTooLarge (413) for one that decodes to too many values."""
        try:
            batches, schema = self._batches(pa.BufferReader(body))
            return pa.Table.from_batches(self._bounded(batches, body), schema)
        except (pa.ArrowException, OSError) as exc:
            raise DecodeError(
                f"{self.media_type}: the body is not a readable Arrow IPC "
                f"{'file' if self.file else 'stream'}: {exc}"
            ) from None

    def _batches(self, source: pa.BufferReader) -> tuple[Iterator[pa.RecordBatch], pa.Schema]:
        if self.file:
            file = pa.ipc.open_file(source)
            return (file.get_batch(i) for i in range(file.num_record_batches)), file.schema
        stream = pa.ipc.open_stream(source)
        return iter(stream), stream.schema

    def _bounded(self, batches: Iterable[pa.RecordBatch], body: bytes) -> list[pa.RecordBatch]:
        kept, values = [], 0
        for batch in batches:
            values += batch.num_rows * batch.num_columns
            check_size(values, body, self.media_type)
            kept.append(batch)
        return kept

    def encode(self, prediction: Prediction) -> bytes:
        table = table_from_prediction(prediction)
        sink = pa.BufferOutputStream()
        opener = pa.ipc.new_file if self.file else pa.ipc.new_stream
        with opener(sink, table.schema) as writer:
            writer.write_table(table)
        return bytes(sink.getvalue())
