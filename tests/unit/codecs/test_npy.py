"""application/x-npy: np.save bodies in (every numeric dtype, both orders, 1-D and 2-D), the
header read and the declared shape charged before anything is allocated, hostile headers
refused; predictions out as np.load reads them."""

from __future__ import annotations

import io
import struct

import numpy as np
import pytest

from smserve.budget import MemoryBudget
from smserve.codecs.base import DecodeContext
from smserve.codecs.npy import NpyCodec
from smserve.errors import ClientError, DecodeError, NotAcceptable, PayloadTooLarge
from smserve.media import NPY, MediaType
from smserve.types import Prediction

CODEC = NpyCodec()
MEDIA = MediaType(NPY)


def saved(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def with_header(header: str, data: bytes = b"", version: int = 1) -> bytes:
    """A .npy body with a hand-written header dictionary (padded as numpy pads it)."""
    text = header.encode("latin1") + b"\n"
    size = struct.pack("<H", len(text)) if version == 1 else struct.pack("<I", len(text))
    return b"\x93NUMPY" + bytes([version, 0]) + size + text + data


DEFAULT_BUDGET = MemoryBudget()


def decode(body: bytes, budget: MemoryBudget = DEFAULT_BUDGET) -> np.ndarray:
    features = CODEC.decode(body, MEDIA, DecodeContext(budget=budget)).features
    assert isinstance(features, np.ndarray)
    assert features.dtype == np.float32
    assert features.flags.c_contiguous
    return features


ROWS = np.arange(12, dtype=np.float64).reshape(3, 4) / 4


@pytest.mark.parametrize(
    "dtype", ["<f4", ">f4", "<f8", ">f8", "<f2", "<i1", "<i4", ">i8", "<u2", "<u8", "|b1"]
)
def test_every_numeric_dtype_decodes_to_float32(dtype: str) -> None:
    array = (ROWS * 4 % 2 if dtype == "|b1" else ROWS * 4).astype(dtype)
    np.testing.assert_array_equal(decode(saved(array)), array.astype(np.float32))


def test_fortran_order_is_read_in_its_own_order() -> None:
    array = np.asfortranarray(ROWS.astype(np.float32))
    body = saved(array)
    assert b"'fortran_order': True" in body
    np.testing.assert_array_equal(decode(body), ROWS.astype(np.float32))


def test_a_one_dimensional_array_is_one_row() -> None:
    np.testing.assert_array_equal(decode(saved(np.array([1.5, 2, 3]))), [[1.5, 2, 3]])


def test_header_versions_2_and_3() -> None:
    data = ROWS.astype("<f4").tobytes()
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }"
    for version in (2, 3):
        np.testing.assert_array_equal(decode(with_header(header, data, version)), ROWS)


def test_nan_stays_a_missing_value_and_overflow_becomes_inf() -> None:
    features = decode(saved(np.array([[np.nan, 1e300]])))
    assert np.isnan(features[0, 0])
    assert np.isinf(features[0, 1])


def test_float32_rows_are_the_body_itself_unless_misaligned() -> None:
    body = saved(ROWS.astype(np.float32))
    assert np.shares_memory(decode(body), np.frombuffer(body, np.uint8))  # no copy at all
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }"  # 71 bytes: odd
    features = decode(with_header(header, ROWS.astype("<f4").tobytes()))
    assert features.flags.aligned
    np.testing.assert_array_equal(features, ROWS)


@pytest.mark.parametrize(
    ("shape", "needed"),
    [
        ("(1000000000000,)", 4 * 10**12),
        ("(1000000, 1000000)", 4 * 10**12),
        ("(4, 4611686018427387904)", 2**66),
    ],
)
def test_a_declared_shape_over_the_budget_is_413_before_reading(shape: str, needed: int) -> None:
    body = with_header(f"{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}")
    with pytest.raises(PayloadTooLarge) as caught:
        decode(body, MemoryBudget(cap_bytes=64 * 2**20))
    assert f"needs {needed} bytes" in caught.value.message


@pytest.mark.parametrize(
    ("array", "words"),
    [
        (np.array([["a", "b"]]), "'<U1'"),
        (np.array([[1 + 2j]]), "'<c16'"),
        (np.array([[1]], dtype="datetime64[s]"), "'<M8[s]'"),
        (np.zeros(2, dtype=[("a", "<f4"), ("b", "<f4")]), "are not accepted"),
    ],
)
def test_non_numeric_dtypes_are_refused(array: np.ndarray, words: str) -> None:
    with pytest.raises(DecodeError, match="send numbers") as caught:
        decode(saved(array))
    assert words in caught.value.message


def test_object_arrays_are_refused_without_unpickling() -> None:
    buffer = io.BytesIO()
    np.save(buffer, np.array([[1, None]], dtype=object), allow_pickle=True)
    with pytest.raises(DecodeError, match="'\\|O' are not accepted"):
        decode(buffer.getvalue())


def test_a_subarray_dtype_is_refused() -> None:
    header = "{'descr': [('', '<f4', (3,))], 'fortran_order': False, 'shape': (2,), }"
    with pytest.raises(DecodeError, match="send numbers"):
        decode(with_header(header, bytes(24)))


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"", "not a readable .npy"),
        (b"1,2,3\n", "not a readable .npy"),
        (saved(ROWS)[:9], "not a readable .npy"),  # magic, version, half the length
        (saved(ROWS)[:40], "not a readable .npy"),  # the header cut short
        (saved(ROWS)[:-1], "is truncated: the header declares 12 values of '<f8' (96 bytes)"),
        (saved(ROWS) + b"\0", "has extra bytes"),
        (with_header("{'descr': '<f4', 'shape': (1,), }", bytes(4)), "not a readable .npy"),
        (with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 2), }"), "(-1, 2)"),
        (with_header(f"{{'descr': '<f4', 'pad': '{'x' * 20000}'}}", version=2), "readable"),
        (b"\x93NUMPY\x09\x00" + bytes(8), "version (9, 0) is not supported"),
    ],
)
def test_malformed_bodies_are_400(body: bytes, words: str) -> None:
    with pytest.raises(DecodeError) as caught:
        decode(body)
    assert words in caught.value.message


@pytest.mark.parametrize(
    "array", [np.zeros(()), np.zeros((2, 2, 2)), np.zeros((0, 4)), np.zeros((3, 0)), np.zeros(0)]
)
def test_arrays_that_are_not_rows_of_features_are_400(array: np.ndarray) -> None:
    with pytest.raises(DecodeError, match="shape"):
        decode(saved(array))


def loaded(prediction: Prediction) -> np.ndarray:
    return np.load(io.BytesIO(CODEC.encode(prediction)), allow_pickle=False)


def test_one_scalar_output_is_a_vector() -> None:
    scores = np.array([0.25, 0.75], dtype=np.float32)
    answer = loaded(Prediction({"score": scores}))
    assert answer.dtype == np.float32
    np.testing.assert_array_equal(answer, scores)


def test_several_outputs_are_the_csv_columns() -> None:
    prediction = Prediction(
        {
            "closest_cluster": np.array([1.0, 0.0], dtype=np.float32),
            "distance_to_cluster": np.array([0.5, 2.0], dtype=np.float32),
        }
    )
    np.testing.assert_array_equal(loaded(prediction), [[1.0, 0.5], [0.0, 2.0]])


def test_vector_outputs_and_spread_columns_come_in_csv_order() -> None:
    contributions = np.arange(12, dtype=np.float32).reshape(2, 3, 2)
    prediction = Prediction(
        {
            "contributions": contributions,
            "probabilities": np.array([[0.1, 0.9], [0.6, 0.4]], dtype=np.float32),
            "label": np.array([1, 0], dtype=np.int64),
        },
        columns=("contributions",),
    )
    answer = loaded(prediction)
    assert answer.shape == (2, 2 + 1 + 6)
    assert answer.dtype == np.float64
    np.testing.assert_allclose(answer[:, :3], [[0.1, 0.9, 1], [0.6, 0.4, 0]], rtol=1e-7)
    np.testing.assert_array_equal(answer[:, 3:], contributions.reshape(2, 6))


def test_text_outputs_are_406() -> None:
    with pytest.raises(NotAcceptable, match="'label' holds"):
        CODEC.encode(Prediction({"label": np.array(["a", "b"])}))


def test_round_trip_through_the_sdk_format() -> None:
    rows = np.random.default_rng(7).normal(size=(50, 5)).astype(np.float32)
    np.testing.assert_array_equal(decode(saved(rows)), rows)


@pytest.mark.parametrize(
    "header",
    [
        "{'descr': '<f4', 'fortran_order': )False, 'shape': (2, 4), }",  # TokenError
        "{'descr': ',<f4', 'fortran_order': False, 'shape': (2, 4), }",  # SyntaxError
        "{'descr': '<f4', 'fortran_order': False,B'shape': (2, 4), }",  # TypeError
        "{'descr': '<f4',, 'fortran_order': False,, 'shape': (2, 4), }",  # bench/fuzz seed 7
        "{'descr': " + "(" * 3000 + ")" * 3000 + "}",  # deeply nested
    ],
)
def test_a_mangled_header_is_400_whatever_numpy_raises(header: str) -> None:
    """numpy evaluates the header with ast.literal_eval: each of these raised something other
    than ValueError, which was a 500 (found by bench/fuzz)."""
    with pytest.raises(DecodeError, match="not a readable .npy array"):
        decode(with_header(header, b"\0" * 32))


def test_random_mutations_of_a_header_are_never_more_than_a_client_error() -> None:
    rng = np.random.default_rng(7)
    good = saved(ROWS.astype(np.float32))
    alphabet = b",:'()[]{} 0123456789-eE.<>|B"
    for _ in range(3000):
        body = bytearray(good)
        for _ in range(int(rng.integers(1, 5))):
            position = int(rng.integers(8, 100))
            body[position] = alphabet[int(rng.integers(len(alphabet)))]
        try:
            decode(bytes(body))
        except ClientError:  # a 4xx: what a client mistake may cost, never more
            pass
