"""RecordIO-protobuf against the real SageMaker SDK (2.x): schema wire compatibility, the
public test vectors checked against the SDK's reader, and SDK writers/readers round trips."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from google.protobuf import descriptor_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from smserve.codecs.recordio.codec import RecordioCodec, read_records
from smserve.codecs.recordio.fast import decode_dense
from smserve.codecs.recordio.records import decode_general
from smserve.codecs.recordio.schema import Record, file_descriptor
from smserve.errors import DecodeError
from smserve.types import Prediction

common = pytest.importorskip("sagemaker.amazon.common")
record_pb2 = pytest.importorskip("sagemaker.amazon.record_pb2")

pytestmark = pytest.mark.sdk
CODEC = RecordioCodec()
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --- schema -----------------------------------------------------------------------------------


def test_schema_messages_equal_the_sdk_descriptor() -> None:
    theirs = descriptor_pb2.FileDescriptorProto()
    record_pb2.DESCRIPTOR.CopyToProto(theirs)
    ours = file_descriptor()
    assert ours.package == theirs.package == "aialgs.data"
    assert {m.name: m for m in ours.message_type} == {m.name: m for m in theirs.message_type}


def _fill(message: Any) -> Any:
    features, label = message.features, message.label
    features["values"].float32_tensor.values.extend([1.5, -0.0, float("nan"), 3e38])
    features["sparse"].float64_tensor.values.extend([2.5, 4.0])
    features["sparse"].float64_tensor.keys.extend([1, 2**40])
    features["sparse"].float64_tensor.shape.extend([2**41])
    features["ints"].int32_tensor.values.extend([-1, 0, 2**31 - 1])
    features["raw"].bytes.value.extend([b"\x00\x01", b""])
    features["raw"].bytes.content_type = "image/png"
    label["values"].int32_tensor.values.append(7)
    message.uid, message.metadata, message.configuration = "id-1", "meta", '{"a": 1}'
    return message


def test_schema_bytes_equal_the_sdk_for_the_same_content() -> None:
    ours = _fill(Record()).SerializeToString(deterministic=True)
    theirs = _fill(record_pb2.Record()).SerializeToString(deterministic=True)
    assert ours == theirs
    assert Record.FromString(theirs).SerializeToString(deterministic=True) == theirs


# --- public test vectors ----------------------------------------------------------------------

# file -> (shape, sparse, has labels); values are checked against the SDK's reader
GOOD_VECTORS = {
    "sdk_dense_mnist_100x784_f32.pbr": ((100, 784), False, False),
    "sdk_sparse_nips_350x12419_f32.pbr": ((350, 12419), True, False),
    "xgb_dense_int32_5x5_labels.pb": ((5, 5), False, True),
    "xgb_sparse_int32_5x5_labels.pb": ((5, 5), True, True),
    "xgb_empty_f64_row_with_label.pb": ((1, 1), True, True),
    "mlio_complete_5x3_f32_labels.pr": ((5, 3), False, True),
    "mlio_int32_3x3_labels.pbr": ((3, 3), False, True),
    "sparse_edge_cases/dense_as_sparse.pbr": ((3, 3), True, True),
    "sparse_edge_cases/diagonal.pbr": ((3, 3), True, True),
    "sparse_edge_cases/rectangular_sparse.pbr": ((4, 3), True, True),
    "sparse_edge_cases/single_value_bot_left.pbr": ((3, 3), True, True),
    "sparse_edge_cases/single_value_bot_right.pbr": ((3, 3), True, True),
    "sparse_edge_cases/single_value_center.pbr": ((3, 3), True, True),
    "sparse_edge_cases/single_value_top_left.pbr": ((3, 3), True, True),
    "sparse_edge_cases/single_value_top_right.pbr": ((3, 3), True, True),
}
MULTIPART = "mlio_multipart_5x3_f32_labels.pr"
BAD_VECTORS = ["bad_not_a_record_10.recordio", "bad_mlio_corrupted_multipart.pr"]


@pytest.fixture(scope="module")
def recordio_dir(vectors_dir: Path) -> Path:
    return vectors_dir / "recordio"


def test_every_vector_is_covered(recordio_dir: Path) -> None:
    files = {str(p.relative_to(recordio_dir)) for p in recordio_dir.rglob("*") if p.is_file()}
    files.discard("README.md")
    assert files == {*GOOD_VECTORS, MULTIPART, *BAD_VECTORS}


def _tensor(value: Any) -> Any:
    return getattr(value, value.WhichOneof("value"))


def _reference_row(record: Any) -> tuple[np.ndarray, list[int] | None]:
    """The row the SDK's Record holds, densified (absent -> 0), and its keys if sparse."""
    tensor = _tensor(record.features["values"])
    if len(tensor.keys) or (len(tensor.shape) and not len(tensor.values)):
        row = np.zeros(tensor.shape[0])
        row[list(tensor.keys)] = list(tensor.values)
        return row, list(tensor.keys)
    return np.array(tensor.values, dtype=np.float64), None


def _reference(body: bytes) -> tuple[np.ndarray, list[list[int] | None], np.ndarray]:
    records = common.read_records(io.BytesIO(body))
    rows, keys = zip(*(_reference_row(r) for r in records), strict=True)
    labels = [_tensor(r.label["values"]).values[0] for r in records if "values" in r.label]
    return np.vstack(rows).astype(np.float32), list(keys), np.array(labels, dtype=np.float32)


def _dense(features: Any) -> np.ndarray:
    return features.toarray() if sp.issparse(features) else np.asarray(features)


@pytest.mark.parametrize("name", sorted(GOOD_VECTORS))
def test_good_vectors_match_the_sdk_reader(recordio_dir: Path, name: str) -> None:
    body = (recordio_dir / name).read_bytes()
    shape, sparse, has_labels = GOOD_VECTORS[name]
    features, labels = read_records(body)
    expected, keys, expected_labels = _reference(body)
    assert features.shape == shape
    assert features.dtype == np.float32
    assert sp.issparse(features) == sparse
    np.testing.assert_array_equal(_dense(features), expected)
    if isinstance(features, sp.csr_matrix):
        stored = np.split(features.indices, features.indptr[1:-1])
        for row, (indices, row_keys) in enumerate(zip(stored, keys, strict=True)):
            assert row_keys is None or indices.tolist() == row_keys, row
    assert (labels is not None) == has_labels
    if labels is not None:
        np.testing.assert_array_equal(labels, expected_labels)


def test_multipart_vector_equals_the_complete_one(recordio_dir: Path) -> None:
    split, _ = read_records((recordio_dir / MULTIPART).read_bytes())
    complete, _ = read_records((recordio_dir / "mlio_complete_5x3_f32_labels.pr").read_bytes())
    np.testing.assert_array_equal(split, complete)


@pytest.mark.parametrize("name", BAD_VECTORS)
def test_bad_vectors_are_rejected(recordio_dir: Path, name: str) -> None:
    with pytest.raises(DecodeError, match="byte offset"):
        read_records((recordio_dir / name).read_bytes())


# --- SDK serializers and deserializers ----------------------------------------------------------


@pytest.mark.parametrize(
    "array",
    [
        pytest.param(np.array([1.5, 16.0, 14.0, 23.0], dtype=np.float32), id="1-D float32"),
        pytest.param(np.arange(58, dtype=np.float32).reshape(2, 29) / 7, id="float32 n=29"),
        pytest.param(np.array([[0.1, 2.0], [3.0, np.nan]]), id="float64"),
        pytest.param(np.array([[1, -2, 3], [2**31 - 1, 0, -(2**31)]]), id="int64"),
    ],
)
def test_record_serializer_output_decodes(array: np.ndarray) -> None:
    body = common.RecordSerializer().serialize(array).read()
    features, labels = read_records(body)
    np.testing.assert_array_equal(features, np.atleast_2d(array).astype(np.float32))
    assert labels is None
    fast = decode_dense(body)
    assert (fast is not None) == (array.dtype.kind == "f")  # int64 goes out as int32 varints
    if fast is not None:
        np.testing.assert_array_equal(fast[0], decode_general(body)[0])


def test_encoder_output_reads_back_with_record_deserializer() -> None:
    prediction = Prediction(
        {
            "closest_cluster": np.array([1.0, 2.0], dtype=np.float32),
            "distance_to_cluster": np.array([3.0, np.nan], dtype=np.float32),
            "scores": np.array([[0.1, 0.9], [0.5, 0.5]]),
        }
    )
    body = CODEC.encode(prediction)
    records = common.RecordDeserializer().deserialize(io.BytesIO(body), CODEC.media_type)
    assert len(records) == 2
    first, second = records
    assert first.label["closest_cluster"].float32_tensor.values[0] == 1.0
    assert first.label["distance_to_cluster"].float32_tensor.values[0] == 3.0
    assert np.isnan(second.label["distance_to_cluster"].float32_tensor.values[0])
    np.testing.assert_allclose(list(second.label["scores"].float32_tensor.values), [0.5, 0.5])
    assert all(len(r.features) == 0 for r in records)


# --- hypothesis round trips through the SDK writers ---------------------------------------------

floats32 = st.floats(width=32, allow_nan=True, allow_infinity=True)
dense_matrices = hnp.arrays(
    np.float32, hnp.array_shapes(min_dims=2, max_dims=2, max_side=40), elements=floats32
)


@PROPERTY
@given(matrix=dense_matrices, with_labels=st.booleans())
def test_sdk_dense_writer_round_trips(matrix: np.ndarray, with_labels: bool) -> None:
    labels = np.arange(matrix.shape[0], dtype=np.float32) if with_labels else None
    buffer = io.BytesIO()
    common.write_numpy_to_dense_tensor(buffer, matrix, labels)
    body = buffer.getvalue()
    features, read_labels = read_records(body)
    np.testing.assert_array_equal(features, matrix)
    if with_labels:
        np.testing.assert_array_equal(read_labels, labels)
    fast, general = decode_dense(body), decode_general(body)
    assert fast is not None  # the SDK's layout takes the vectorised reader ...
    np.testing.assert_array_equal(fast[0], general[0])  # ... which agrees with the general one
    np.testing.assert_array_equal(fast[1], general[1])


@st.composite
def sparse_matrices(draw: st.DrawFn) -> sp.csr_matrix:
    rows = draw(st.integers(1, 20))
    cols = draw(st.integers(1, 300))
    density = draw(st.floats(0.0, 1.0))
    seed = draw(st.integers(0, 2**32 - 1))
    matrix = sp.random(rows, cols, density=density, format="csr", dtype=np.float32, rng=seed)
    return matrix


@PROPERTY
@given(matrix=sparse_matrices())
def test_sdk_sparse_writer_round_trips(matrix: sp.csr_matrix) -> None:
    buffer = io.BytesIO()
    common.write_spmatrix_to_sparse_tensor(buffer, matrix)
    features, _ = read_records(buffer.getvalue())
    assert isinstance(features, sp.csr_matrix)
    assert features.shape == matrix.shape
    np.testing.assert_array_equal(features.indptr, matrix.indptr)
    np.testing.assert_array_equal(features.indices, matrix.indices)
    np.testing.assert_array_equal(features.data, matrix.data)
