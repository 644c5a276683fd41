"""RecordioCodec: application/x-recordio-protobuf requests and responses.

Requests: one ``aialgs.data.Record`` per row (see ``recordio_records`` for what a row may
be). Bodies of canonical dense rows, which is what the SageMaker SDK writes, take the
vectorised reader in ``recordio_fast``; everything else takes the general per-record reader.
Both give identical results. Responses: one Record per prediction row (``recordio_writer``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from smserve import media
from smserve.codecs.base import UNNAMED, DecodeContext
from smserve.codecs.recordio_fast import decode_dense
from smserve.codecs.recordio_records import decode_general
from smserve.codecs.recordio_writer import encode_prediction
from smserve.types import Batch, Features, FloatArray, Prediction

__all__ = ["RecordioCodec", "read_records"]


def read_records(body: bytes) -> tuple[Features, FloatArray | None]:
    """Features and labels of a RecordIO-protobuf body.

    features : float32 ndarray of shape (n_records, n_features), C-contiguous, or a float32
        CSR matrix of that shape when any record is sparse.
    labels : float32 ndarray of shape (n_records,) from ``label["values"]`` when every record
        has a scalar label there, else None.

    Raises DecodeError (naming the byte offset or record index) for a malformed body.
    """
    dense = decode_dense(body)
    return dense if dense is not None else decode_general(body)


def _locate(row: int, column: int) -> str:
    return f"record {row + 1}, column {column + 1}"


class RecordioCodec:
    """Decoder and encoder for ``application/x-recordio-protobuf``; it takes no parameters."""

    media_type = media.RECORDIO
    chunked = False  # records join, but are written at memory speed: nothing to overlap
    parameters: Mapping[str, frozenset[str] | None] = MappingProxyType({})

    def decode(
        self, body: bytes, media: media.MediaType, context: DecodeContext = UNNAMED
    ) -> Batch:
        features, _ = read_records(body)
        return Batch(features, _locate)

    def encode(self, prediction: Prediction) -> bytes:
        return encode_prediction(prediction)
