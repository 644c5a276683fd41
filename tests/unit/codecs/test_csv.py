"""text/csv: decode (fast path and tolerant fallback), errors with row/column, encode formatting."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from smserve.codecs.csv import CsvCodec
from smserve.errors import DecodeError
from smserve.media import CSV, MediaType
from smserve.types import Prediction
from tests.unit.codecs.text_bodies import csv_body, decode_or_client_error, matrices, mutations

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NAN = float("nan")
INF = float("inf")
CODEC = CsvCodec()


def decode(body: bytes) -> np.ndarray:
    features = CODEC.decode(body, MediaType(CSV)).features
    assert isinstance(features, np.ndarray)
    assert features.dtype == np.float32
    assert features.flags.c_contiguous
    return features


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(b"1,2\n3,4", [[1, 2], [3, 4]], id="two rows"),
        pytest.param(b"1,2\n3,4\n", [[1, 2], [3, 4]], id="trailing newline"),
        pytest.param(b"1,2\r\n3,4\r\n", [[1, 2], [3, 4]], id="crlf"),
        pytest.param(b"1,2\n\n3,4\n\n", [[1, 2], [3, 4]], id="blank lines"),
        pytest.param(b"1,2\n  \t\n3,4", [[1, 2], [3, 4]], id="line of spaces"),
        pytest.param(b" 1 , 2 \n3,\t4", [[1, 2], [3, 4]], id="spaces around numbers"),
        pytest.param(b"0.5", [[0.5]], id="one value"),
        pytest.param(b"1\n2\n3", [[1], [2], [3]], id="one column"),
        pytest.param(b"1.5,16.0,14.0,23.0", [[1.5, 16, 14, 23]], id="one row"),
        pytest.param(b"1e3,-2.5E-2,+7,.5", [[1000, -0.025, 7, 0.5]], id="number syntax"),
        pytest.param(b"inf,-inf,nan,NaN", [[INF, -INF, NAN, NAN]], id="inf and nan"),
        pytest.param(b"1e39,-1e39", [[INF, -INF]], id="beyond float32 is inf"),
        pytest.param(b"\xef\xbb\xbf1,2", [[1, 2]], id="byte order mark"),
        pytest.param(b"1,,3\n4,5,6", [[1, NAN, 3], [4, 5, 6]], id="empty field"),
        pytest.param(b",2\n3,", [[NAN, 2], [3, NAN]], id="empty first and last fields"),
        pytest.param(b",,,\n1,2,3,4", [[NAN] * 4, [1, 2, 3, 4]], id="row of empty fields"),
        pytest.param(b"1,\r\n,2\r\n", [[1, NAN], [NAN, 2]], id="empty fields with crlf"),
        pytest.param(
            b"1,,3\n\n \n4,5,", [[1, NAN, 3], [4, 5, NAN]], id="empty fields, blank lines"
        ),
    ],
)
def test_decode(body: bytes, expected: list[list[float]]) -> None:
    np.testing.assert_array_equal(decode(body), np.array(expected, dtype=np.float32))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(b"1,2\n3,abc", "row 2, column 2: could not convert 'abc'", id="bad cell"),
        pytest.param(b"a,b\n1,2", "row 1, column 1: could not convert 'a'", id="header row"),
        pytest.param(
            b"1,,3\nx,2,3", "row 2, column 1: could not convert 'x'", id="bad cell, tolerant"
        ),
        pytest.param(b"1,2\n\n3,x", "row 3, column 2", id="rows count blank lines"),
        pytest.param(b"1,2\n3,4,5", "row 2 has 3 columns but row 1 has 2", id="ragged"),
        pytest.param(b"1,2\n3", "row 2 has 1 columns but row 1 has 2", id="short row"),
        pytest.param(b"1,,2\n3,4", "row 2 has 2 columns but row 1 has 3", id="ragged, tolerant"),
        pytest.param(b"1, ,2", "row 1, column 2: could not convert ' '", id="field of spaces"),
        pytest.param(b'"1",2', "row 1, column 1", id="quoted"),
        pytest.param(b"1;2\n3;4", "row 1, column 1: could not convert '1;2'", id="semicolons"),
        pytest.param(b"1,2 # note", "row 1, column 2", id="no comments"),
        pytest.param(b"1,1_0", "row 1, column 2", id="underscore"),
        pytest.param(b"1,0x10", "row 1, column 2", id="hex"),
        pytest.param(b"1,2\n3\r4,5", "row 2, column 1", id="carriage return in a row"),
        pytest.param(b"1,\x002", "row 1, column 2", id="nul byte"),
        pytest.param(b"", "the body is empty", id="empty"),
        pytest.param(b" \r\n\t\n", "the body is empty", id="only whitespace"),
        pytest.param(b"1,2\xff", "not valid UTF-8 (byte 3", id="bad utf-8"),
    ],
)
def test_decode_rejects(body: bytes, message: str) -> None:
    with pytest.raises(DecodeError, match=re.escape(message)):
        decode(body)


def test_messages_start_with_the_media_type() -> None:
    with pytest.raises(DecodeError) as error:
        decode(b"1,2\n3,abc")
    assert error.value.message == "text/csv: row 2, column 2: could not convert 'abc' to a number"


def test_label_size_and_charset_parameters_are_accepted() -> None:
    assert CODEC.parameters["label_size"] == frozenset({"0", "1"})
    assert "utf-8" in (CODEC.parameters["charset"] or ())
    np.testing.assert_array_equal(
        CODEC.decode(b"1,2", MediaType(CSV, {"label_size": "1"})).features, [[1, 2]]
    )


@PROPERTY
@given(
    matrices(),
    st.sampled_from(["repr", "shortest"]),
    st.booleans(),
    st.sampled_from(["\n", "\r\n"]),
)
def test_round_trip(matrix: np.ndarray, style: str, empty_nan: bool, eol: str) -> None:
    # One column: an empty field would be a blank line, which is skipped, so write "nan".
    body = csv_body(matrix, style, empty_nan and matrix.shape[1] > 1, eol)
    np.testing.assert_array_equal(decode(body), matrix)


@PROPERTY
@given(st.binary(max_size=64))
def test_random_bytes_decode_or_raise_client_errors(body: bytes) -> None:
    decode_or_client_error(lambda b: CODEC.decode(b, MediaType(CSV)), body)


@PROPERTY
@given(st.data())
def test_mutated_bodies_decode_or_raise_client_errors(data: st.DataObject) -> None:
    body = csv_body(data.draw(matrices(max_rows=4, max_columns=4)))
    decode_or_client_error(lambda b: CODEC.decode(b, MediaType(CSV)), data.draw(mutations(body)))


def encode(**outputs: np.ndarray) -> bytes:
    return CODEC.encode(Prediction(outputs))


def reference(*outputs: np.ndarray) -> bytes:
    """The straightforward writer: repr of each promoted value, vectors as quoted lists."""

    def cell(value: object) -> str:
        if isinstance(value, list):
            inner = ", ".join(map(repr, value))
            return f'"[{inner}]"' if len(outputs) > 1 else ",".join(map(repr, value))
        return repr(value)

    columns = [o.astype(np.float64 if o.dtype.kind == "f" else np.int64).tolist() for o in outputs]
    return "".join(",".join(map(cell, row)) + "\n" for row in zip(*columns, strict=True)).encode()


@pytest.mark.parametrize(
    ("outputs", "expected"),
    [
        pytest.param(
            {"score": np.array([0.7338521, 1.0], dtype=np.float32)},
            b"0.7338520884513855\n1.0\n",
            id="float32 promoted",
        ),
        pytest.param(
            {
                "closest_cluster": np.array([1, 2], dtype=np.float32),
                "distance_to_cluster": np.array([3, 5], dtype=np.float32),
            },
            b"1.0,3.0\n2.0,5.0\n",
            id="k-means",
        ),
        pytest.param(
            {"score": np.array([[0.25, 0.75], [1, 0]], dtype=np.float32)},
            b"0.25,0.75\n1.0,0.0\n",
            id="one vector output: comma-joined",
        ),
        pytest.param(
            {
                "predicted_label": np.array([1, 0], dtype=np.int64),
                "probabilities": np.array([[0.25, 0.75], [0.5, 0.5]], dtype=np.float32),
            },
            b'1,"[0.25, 0.75]"\n0,"[0.5, 0.5]"\n',
            id="selectable output: quoted list",
        ),
        pytest.param(
            {
                "labels": np.array([[0, 1], [0, 1]], dtype=np.int32),
                "p": np.array([1, 0], dtype=np.uint8),
            },
            b'"[0, 1]",1\n"[0, 1]",0\n',
            id="integer vectors",
        ),
        pytest.param({"flag": np.array([True, False])}, b"1\n0\n", id="booleans as 0 and 1"),
        pytest.param(
            {"x": np.array([NAN, INF, -INF, -0.0], dtype=np.float32)},
            b"nan\ninf\n-inf\n-0.0\n",
            id="non-finite",
        ),
        pytest.param(
            {"x": np.array([1e-5, 1.5e-7, 1e-10, 1e-4, 1e16, 1e15], dtype=np.float64)},
            b"1e-05\n1.5e-07\n1e-10\n0.0001\n1e+16\n1000000000000000.0\n",
            id="exponent boundaries",
        ),
        pytest.param({"x": np.zeros(0, dtype=np.float32)}, b"", id="no rows"),
        pytest.param({"x": np.zeros((2, 0), dtype=np.float32)}, b"\n\n", id="empty vectors"),
    ],
)
def test_encode(outputs: dict[str, np.ndarray], expected: bytes) -> None:
    assert encode(**outputs) == expected


FLOAT_ARRAYS = st.one_of(
    hnp.arrays(np.float32, st.integers(1, 40), elements=st.floats(width=32)),
    hnp.arrays(np.float64, st.integers(1, 40), elements=st.floats()),
    hnp.arrays(np.float32, st.integers(1, 40)),  # any bit pattern, subnormals and NaNs included
)


@PROPERTY
@given(FLOAT_ARRAYS, hnp.arrays(np.float32, st.tuples(st.just(1), st.integers(1, 4))))
def test_encode_matches_reference(scalars: np.ndarray, vector_row: np.ndarray) -> None:
    vectors = np.repeat(vector_row, scalars.shape[0], axis=0)
    assert encode(x=scalars) == reference(scalars)
    assert encode(x=vectors) == reference(vectors)
    assert encode(x=scalars, v=vectors) == reference(scalars, vectors)


@PROPERTY
@given(matrices(max_rows=5, max_columns=5))
def test_encoded_matrix_decodes_to_the_same_values(matrix: np.ndarray) -> None:
    np.testing.assert_array_equal(decode(encode(x=matrix)), matrix)


def test_encode_rejects_non_numeric_outputs() -> None:
    with pytest.raises(TypeError):
        encode(label=np.array(["a", "b"]))


@pytest.mark.parametrize(
    ("body", "line", "rows"),
    [
        (b"1,2\n\n3,4\n", 2, 2),
        (b"\n1,2\n", 1, 1),
        (b"1,2\r\n \r\n3,4", 2, 2),
        (b"1,2\n3,4\n\n\n", None, 2),
    ],
    ids=["interior", "leading", "crlf-spaces", "trailing-only"],
)
def test_batch_mode_refuses_interior_blank_lines(body: bytes, line: int | None, rows: int) -> None:
    codec = CsvCodec(records_per_line=True)
    if line is None:
        assert codec.decode(body, MediaType(CSV)).n_rows == rows
    else:
        with pytest.raises(DecodeError, match=f"line {line} is empty"):
            codec.decode(body, MediaType(CSV))
    assert CsvCodec().decode(body, MediaType(CSV)).n_rows == rows  # outside batch: skipped
