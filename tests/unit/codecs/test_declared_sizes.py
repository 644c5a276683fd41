"""Every decoder charges what a body declares to the request's memory budget before it
decompresses or allocates: tiny bombs, built here (the Arrow and Parquet ones by
``bench/hostile/hostile_bodies.py``, which writes the metadata by hand), against a small budget.

A body that only *declares* a huge size (its data is a few bytes) proves the order: were it
decompressed first, pyarrow would fail on the data (a 400) or try to allocate the size; the
budget's 413 comes before either."""

from __future__ import annotations

import io
import struct

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bench.hostile import hostile_bodies
from smserve import media
from smserve.budget import MemoryBudget
from smserve.codecs.arrow import ArrowCodec
from smserve.codecs.base import DecodeContext, Decoder
from smserve.codecs.csv import CsvCodec
from smserve.codecs.json import JsonCodec
from smserve.codecs.jsonlines import JsonLinesCodec
from smserve.codecs.libsvm import LibsvmCodec
from smserve.codecs.parquet import ParquetCodec
from smserve.codecs.recordio.codec import RecordioCodec
from smserve.codecs.recordio.writer import encode_prediction
from smserve.errors import DecodeError, InvalidInput, PayloadTooLarge
from smserve.media import MediaType
from smserve.types import Features, Prediction
from tests.unit.codecs.recordio_bodies import body_of, record

KIB = 1024
SMALL = DecodeContext(budget=MemoryBudget(cap_bytes=64 * KIB))  # every limit is 64 KiB


def decode(codec: Decoder, body: bytes, context: DecodeContext = SMALL) -> Features:
    return codec.decode(body, MediaType(codec.media_type), context).features


# Arrow IPC: compressed buffers' declared lengths, rows


@pytest.mark.parametrize("codec", ["zstd", "lz4"])
@pytest.mark.parametrize("file", [False, True], ids=["stream", "file"])
def test_a_compressed_arrow_buffer_is_charged_before_it_is_inflated(codec: str, file: bool) -> None:
    honest = hostile_bodies.arrow_bomb(256 * KIB, codec, file)  # really inflates to 256 KiB
    with pytest.raises(PayloadTooLarge, match="buffers inflating to 262144 bytes"):
        decode(ArrowCodec(file), honest)
    lying = hostile_bodies.arrow_bomb(1 << 40, codec, file, lie=True)  # declares 1 TiB, holds 64 B
    with pytest.raises(PayloadTooLarge, match="buffers inflating to 1099511627776 bytes"):
        decode(ArrowCodec(file), lying)
    assert decode(ArrowCodec(file), honest, DecodeContext()).shape == (32 * KIB, 1)


def test_rows_a_record_batch_declares_are_charged() -> None:
    table = pa.table({"f0": np.zeros(16 * KIB)})  # 16,384 rows: 128 KiB of float64
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    with pytest.raises(PayloadTooLarge, match="16384 rows of 1 column"):
        decode(ArrowCodec(), bytes(sink.getvalue()))


@pytest.mark.parametrize(
    ("patch", "problem"),
    [
        (lambda body: body[:-12], "declares a [0-9]+-byte body"),
        (lambda body: body[:4] + struct.pack("<I", 1 << 30) + body[8:], "declares 1073741824"),
    ],
    ids=["truncated", "metadata-length"],
)
def test_arrow_metadata_that_does_not_add_up_is_400(patch: object, problem: str) -> None:
    body = hostile_bodies.arrow_bomb(4 * KIB)
    with pytest.raises(DecodeError, match=f"not a readable Arrow IPC stream: .*{problem}"):
        decode(ArrowCodec(), patch(body))  # type: ignore[operator]


# Parquet: the footer, the rows, the pages


def test_a_parquet_page_is_charged_before_it_is_inflated() -> None:
    honest = hostile_bodies.parquet_page_bomb(256 * KIB)
    with pytest.raises(PayloadTooLarge, match="3 rows of 1 column .pages inflating to 262144"):
        decode(ParquetCodec(), honest)
    # declares 2 GiB, inflates to 24 B
    lying = hostile_bodies.parquet_page_bomb((1 << 31) - 1, lie=True)
    with pytest.raises(PayloadTooLarge, match="pages inflating to 2147483647 bytes"):
        decode(ParquetCodec(), lying)
    assert np.asarray(decode(ParquetCodec(), honest, DecodeContext())).tolist() == [[0.0]] * 3


def test_a_footer_of_many_columns_is_charged_before_pyarrow_parses_it() -> None:
    body = hostile_bodies.parquet_wide(40)  # 41 schema elements at 8 KiB each: 328 KiB
    with pytest.raises(PayloadTooLarge, match="a footer declaring 41 schema elements"):
        decode(ParquetCodec(), body)


def test_rows_a_parquet_footer_declares_are_charged() -> None:
    with pytest.raises(PayloadTooLarge, match="1000000000000 rows of 50 columns"):
        decode(ParquetCodec(), hostile_bodies.parquet_rows_lie(10**12), DecodeContext())


@pytest.mark.parametrize("compression", ["snappy", "gzip", "lz4", "zstd", "brotli", "none"])
def test_real_files_of_every_codec_fit_their_budget(compression: str) -> None:
    """The codec's bound where it has one, the page headers where it has not: either way a
    real file is read, and its pages are counted (ZSTD's and Brotli's are walked)."""
    table = pa.table({f"f{i}": np.arange(1000, dtype=np.float64) * i for i in range(5)})
    sink = io.BytesIO()
    pq.write_table(table, sink, compression=compression, data_page_size=2000)  # several pages
    got = decode(ParquetCodec(), sink.getvalue(), DecodeContext())
    np.testing.assert_array_equal(got, np.column_stack(table.columns).astype(np.float32))


def test_a_page_past_its_column_chunk_is_400() -> None:
    body = hostile_bodies.parquet_page_bomb(4 * KIB, lie=True, chunk_short=1)
    with pytest.raises(DecodeError, match="runs past its column chunk"):
        decode(ParquetCodec(), body, DecodeContext())


def test_a_footer_longer_than_the_file_is_400() -> None:
    body = hostile_bodies.parquet_wide(2)
    lying = body[:-8] + struct.pack("<I", len(body)) + b"PAR1"
    with pytest.raises(DecodeError, match="its footer declares .* more than the file holds"):
        decode(ParquetCodec(), lying)


# Text and JSON: charged by their size, CSV and libsvm by their widths too


def test_csv_wider_than_the_model_is_refused_before_parsing() -> None:
    row = b",".join([b"1"] * 1_000_000)  # a million fields: seconds to parse
    with pytest.raises(InvalidInput, match="^expected 50 features, got 1000000$"):
        decode(CsvCodec(), row, DecodeContext(n_features=50))


def test_a_csv_row_too_wide_for_arrow_takes_the_numpy_path() -> None:
    """Arrow's reader keeps about 5 KiB per column: 4,000 columns take numpy's (same values)."""
    rows = b"\n".join([b",".join([b"0.5"] * 4000)] * 40) + b"\n"  # 640 KB: Arrow's size
    got = decode(CsvCodec(), rows, DecodeContext())
    assert got.shape == (40, 4000)
    assert (got == 0.5).all()


@pytest.mark.parametrize(
    ("codec", "body"),
    [
        (CsvCodec(), b"1,2,3\n" * 20_000),
        (JsonCodec(), b"[" + b",".join([b"[1,2,3]"] * 20_000) + b"]"),
        (JsonLinesCodec(), b"[1,2,3]\n" * 20_000),
        (LibsvmCodec(), b"0:1 1:2 2:3\n" * 20_000),
    ],
    ids=["csv", "json", "jsonlines", "libsvm"],
)
def test_text_bodies_are_charged_before_they_are_parsed(codec: Decoder, body: bytes) -> None:
    with pytest.raises(PayloadTooLarge, match=f"^{codec.media_type}: .* over the 65536-byte"):
        decode(codec, body)
    assert decode(codec, body, DecodeContext()).shape == (20_000, 3)


def test_recordio_is_charged_before_its_records_are_parsed() -> None:
    body = encode_prediction(Prediction({"score": np.zeros(5000, np.float32)}))
    with pytest.raises(PayloadTooLarge, match="^application/x-recordio-protobuf: a "):
        decode(RecordioCodec(), body)


@pytest.mark.parametrize(
    ("codec", "body"),
    [
        (LibsvmCodec(), b"0:1 2000000000:1\n"),
        (
            JsonCodec(),
            b'[{"data": {"features": {"keys": [0], "values": [1], "shape": [2000000000]}}}]',
        ),
    ],
    ids=["libsvm", "json"],
)
def test_a_huge_sparse_width_is_charged_unless_the_model_bounds_it(
    codec: Decoder, body: bytes
) -> None:
    with pytest.raises(PayloadTooLarge, match="a sparse batch 2000000001 wide|2000000000 wide"):
        decode(codec, body, DecodeContext())  # no column count: the width is what it says
    bounded = decode(codec, body, DecodeContext(n_features=50))  # the model refuses it later
    assert bounded.shape[1] >= 2_000_000_000


def test_recordio_sparse_width_is_charged() -> None:
    body = body_of([record([1.0], keys=[0], shape=[2_000_000_000])])
    with pytest.raises(PayloadTooLarge, match="a sparse batch 2000000000 wide"):
        decode(RecordioCodec(), body, DecodeContext())
    assert decode(RecordioCodec(), body, DecodeContext(n_features=10)).shape[1] == 2_000_000_000


def test_tiny_bodies_get_the_floor() -> None:
    """A one-row body of any format decodes under the default budget's floor."""
    table = pa.table({f"f{i}": [float(i)] for i in range(50)})
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    assert decode(ParquetCodec(), sink.getvalue(), DecodeContext()).shape == (1, 50)
    assert decode(CsvCodec(), b"1," * 49 + b"1\n", DecodeContext()).shape == (1, 50)


def test_budget_reaches_the_codecs_from_the_settings() -> None:
    """The service builds the context once per worker from Settings."""
    from smserve.config import Settings
    from smserve.service import InferenceService
    from tests.fakes import EchoAlgorithm, fake_registry

    settings = Settings(request_memory_bytes=32 * KIB, request_memory_ratio=8)
    service = InferenceService(EchoAlgorithm(), fake_registry(), settings)
    assert service.context.budget == MemoryBudget(32 * KIB, 8)
    assert media.CSV in fake_registry().decodable
