"""Property tests: the vectorised reader agrees with the general one, any byte string
decodes or raises DecodeError, and the writer equals deterministic protobuf serialization."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from smserve.codecs.recordio.codec import read_records
from smserve.codecs.recordio.fast import decode_dense
from smserve.codecs.recordio.framing import read_payloads
from smserve.codecs.recordio.records import decode_general
from smserve.codecs.recordio.schema import Record
from smserve.codecs.recordio.writer import encode_prediction
from smserve.errors import DecodeError
from smserve.types import Batch, Prediction
from tests.unit.codecs.recordio_bodies import body_of, frame_bytes, record

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
KINDS = {np.float32: "float32_tensor", np.float64: "float64_tensor"}


def _canonical(matrix: np.ndarray, labels: np.ndarray | None) -> bytes:
    """What write_numpy_to_dense_tensor writes for float32/float64 ``matrix`` and labels."""
    payloads = []
    for index, row in enumerate(matrix):
        message = Record()
        getattr(message.features["values"], KINDS[matrix.dtype.type]).values.extend(row.tolist())
        if labels is not None:
            tensor = getattr(message.label["values"], KINDS[labels.dtype.type])
            tensor.values.append(labels[index].item())
        payloads.append(message.SerializeToString())
    return body_of(payloads)


@st.composite
def canonical_bodies(draw: st.DrawFn) -> tuple[bytes, np.ndarray]:
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    # widths around the varint boundaries: 4n or 8n crossing 128 and 16384 bytes
    n = draw(
        st.one_of(st.integers(1, 40), st.sampled_from([1, 15, 16, 28, 29, 31, 32, 2047, 2048]))
    )
    rows = draw(st.integers(1, 8))
    matrix = draw(hnp.arrays(dtype, (rows, n), elements=st.floats(width=32)))
    label_type = draw(st.sampled_from([None, np.float32, np.float64]))
    labels = None if label_type is None else (np.arange(rows) - 1.5).astype(label_type)
    return _canonical(matrix, labels), matrix


def _assert_same(fast: tuple[Any, Any], general: tuple[Any, Any]) -> None:
    assert isinstance(general[0], np.ndarray)
    np.testing.assert_array_equal(fast[0], general[0])
    assert fast[0].dtype == general[0].dtype == np.float32
    assert fast[0].flags.c_contiguous
    if general[1] is None:
        assert fast[1] is None
    else:
        np.testing.assert_array_equal(fast[1], general[1])


@PROPERTY
@given(case=canonical_bodies())
def test_vectorised_reader_takes_canonical_bodies_and_agrees(
    case: tuple[bytes, np.ndarray],
) -> None:
    body, matrix = case
    fast = decode_dense(body)
    assert fast is not None
    _assert_same(fast, decode_general(body))
    np.testing.assert_array_equal(fast[0], matrix.astype(np.float32))


def test_vectorised_reader_declines_other_layouts() -> None:
    assert decode_dense(body_of([record([1, 2], kind="int32_tensor")])) is None
    assert decode_dense(body_of([record([1.0, 2.0]), record([1.0, 2.0], key="x")])) is None
    assert decode_dense(body_of([record([1.0, 2.0]), record([1.0], keys=[0], shape=[2])])) is None
    assert decode_dense(body_of([record([1.0, 2.0])]) + b"\x00") is None
    assert decode_dense(body_of([record([1.0, 2.0], shape=[2])])) is None
    assert decode_dense(b"") is None


# --- any bytes: a result or a DecodeError, never another exception -------------------------------


def _mixed_body(rows: list[list[int]]) -> bytes:
    """Dense float32/float64/int32 rows and sparse rows, in turn."""
    payloads = [
        record(row, kind=["float32_tensor", "float64_tensor", "int32_tensor"][i % 3])
        if i % 4
        else record(row[:1], keys=[0], shape=[len(row)])
        for i, row in enumerate(rows)
    ]
    return body_of(payloads)


seed_bodies = st.one_of(
    canonical_bodies().map(lambda case: case[0]),
    st.lists(st.lists(st.integers(-5, 5), min_size=3, max_size=3), min_size=1, max_size=5).map(
        _mixed_body
    ),
)


@st.composite
def mutated_bodies(draw: st.DrawFn) -> bytes:
    body = bytearray(draw(seed_bodies))
    for _ in range(draw(st.integers(1, 3))):
        action = draw(st.sampled_from(["flip", "truncate", "insert", "delete"]))
        at = draw(st.integers(0, max(len(body) - 1, 0)))
        if action == "flip" and body:
            body[at] ^= 1 << draw(st.integers(0, 7))
        elif action == "truncate":
            del body[at:]
        elif action == "insert":
            body[at:at] = draw(st.binary(min_size=1, max_size=4))
        elif body:
            del body[at : at + draw(st.integers(1, 4))]
    return bytes(body)


def _check_any(body: bytes) -> None:
    try:
        features, labels = read_records(body)
    except DecodeError:
        return
    Batch(features)  # asserts float32, 2-D, C-contiguous
    assert labels is None or labels.shape == (features.shape[0],)
    fast = decode_dense(body)
    if fast is not None:
        _assert_same(fast, decode_general(body))
    if isinstance(features, sp.csr_matrix):
        assert features.indices.dtype == np.int32


@PROPERTY
@given(body=mutated_bodies())
def test_mutated_bodies_decode_or_raise_decode_error(body: bytes) -> None:
    _check_any(body)


@PROPERTY
@given(payloads=st.lists(st.binary(max_size=64), min_size=1, max_size=4))
def test_random_payloads_in_valid_frames_decode_or_raise_decode_error(
    payloads: list[bytes],
) -> None:
    _check_any(b"".join(frame_bytes(p) for p in payloads))


@PROPERTY
@given(body=st.binary(max_size=200))
def test_random_bytes_decode_or_raise_decode_error(body: bytes) -> None:
    _check_any(body)


# --- the writer ---------------------------------------------------------------------------------


@st.composite
def predictions(draw: st.DrawFn) -> dict[str, np.ndarray]:
    rows = draw(st.integers(0, 6))
    names = draw(st.lists(st.text(max_size=140), min_size=1, max_size=4, unique=True))
    outputs = {}
    for name in names:
        shape = draw(st.sampled_from([(rows,), (rows, draw(st.integers(0, 40)))]))
        outputs[name] = draw(hnp.arrays(np.float32, shape, elements=st.floats(width=32)))
    return outputs


def _expected_frames(outputs: dict[str, np.ndarray]) -> bytes:
    """Reference bytes: a Record is the concatenation of its label entries, written here one
    entry at a time in plain lexicographic key order (protobuf's C++ and pure-Python
    deterministic order; upb puts "ab" before "a", so it is not used as the reference)."""
    rows = next(iter(outputs.values())).shape[0]
    frames = []
    for row in range(rows):
        entries = []
        for name in sorted(outputs):
            message = Record()
            message.label[name].float32_tensor.SetInParent()
            message.label[name].float32_tensor.values.extend(
                np.atleast_1d(outputs[name][row]).tolist()
            )
            entries.append(message.SerializeToString())
        frames.append(frame_bytes(b"".join(entries)))
    return b"".join(frames)


@PROPERTY
@given(outputs=predictions())
def test_writer_equals_protobuf_with_sorted_keys(outputs: dict[str, np.ndarray]) -> None:
    assert encode_prediction(Prediction(outputs)) == _expected_frames(outputs)


@PROPERTY
@given(
    outputs=predictions().filter(
        lambda o: not any(a != b and b.startswith(a) for a in o for b in o)
    )
)
def test_writer_equals_deterministic_serialization(outputs: dict[str, np.ndarray]) -> None:
    # Without a key that prefixes another, every protobuf runtime's deterministic order agrees.
    rows = next(iter(outputs.values())).shape[0]
    expected = []
    for row in range(rows):
        message = Record()
        for name, values in outputs.items():
            message.label[name].float32_tensor.SetInParent()
            message.label[name].float32_tensor.values.extend(np.atleast_1d(values[row]).tolist())
        expected.append(frame_bytes(message.SerializeToString(deterministic=True)))
    assert encode_prediction(Prediction(outputs)) == b"".join(expected)


@pytest.mark.parametrize("rows", [1, 3])
def test_writer_output_reads_back(rows: int) -> None:
    outputs = {"score": np.linspace(0, 1, rows, dtype=np.float32)}
    body = encode_prediction(Prediction(outputs))
    messages = [Record.FromString(p) for p in _payloads(body)]
    assert [m.label["score"].float32_tensor.values[0] for m in messages] == outputs[
        "score"
    ].tolist()


def _payloads(body: bytes) -> list[bytes]:
    return [payload.parts[0] for payload in read_payloads(body)]
