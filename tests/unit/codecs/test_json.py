"""application/json: every instance form, sparse rules, errors naming the instance, encoding."""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import orjson
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from smserve.codecs.json import JsonCodec
from smserve.errors import ClientError, DecodeError, InvalidInput
from smserve.media import JSON, MediaType
from smserve.types import Features, Prediction
from tests.unit.codecs.text_bodies import (
    decode_or_client_error,
    dense_rows,
    json_instance,
    matrices,
    mutations,
    sparse_instance,
    sparse_matrices,
)

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NAN = float("nan")
CODEC = JsonCodec()


def decode(document: Any) -> Features:
    body = document if isinstance(document, bytes) else orjson.dumps(document)
    features = CODEC.decode(body, MediaType(JSON)).features
    assert features.dtype == np.float32
    return features


def dense(document: Any) -> np.ndarray:
    features = decode(document)
    assert isinstance(features, np.ndarray)
    assert features.flags.c_contiguous
    return features


def sparse_features(keys: Any, values: list[Any], shape: Any = (5,)) -> dict[str, Any]:
    features = {"keys": keys, "values": values}
    if shape is not None:
        features["shape"] = list(shape) if isinstance(shape, tuple) else shape
    return {"data": {"features": features}}


ROW = [1.5, 16.0, 14.0, 23.0]


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        pytest.param({"instances": [{"features": ROW}]}, [ROW], id="k-means features"),
        pytest.param(
            {"instances": [{"data": {"features": {"values": ROW}}}]},
            [ROW],
            id="data.features.values",
        ),
        pytest.param({"instances": [{"data": {"features": ROW}}]}, [ROW], id="data.features list"),
        pytest.param(
            {"instances": [{"data": {"features": {"values": [1, 2], "shape": [2]}}}]},
            [[1, 2]],
            id="values with a matching shape",
        ),
        pytest.param(
            {"instances": [{"features": [1, 2], "configuration": {"k": 3}, "label": 7}]},
            [[1, 2]],
            id="other members ignored",
        ),
        pytest.param(
            {"instances": [[1, 2], {"features": [3, 4]}, {"data": {"features": [5, 6]}}]},
            [[1, 2], [3, 4], [5, 6]],
            id="mixed forms",
        ),
        pytest.param([[1, 2], [3, 4]], [[1, 2], [3, 4]], id="SDK JSONSerializer rows"),
        pytest.param([1, 2, 3], [[1, 2, 3]], id="flat list is one row"),
        pytest.param([None, 2], [[NAN, 2]], id="flat list starting with null"),
        pytest.param(
            {"instances": [[1, 2], [3, 4]]}, [[1, 2], [3, 4]], id="bare rows in instances"
        ),
        pytest.param([[1, None], [None, 4]], [[1, NAN], [NAN, 4]], id="null is missing"),
        pytest.param([[1e300, -1e300, 5e-50]], [[np.inf, -np.inf, 0]], id="beyond float32"),
        pytest.param(b"[[1180591620717411303424, -3]]", [[2.0**70, -3]], id="big integers"),
        pytest.param(b"\xef\xbb\xbf[[1, 2]]", [[1, 2]], id="byte order mark"),
    ],
)
def test_decode_dense(document: Any, expected: list[list[float]]) -> None:
    np.testing.assert_array_equal(dense(document), np.array(expected, dtype=np.float32))


def test_decode_sparse_instance() -> None:
    features = decode({"instances": [sparse_features([26, 182], [1, 4], (2000,))]})
    assert isinstance(features, sp.csr_matrix)
    assert features.shape == (1, 2000)
    assert features.indices.tolist() == [26, 182]
    assert features.data.tolist() == [1.0, 4.0]


def test_sparse_and_dense_instances_make_one_csr_batch() -> None:
    document = {"instances": [sparse_features([1, 3], [7, None]), [1, 0, 2, 0, None]]}
    features = decode(document)
    assert isinstance(features, sp.csr_matrix)
    assert features.indptr.tolist() == [0, 2, 7]
    assert features.indices.tolist() == [1, 3, 0, 1, 2, 3, 4]  # the dense row is stored whole
    np.testing.assert_array_equal(features.data, [7, NAN, 1, 0, 2, 0, NAN])


def test_sparse_instance_with_no_keys_is_an_empty_row() -> None:
    features = decode([sparse_features([], [], (3,)), sparse_features([2], [1], (3,))])
    assert isinstance(features, sp.csr_matrix)
    assert features.toarray().tolist() == [[0, 0, 0], [0, 0, 1]]


BAD = [
    (b"{", DecodeError, "invalid JSON: unexpected end of data"),
    (b"", DecodeError, "invalid JSON"),
    (b"[1, 2,]", DecodeError, "invalid JSON"),
    (b"[NaN]", DecodeError, "invalid JSON"),
    (b"[1e400]", DecodeError, "invalid JSON"),
    (b"\xff", DecodeError, "invalid JSON"),
    (b"null", DecodeError, 'expected {"instances": [...]} or a list of rows'),
    (b'"1,2"', DecodeError, 'expected {"instances": [...]} or a list of rows'),
    ({"inputs": [[1]]}, DecodeError, "the object has 'inputs'"),
    ({"instances": {"features": [1]}}, DecodeError, '"instances" must be a list'),
    ({"instances": []}, InvalidInput, "there are no instances"),
    ([], InvalidInput, "there are no instances"),
    ([[]], DecodeError, "instances[0]: has no features"),
    ([[1, 2], [3]], DecodeError, "instances[1]: has 1 features but instances[0] has 2"),
    ([[1, 2], [3, "4"]], DecodeError, "instances[1]: features[1] is a string"),
    ([[1, True]], DecodeError, "instances[0]: features[1] is a boolean"),
    ([[[1, 2]]], DecodeError, "instances[0]: features[0] is a list (nested too deep"),
    ([[1], {"a": 1}], DecodeError, 'instances[1]: expected "features": [...] or "data"'),
    ([[1], [{"a": 1}]], DecodeError, "instances[1]: features[0] is an object"),
    ([[1], 2], DecodeError, "instances[1]: expected a list of numbers or an object"),
    ({"instances": [{"features": "1,2"}]}, DecodeError, '"features" must be a list or an object'),
    ({"instances": [{"features": [1], "data": {}}]}, DecodeError, 'has both "features" and "data"'),
    ({"instances": [{"data": [1, 2]}]}, DecodeError, 'expected "features": [...] or "data"'),
    ({"instances": [{"data": {"features": {}}}]}, DecodeError, '"features" needs "values"'),
    (
        {"instances": [{"data": {"features": {"values": [1], "shape": [2]}}}]},
        DecodeError,
        '"shape" is [2] but there are 1 values',
    ),
]
SPARSE_BAD = [
    (sparse_features([0, 1], [1]), "sparse features have 2 keys but 1 values"),
    (sparse_features([0], [1], None), 'sparse "features" need "shape": [number of features]'),
    (sparse_features([0], [1], (0,)), '"shape" must be a list of one positive integer'),
    (sparse_features([0], [1], (5, 2)), '"shape" must be a list of one positive integer'),
    (sparse_features([0], [1], 5), '"shape" must be a list of one positive integer'),
    (sparse_features([0], [1], [True]), '"shape" must be a list of one positive integer'),
    (sparse_features([0], [1], [2.0]), '"shape" must be a list of one positive integer'),
    (sparse_features([0], [1], [2**40]), '"shape" must be a list of one positive integer'),
    (sparse_features([0, 5], [1, 2]), "keys[1] = 5 is outside [0, 5)"),
    (sparse_features([-1], [1]), "keys[0] = -1 is outside [0, 5)"),
    (sparse_features([2, 1], [1, 2]), "keys[1] = 1 follows 2; keys must be increasing and unique"),
    (sparse_features([2, 2], [1, 2]), "keys[1] = 2 follows 2"),
    (sparse_features([0, 1.0], [1, 2]), "keys[1] = 1.0 is a number; keys must be integers"),
    (sparse_features([True], [1]), "keys[0] = True is a boolean"),
    (sparse_features(["0"], [1]), "keys[0] = '0' is a string"),
    (sparse_features([0], ["1"]), "values[0] is a string"),
    (sparse_features("0", [1]), 'sparse "features" need "keys" and "values" lists'),
    ({"data": {"features": {"keys": [0], "shape": [5]}}}, 'sparse "features" need "keys" and'),
]


@pytest.mark.parametrize(
    ("document", "error", "message"),
    [pytest.param(d, e, m, id=m[:50]) for d, e, m in BAD]
    + [
        pytest.param([[0] * 5, bad], DecodeError, f"instances[1]: {m}", id=m[:50])
        for bad, m in SPARSE_BAD
    ],
)
def test_decode_rejects(document: Any, error: type[ClientError], message: str) -> None:
    with pytest.raises(error, match=re.escape(message)) as raised:
        decode(document)
    assert raised.value.message.startswith("application/json: ")


@pytest.mark.parametrize(
    ("instances", "message"),
    [
        pytest.param(
            [sparse_features([0], [1], (5,)), sparse_features([0], [1], (6,))],
            'instances[1]: has "shape" [6] but instances[0] has [5]',
            id="sparse widths disagree",
        ),
        pytest.param(
            [[1, 2], sparse_features([0], [1], (5,))],
            "instances[0]: has 2 values but sparse instances have 5",
            id="dense row of the wrong width",
        ),
        pytest.param(
            [sparse_features([0, 1], [1, 2]), sparse_features([3, 3], [1, 2])],
            "instances[1]: keys[1] = 3 follows 3",
            id="location across instances",
        ),
        pytest.param(
            [sparse_features([], []), sparse_features([0, 1], [1, True])],
            "instances[1]: values[1] is a boolean",
            id="location after an empty instance",
        ),
    ],
)
def test_decode_rejects_sparse_batches(instances: list[Any], message: str) -> None:
    with pytest.raises(DecodeError, match=re.escape(message)):
        decode({"instances": instances})


@PROPERTY
@given(matrices(infinity=False), st.data())
def test_dense_round_trip(matrix: np.ndarray, data: st.DataObject) -> None:
    forms = data.draw(st.lists(st.integers(0, 3), min_size=len(matrix), max_size=len(matrix)))
    instances = [
        json_instance(row, form) for row, form in zip(dense_rows(matrix), forms, strict=True)
    ]
    wrapped = data.draw(st.booleans()) or forms[0] != 0
    np.testing.assert_array_equal(dense({"instances": instances} if wrapped else instances), matrix)


@PROPERTY
@given(sparse_matrices(infinity=False), st.data())
def test_sparse_round_trip(matrix: sp.csr_matrix, data: st.DataObject) -> None:
    dense_at = data.draw(st.sets(st.integers(0, matrix.shape[0] - 1)))
    sparse_at = set(range(matrix.shape[0])) - dense_at or {0}
    array = matrix.toarray()
    instances = [
        sparse_instance(matrix, row) if row in sparse_at else {"features": array[row].tolist()}
        for row in range(matrix.shape[0])
    ]
    features = decode({"instances": instances})
    assert isinstance(features, sp.csr_matrix)
    assert features.has_sorted_indices
    np.testing.assert_array_equal(features.toarray(), array)


@PROPERTY
@given(st.binary(max_size=64))
def test_random_bytes_decode_or_raise_client_errors(body: bytes) -> None:
    decode_or_client_error(lambda b: CODEC.decode(b, MediaType(JSON)), body)


DOCUMENTS = [
    {"instances": [{"features": [1, 2]}, {"data": {"features": {"values": [3, None]}}}]},
    {"instances": [sparse_features([0, 3], [1, 2]), [1, 2, 3, 4, 5]]},
    [[1.5, -2e-3], [3, 4]],
]


@PROPERTY
@given(st.sampled_from(DOCUMENTS).flatmap(lambda d: mutations(orjson.dumps(d))))
def test_mutated_bodies_decode_or_raise_client_errors(body: bytes) -> None:
    decode_or_client_error(lambda b: CODEC.decode(b, MediaType(JSON)), body)


def encode(**outputs: np.ndarray) -> bytes:
    return CODEC.encode(Prediction(outputs))


@pytest.mark.parametrize(
    ("outputs", "expected"),
    [
        pytest.param(
            {
                "closest_cluster": np.array([1, 2], dtype=np.float32),
                "distance_to_cluster": np.array([3, 5], dtype=np.float32),
            },
            b'{"predictions":[{"closest_cluster":1.0,"distance_to_cluster":3.0},'
            b'{"closest_cluster":2.0,"distance_to_cluster":5.0}]}',
            id="k-means",
        ),
        pytest.param(
            {"score": np.array([0.7338521], dtype=np.float32)},
            b'{"predictions":[{"score":0.7338520884513855}]}',
            id="float32 promoted",
        ),
        pytest.param(
            {"score": np.array([[0.25, 0.75]], dtype=np.float32)},
            b'{"predictions":[{"score":[0.25,0.75]}]}',
            id="vector as list",
        ),
        pytest.param(
            {"predicted_label": np.array([1], dtype=np.int64), "ok": np.array([True])},
            b'{"predictions":[{"predicted_label":1,"ok":1}]}',
            id="integers and booleans",
        ),
        pytest.param(
            {"x": np.array([np.nan, np.inf, -np.inf], dtype=np.float32)},
            b'{"predictions":[{"x":null},{"x":null},{"x":null}]}',
            id="non-finite as null",
        ),
        pytest.param({"x": np.zeros(0, dtype=np.float32)}, b'{"predictions":[]}', id="no rows"),
    ],
)
def test_encode(outputs: dict[str, np.ndarray], expected: bytes) -> None:
    assert encode(**outputs) == expected


def test_encode_escapes_names() -> None:
    body = encode(**{'say "%s"\n': np.array([1.0], dtype=np.float32)})
    assert orjson.loads(body) == {"predictions": [{'say "%s"\n': 1.0}]}


def expected_value(value: Any) -> Any:
    if isinstance(value, list):
        return [expected_value(v) for v in value]
    return None if isinstance(value, float) and not math.isfinite(value) else value


@PROPERTY
@given(
    hnp.arrays(np.float32, st.integers(1, 20)),
    hnp.arrays(np.float32, st.tuples(st.just(1), st.integers(0, 4))),
    st.sampled_from([np.int32, np.uint64, np.bool_]),
)
def test_encode_matches_a_python_reference(scalar: np.ndarray, row: np.ndarray, kind: type) -> None:
    n = scalar.shape[0]
    outputs = {"s": scalar, "v": np.repeat(row, n, axis=0), "i": np.arange(n).astype(kind)}
    rows = zip(
        *(
            a.astype(np.float64 if a.dtype.kind == "f" else np.int64).tolist()
            for a in outputs.values()
        ),
        strict=True,
    )
    expected = [dict(zip(outputs, map(expected_value, values), strict=True)) for values in rows]
    assert orjson.loads(encode(**outputs)) == {"predictions": expected}


def test_one_per_line_writes_one_object_per_row_for_batch_transform() -> None:
    prediction = Prediction({"score": np.array([0.5, np.nan], dtype=np.float32)})
    body = JsonCodec(one_per_line=True).encode(prediction)
    assert body == b'{"score":0.5}\n{"score":null}\n'
    assert [orjson.loads(line) for line in body.splitlines()] == [{"score": 0.5}, {"score": None}]
