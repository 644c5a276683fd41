"""application/jsonlines: one instance per line (any form), errors naming the line, encoding."""

from __future__ import annotations

import re

import numpy as np
import orjson
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smserve.codecs.jsonlines import JsonLinesCodec
from smserve.errors import DecodeError
from smserve.media import JSONLINES, MediaType
from smserve.types import Features, Prediction
from tests.unit.codecs.text_bodies import (
    decode_or_client_error,
    dense_rows,
    json_instance,
    json_lines,
    matrices,
    mutations,
    sparse_instance,
    sparse_matrices,
)

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NAN = float("nan")
CODEC = JsonLinesCodec()


def decode(body: bytes) -> Features:
    features = CODEC.decode(body, MediaType(JSONLINES)).features
    assert features.dtype == np.float32
    return features


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(b'{"features": [1.5, 16.0]}', [[1.5, 16]], id="one line"),
        pytest.param(
            b'{"features": [1, 2]}\n{"data": {"features": {"values": [3, 4]}}}\n[5, null]\n',
            [[1, 2], [3, 4], [5, NAN]],
            id="mixed forms, trailing newline",
        ),
        pytest.param(b"[1, 2]\r\n\r\n[3, 4]\r\n", [[1, 2], [3, 4]], id="crlf and a blank line"),
        pytest.param(b"\n  \n[1, 2]\n\t\n", [[1, 2]], id="blank lines around"),
        pytest.param(b"\xef\xbb\xbf[1, 2]", [[1, 2]], id="byte order mark"),
    ],
)
def test_decode(body: bytes, expected: list[list[float]]) -> None:
    features = decode(body)
    assert isinstance(features, np.ndarray)
    np.testing.assert_array_equal(features, np.array(expected, dtype=np.float32))


def test_decode_sparse_lines() -> None:
    body = b'{"data": {"features": {"keys": [1], "shape": [3], "values": [2]}}}\n[1, 2, 3]\n'
    features = decode(body)
    assert isinstance(features, sp.csr_matrix)
    assert features.toarray().tolist() == [[0, 2, 0], [1, 2, 3]]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(
            b"[1, 2]\n\n[3,\n", "line 3: invalid JSON: unexpected end of data", id="bad json"
        ),
        pytest.param(b"[1, 2]\n{", "line 2: invalid JSON", id="bad last line"),
        pytest.param(b"[1, 2]\n[3]", "line 2: has 1 features but line 1 has 2", id="ragged"),
        pytest.param(b'[1]\n\n["x"]', "line 3: features[0] is a string", id="string value"),
        pytest.param(
            b"[1]\n7", "line 2: expected a list of numbers or an object", id="number line"
        ),
        pytest.param(
            b'{"instances": [[1]]}',
            'line 1: expected "features": [...] or "data"',
            id="json document",
        ),
        pytest.param(
            b"[1, 2] [3, 4]",
            "line 1: invalid JSON: unexpected content after document",
            id="two rows on a line",
        ),
        pytest.param(b"", "the body is empty", id="empty"),
        pytest.param(b"\n \r\n", "the body is empty", id="only blank lines"),
        pytest.param(b"[1]\n[\xff]", "line 2: invalid JSON", id="bad utf-8"),
    ],
)
def test_decode_rejects(body: bytes, message: str) -> None:
    with pytest.raises(DecodeError, match=re.escape(message)) as raised:
        decode(body)
    assert raised.value.message.startswith("application/jsonlines: ")


@PROPERTY
@given(matrices(infinity=False), st.data())
def test_dense_round_trip(matrix: np.ndarray, data: st.DataObject) -> None:
    forms = data.draw(st.lists(st.integers(0, 3), min_size=len(matrix), max_size=len(matrix)))
    lines = [json_instance(row, form) for row, form in zip(dense_rows(matrix), forms, strict=True)]
    body = json_lines(lines) + data.draw(st.sampled_from([b"", b"\n", b"\r\n"]))
    np.testing.assert_array_equal(decode(body), matrix)


@PROPERTY
@given(sparse_matrices(infinity=False))
def test_sparse_round_trip(matrix: sp.csr_matrix) -> None:
    features = decode(json_lines([sparse_instance(matrix, row) for row in range(matrix.shape[0])]))
    assert isinstance(features, sp.csr_matrix)
    np.testing.assert_array_equal(features.toarray(), matrix.toarray())


@PROPERTY
@given(st.binary(max_size=64))
def test_random_bytes_decode_or_raise_client_errors(body: bytes) -> None:
    decode_or_client_error(lambda b: CODEC.decode(b, MediaType(JSONLINES)), body)


BODY = (
    b'{"features": [1, 2]}\n[3, null]\n'
    b'{"data": {"features": {"keys": [0], "shape": [2], "values": [1]}}}'
)


@PROPERTY
@given(mutations(BODY))
def test_mutated_bodies_decode_or_raise_client_errors(body: bytes) -> None:
    decode_or_client_error(lambda b: CODEC.decode(b, MediaType(JSONLINES)), body)


def test_encode_writes_one_object_per_line() -> None:
    prediction = Prediction(
        {
            "closest_cluster": np.array([1, 2], dtype=np.float32),
            "distance_to_cluster": np.array([3.5, np.nan], dtype=np.float32),
        }
    )
    assert CODEC.encode(prediction) == (
        b'{"closest_cluster":1.0,"distance_to_cluster":3.5}\n'
        b'{"closest_cluster":2.0,"distance_to_cluster":null}\n'
    )


def test_encode_vectors_and_integers() -> None:
    prediction = Prediction(
        {"predicted_label": np.array([1, 0]), "probabilities": np.array([[0.25, 0.75], [1, 0]])}
    )
    lines = CODEC.encode(prediction).splitlines()
    assert [orjson.loads(line) for line in lines] == [
        {"predicted_label": 1, "probabilities": [0.25, 0.75]},
        {"predicted_label": 0, "probabilities": [1.0, 0.0]},
    ]


def test_encode_no_rows_is_empty() -> None:
    assert CODEC.encode(Prediction({"x": np.zeros(0, dtype=np.float32)})) == b""


def test_batch_mode_refuses_interior_blank_lines() -> None:
    body = b"[1, 2]\n\n[3, 4]\n\n"
    with pytest.raises(DecodeError, match="line 2 is empty"):
        JsonLinesCodec(records_per_line=True).decode(body, MediaType(JSONLINES))
    assert (
        JsonLinesCodec(records_per_line=True)
        .decode(b"[1, 2]\n[3, 4]\n\n", MediaType(JSONLINES))
        .n_rows
        == 2
    )
    assert JsonLinesCodec().decode(body, MediaType(JSONLINES)).n_rows == 2
