"""RecordioCodec: application/x-recordio-protobuf requests and responses.

Requests: one ``aialgs.data.Record`` per row (see ``recordio.records`` for what a row may
be). Bodies of canonical dense rows, which is what the SageMaker SDK writes, take the
vectorised reader in ``recordio.fast``; everything else takes the general per-record reader.
Both give identical results. Responses: one Record per prediction row (``recordio.writer``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from smserve import media
from smserve.budget import UNLIMITED, RequestBudget
from smserve.codecs.base import UNNAMED, DecodeContext
from smserve.codecs.recordio.fast import decode_dense
from smserve.codecs.recordio.records import FRAMED_BYTES_PER_BYTE, decode_general
from smserve.codecs.recordio.writer import encode_prediction
from smserve.scipy_sparse import sparse as sp
from smserve.types import Batch, Features, FloatArray, Prediction

__all__ = ["RecordioCodec", "read_records"]


def read_records(
    body: bytes, budget: RequestBudget = UNLIMITED
) -> tuple[Features, FloatArray | None]:
    """Features and labels of a RecordIO-protobuf body.

    features : float32 ndarray of shape (n_records, n_features), C-contiguous, or a float32
        CSR matrix of that shape when any record is sparse.
    labels : float32 ndarray of shape (n_records,) from ``label["values"]`` when every record
        has a scalar label there, else None.

    Raises DecodeError (naming the byte offset or record index) for a malformed body, and
    PayloadTooLarge when the general reader's records are over ``budget``.
    """
    dense = decode_dense(body)
    return dense if dense is not None else decode_general(body, budget)


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
        budget = context.budget.for_body(len(body))
        needed = FRAMED_BYTES_PER_BYTE * len(body)  # what framing it costs, at most
        budget.check(needed, f"{self.media_type}: a {len(body)}-byte body")
        features, _ = read_records(body, budget)
        if sp.issparse(features):  # its arrays are the records' entries; charge the width
            context.check_sparse_width(int(features.shape[1]), budget, self.media_type)
        return Batch(features, _locate)

    def encode(self, prediction: Prediction) -> bytes:
        return encode_prediction(prediction)
