"""Codecs, one module per format, and the default registry that lists them explicitly."""

from __future__ import annotations

from smserve.codecs.base import Decoder, Encoder
from smserve.codecs.registry import CodecRegistry
from smserve.config import Settings

__all__ = ["CodecRegistry", "Decoder", "Encoder", "default_registry"]


def default_registry(settings: Settings) -> CodecRegistry:
    """Every format the server speaks. Adding a format means adding its codec here."""
    # The columnar casts import it at their first use; the server loads it now, with its
    # codecs, so that no request waits for it (34 ms).
    import pyarrow.compute  # type: ignore[import-untyped]  # noqa: F401

    from smserve.codecs.arrow import ArrowCodec
    from smserve.codecs.csv import CsvCodec
    from smserve.codecs.json import JsonCodec
    from smserve.codecs.jsonlines import JsonLinesCodec
    from smserve.codecs.libsvm import LibsvmCodec
    from smserve.codecs.npy import NpyCodec
    from smserve.codecs.parquet import ParquetCodec
    from smserve.codecs.recordio.codec import RecordioCodec

    csv = CsvCodec(records_per_line=settings.batch_mode)
    jsonlines = JsonLinesCodec(records_per_line=settings.batch_mode)
    json = JsonCodec(one_per_line=settings.batch_mode)
    libsvm = LibsvmCodec(index_base=settings.libsvm_index_base)
    recordio = RecordioCodec()
    parquet, arrow, arrow_file = ParquetCodec(), ArrowCodec(), ArrowCodec(file=True)
    npy = NpyCodec()
    return CodecRegistry(
        decoders=[csv, json, jsonlines, libsvm, recordio, parquet, arrow, arrow_file, npy],
        encoders=[json, jsonlines, csv, recordio, parquet, arrow, arrow_file, npy],
    )
