"""Parquet and Arrow IPC (stream and file) bodies: files written by pandas and pyarrow as a
user would, the column-name rule, types, nulls, bad files, and predictions identical to CSV
through the real service with real models (a named XGBoost model, an unnamed one, k-means)."""

from __future__ import annotations

import decimal
import io
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import xgboost as xgb

from smserve import media
from smserve.algorithms.kmeans.algorithm import KMeans
from smserve.algorithms.loading import load_algorithm
from smserve.codecs import default_registry
from smserve.codecs.arrow import ArrowCodec
from smserve.codecs.base import DecodeContext
from smserve.codecs.columnar import TILE_ROWS, batch_from_table
from smserve.codecs.parquet import ParquetCodec
from smserve.config import Settings
from smserve.errors import DecodeError, InvalidInput, PayloadTooLarge
from smserve.media import MediaType
from smserve.service import InferenceService
from smserve.types import Prediction

NAMES = ("age", "income", "tenure", "score")
Writer = Callable[[pa.Table], bytes]


def parquet_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def stream_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=2)  # several record batches
    return bytes(sink.getvalue())


def file_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=2)
    return bytes(sink.getvalue())


FORMATS = [
    pytest.param(media.PARQUET, parquet_bytes, id="parquet"),
    pytest.param(media.ARROW_STREAM, stream_bytes, id="arrow-stream"),
    pytest.param(media.ARROW_FILE, file_bytes, id="arrow-file"),
]
CODECS = {
    media.PARQUET: ParquetCodec(),
    media.ARROW_STREAM: ArrowCodec(),
    media.ARROW_FILE: ArrowCodec(file=True),
}


def decode(content_type: str, body: bytes, names: tuple[str, ...] = NAMES) -> np.ndarray:
    batch = CODECS[content_type].decode(body, MediaType(content_type), DecodeContext(names))
    assert batch.features.dtype == np.float32
    assert batch.features.flags.c_contiguous
    return np.asarray(batch.features)


@pytest.fixture
def frame(model_features: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame(model_features[:6], columns=list(NAMES))


@pytest.mark.parametrize(("content_type", "write"), FORMATS)
def test_columns_are_taken_in_the_models_order(
    content_type: str, write: Writer, frame: pd.DataFrame
) -> None:
    shuffled = frame[["tenure", "score", "age", "income"]]
    body = write(pa.Table.from_pandas(shuffled, preserve_index=False))
    np.testing.assert_array_equal(decode(content_type, body), frame.to_numpy(np.float32))


@pytest.mark.parametrize(("content_type", "write"), FORMATS)
def test_a_model_without_names_takes_columns_by_position(
    content_type: str, write: Writer, frame: pd.DataFrame
) -> None:
    by_position = write(pa.Table.from_pandas(frame, preserve_index=False))
    np.testing.assert_array_equal(decode(content_type, by_position, ()), frame.to_numpy())
    renamed = frame.set_axis(["f2", "f0", "f3", "f1"], axis=1)  # names mean nothing to it
    body = write(pa.Table.from_pandas(renamed, preserve_index=False))
    np.testing.assert_array_equal(decode(content_type, body, ()), frame.to_numpy())


@pytest.mark.parametrize(("content_type", "write"), FORMATS)
def test_a_model_whose_own_names_are_f0_onwards_takes_columns_by_name(
    content_type: str, write: Writer, frame: pd.DataFrame
) -> None:
    own = ("f0", "f1", "f2", "f3")
    renamed = frame.set_axis(list(own), axis=1)[["f2", "f0", "f3", "f1"]]
    body = write(pa.Table.from_pandas(renamed, preserve_index=False))
    np.testing.assert_array_equal(decode(content_type, body, own), frame.to_numpy())


@pytest.mark.parametrize(("content_type", "write"), FORMATS)
def test_an_id_in_place_of_a_feature_column_is_400_naming_both(
    content_type: str, write: Writer, frame: pd.DataFrame
) -> None:
    """The silent wrong answer the name rule prevents: four columns, one of them an id where
    f3 should be. By position this would predict on the id."""
    swapped = frame.set_axis(["f0", "f1", "f2", "id"], axis=1)
    body = write(pa.Table.from_pandas(swapped, preserve_index=False))
    expected = "feature column 'f3' is missing, and 'id' is not a model feature column"
    with pytest.raises(InvalidInput, match=expected):
        decode(content_type, body, ("f0", "f1", "f2", "f3"))


@pytest.mark.parametrize(("content_type", "write"), FORMATS)
def test_missing_columns_are_named_with_how_many_more(
    content_type: str, write: Writer, frame: pd.DataFrame
) -> None:
    body = write(pa.Table.from_pandas(frame[["age"]], preserve_index=False))
    with pytest.raises(InvalidInput, match="feature column 'income' is missing \\(and 2 more\\);"):
        decode(content_type, body)


@pytest.mark.parametrize(("content_type", "write"), FORMATS)
def test_every_numeric_type_converts(content_type: str, write: Writer) -> None:
    table = pa.table(
        {
            "age": pa.array([1, -2, None], pa.int8()),
            "income": pa.array([2**64 - 1, 7, 0], pa.uint64()),
            "tenure": pa.array([True, None, False]),
            "score": pa.array([decimal.Decimal("1.25"), None, decimal.Decimal("-3.5")]),
        }
    )
    expected = np.array(
        [[1, 2.0**64, 1, 1.25], [-2, 7, np.nan, np.nan], [np.nan, 0, 0, -3.5]], np.float32
    )
    np.testing.assert_array_equal(decode(content_type, write(table)), expected)


@pytest.mark.parametrize(("content_type", "write"), FORMATS)
@pytest.mark.parametrize(
    "dtype", ["int16", "int32", "int64", "uint8", "uint32", "float16", "float32", "float64"]
)
def test_pandas_dtypes_with_nulls(
    content_type: str, write: Writer, dtype: str, frame: pd.DataFrame
) -> None:
    nullable = pd.api.types.is_integer_dtype(dtype)
    column = pd.array(
        [1, None, 3, 4, 5, 6],
        dtype=dtype.replace("uint", "UInt").replace("int", "Int") if nullable else dtype,
    )
    frame = frame.assign(income=column)
    got = decode(content_type, write(pa.Table.from_pandas(frame, preserve_index=False)))
    np.testing.assert_array_equal(got[:, 1], np.array([1, np.nan, 3, 4, 5, 6], np.float32))


@pytest.mark.parametrize("kind", [pa.float32(), pa.float64(), pa.int8()])
def test_nulls_in_chunks_that_start_mid_byte_of_their_validity_bits(kind: pa.DataType) -> None:
    """Chunks sliced from a longer array (Arrow streams hold such): offsets 3 and 11."""
    raw = [float(i) if i % 3 else None for i in range(20)]
    whole = pa.array(raw, type=pa.float64()).cast(kind)
    column = pa.chunked_array([whole.slice(3, 6), whole.slice(11, 9)])
    table = pa.table({name: column for name in NAMES})
    got = batch_from_table(table, media.ARROW_STREAM, DecodeContext()).features
    expected = np.array([np.nan if v is None else v for v in raw[3:9] + raw[11:20]], np.float32)
    np.testing.assert_array_equal(got[:, 0], expected)


ROWS = 3 * TILE_ROWS + 123


@pytest.mark.parametrize(
    "cuts",
    [
        pytest.param([0, TILE_ROWS + 1, TILE_ROWS + 1, ROWS], id="tiles-with-an-empty-chunk"),
        pytest.param([0, 5, 9, 300, TILE_ROWS + 1, ROWS], id="small-chunks-column-by-column"),
    ],
)
def test_tables_taller_than_a_tile_in_batches_that_do_not_line_up_keep_every_cell(
    cuts: list[int],
) -> None:
    """Over several tiles, with two columns chunked at ``cuts`` and the others whole (so the
    record batches are slices at those rows), every cell lands in its own row and column, in
    the model's column order. Three chunks in 12,411 rows are written batch by batch in tiles
    (float columns) and column by column (the others); five chunks, column by column."""
    rows = ROWS
    rng = np.random.default_rng(7)
    values = rng.normal(size=(rows, 5)) * 1000
    nulls = rng.random(rows) < 0.1
    columns = {
        "f32": pa.array(values[:, 0].astype(np.float32)),
        "f64": pa.array(values[:, 1]),
        "i64": pa.array(np.rint(values[:, 2]).astype(np.int64)),
        "nulls": pa.array(values[:, 3].astype(np.float32), mask=nulls),
        "dict": pa.array(np.rint(values[:, 4] / 100)).dictionary_encode(),
    }
    table = pa.table(
        {
            name: pa.chunked_array([column.slice(a, b - a) for a, b in pairwise(cuts)])
            if name in ("f64", "dict")
            else column
            for name, column in columns.items()
        }
    )
    order = ("dict", "f32", "nulls", "i64", "f64")
    got = batch_from_table(table, media.PARQUET, DecodeContext(order)).features
    expected = np.column_stack(
        [
            np.rint(values[:, 4] / 100),
            values[:, 0].astype(np.float32),
            np.where(nulls, np.nan, values[:, 3].astype(np.float32)),
            np.rint(values[:, 2]),
            values[:, 1],
        ]
    ).astype(np.float32)
    assert got.flags.c_contiguous
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize(("content_type", "write"), FORMATS)
@pytest.mark.parametrize(
    ("table", "message", "error"),
    [
        (
            pa.table({"age": [1.0], "income": [2.0], "tenure": [3.0]}),
            "feature column 'score' is missing",
            InvalidInput,
        ),
        (
            pa.table({n: [1.0] for n in (*NAMES, "id", "label")}),
            "'id', 'label' are not model features",
            InvalidInput,
        ),
        (pa.table({**{n: [1.0] for n in NAMES[:3]}, "score": ["x"]}), "'score' holds", DecodeError),
        (
            pa.table({**{n: [1.0] for n in NAMES[:3]}, "score": [[1.0]]}),
            "'score' holds",
            DecodeError,
        ),
        (pa.table({n: pa.array([], pa.float64()) for n in NAMES}), "no rows", InvalidInput),
    ],
    ids=["missing", "extra", "string", "nested", "no-rows"],
)
def test_bad_columns_are_400_naming_them(
    content_type: str, write: Writer, table: pa.Table, message: str, error: type[Exception]
) -> None:
    with pytest.raises(error, match=message) as caught:
        decode(content_type, write(table))
    assert getattr(caught.value, "status", 0) == 400


@pytest.mark.parametrize(("content_type", "write"), FORMATS)
def test_corrupt_and_truncated_bodies_are_400(
    content_type: str, write: Writer, frame: pd.DataFrame
) -> None:
    body = write(pa.Table.from_pandas(frame, preserve_index=False))
    for bad in (body[: len(body) // 2], body[:-9], b"not a table", b"", body[:8] * 3):
        with pytest.raises(DecodeError, match=f"^{content_type}: the body is not a readable"):
            decode(content_type, bad)


def test_decompression_bomb_is_413() -> None:
    table = pa.table({name: np.zeros(2_000_000, np.float32) for name in NAMES})
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    assert len(sink.getvalue()) < 100_000  # 8 million zeros compress to almost nothing
    with pytest.raises(PayloadTooLarge, match="2000000 rows of 4 columns .* over the "):
        decode(media.PARQUET, sink.getvalue())


@pytest.mark.parametrize(("content_type", "write"), FORMATS)
def test_encoder_writes_one_column_per_output(content_type: str, write: Writer) -> None:
    prediction = Prediction(
        {
            "label": np.array([1, 0, 1], np.int64),
            "score": np.array([0.5, np.nan, 0.25], np.float32),
            "probabilities": np.array([[0.5, 0.5], [0.9, 0.1], [0.25, 0.75]], np.float32),
            "contributions": np.arange(12, dtype=np.float32).reshape(3, 2, 2),
        }
    )
    body = CODECS[content_type].encode(prediction)
    reader = pq.read_table if content_type == media.PARQUET else pa.ipc.open_stream
    if content_type == media.ARROW_FILE:
        table = pa.ipc.open_file(body).read_all()
    elif content_type == media.ARROW_STREAM:
        table = reader(body).read_all()
    else:
        table = reader(pa.BufferReader(body))
    assert table.column_names == ["label", "score", "probabilities", "contributions"]
    assert table.schema.field("probabilities").type == pa.list_(pa.float32(), 2)
    frame = table.to_pandas()
    assert frame["label"].tolist() == [1, 0, 1]
    np.testing.assert_array_equal(frame["score"], [0.5, np.nan, 0.25])
    assert np.stack(frame["probabilities"]).tolist() == prediction.outputs["probabilities"].tolist()
    assert np.stack(table.column("contributions").to_pylist()).shape == (3, 2, 2)


# Through the service, with real models


@pytest.fixture
def named_xgb_dir(tmp_path: Path, model_features: np.ndarray) -> Path:
    dtrain = xgb.DMatrix(model_features, label=model_features[:, 0] > 0, feature_names=NAMES)
    params = {"objective": "binary:logistic", "max_depth": 2, "nthread": 1, "seed": 0}
    booster = xgb.train(params, dtrain, num_boost_round=4)
    (tmp_path / "xgboost-model").write_bytes(bytes(booster.save_raw("json")))
    return tmp_path


def serve(model_dir: Path) -> InferenceService:
    settings = Settings(model_dir=model_dir, xgboost_device="cpu")
    return InferenceService(load_algorithm(settings), default_registry(settings), settings)


def csv_of(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(header=False, index=False, na_rep="").encode()


@pytest.mark.parametrize(("content_type", "write"), FORMATS)
def test_predictions_equal_csvs_for_the_same_rows(
    content_type: str,
    write: Writer,
    named_xgb_dir: Path,
    xgb_binary_dir: Path,
    frame: pd.DataFrame,
) -> None:
    frame.iloc[2, 1] = np.nan
    shuffled = pa.Table.from_pandas(
        frame[["score", "tenure", "income", "age"]], preserve_index=False
    )
    for model_dir, body in [
        (named_xgb_dir, write(shuffled)),  # by name, whatever the order
        (xgb_binary_dir, write(pa.Table.from_pandas(frame, preserve_index=False))),  # by position
    ]:
        service = serve(model_dir)
        columnar = service.invoke(body, content_type, media.CSV)
        csv = service.invoke(csv_of(frame), media.CSV, media.CSV)
        assert columnar is not None
        assert csv is not None
        assert columnar.body == csv.body


def test_kmeans_refuses_nulls_naming_row_and_column(kmeans_centroids: np.ndarray) -> None:
    settings = Settings()
    service = InferenceService(KMeans(kmeans_centroids), default_registry(settings), settings)
    table = pa.table({f"f{i}": [1.0, None if i == 2 else 1.0] for i in range(4)})
    with pytest.raises(InvalidInput, match="^row 2, column 'f2': the value is missing"):
        service.invoke(parquet_bytes(table), media.PARQUET, media.JSON)


def test_infinity_in_a_column_is_named(named_xgb_dir: Path) -> None:
    table = pa.table({name: [1.0, np.inf if name == "tenure" else 0.0] for name in NAMES})
    with pytest.raises(DecodeError, match="^application/x-parquet: row 2, column 'tenure': "):
        serve(named_xgb_dir).invoke(parquet_bytes(table), media.PARQUET, media.JSON)


def test_a_pandas_users_parquet_file_is_the_body(
    tmp_path: Path, named_xgb_dir: Path, frame: pd.DataFrame
) -> None:
    """What a Spark or pandas user does: write the frame to a file, send the file's bytes,
    read the answer back as a table (no SDK)."""
    path = tmp_path / "out" / "part-0000.parquet"
    path.parent.mkdir()
    frame.to_parquet(path)  # a RangeIndex is metadata, not a column
    body = path.read_bytes()
    reply = serve(named_xgb_dir).invoke(body, media.PARQUET, media.PARQUET)
    assert reply is not None
    assert reply.media_type == media.PARQUET
    answer = pd.read_parquet(io.BytesIO(reply.body))
    booster = xgb.Booster()
    booster.load_model(bytearray((named_xgb_dir / "xgboost-model").read_bytes()))
    expected = booster.predict(xgb.DMatrix(frame))
    np.testing.assert_allclose(answer["score"], expected, rtol=1e-6)
