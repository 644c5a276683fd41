"""text/libsvm: tokens, labels and qids, index bases, errors naming the line, CSR output."""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from smserve.codecs.libsvm import LibsvmCodec
from smserve.errors import DecodeError
from smserve.media import LIBSVM, MediaType
from tests.unit.codecs.text_bodies import (
    decode_or_client_error,
    libsvm_body,
    mutations,
    sparse_matrices,
)

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
NAN = float("nan")


def decode(body: bytes, base: str = "0") -> sp.csr_matrix:
    features = LibsvmCodec(base).decode(body, MediaType(LIBSVM)).features
    assert isinstance(features, sp.csr_matrix)  # never densified
    assert features.dtype == np.float32
    assert features.has_sorted_indices
    assert features.indices.dtype == np.int32
    return features


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        pytest.param(b"1 0:0.5 2:3", [[0.5, 0, 3]], id="label and pairs"),
        pytest.param(b"0:0.5 2:3", [[0.5, 0, 3]], id="no label"),
        pytest.param(b"+1 0:1\n-1 1:2\n", [[1, 0], [0, 2]], id="signed labels, trailing newline"),
        pytest.param(b"1 qid:7 0:1\n0 qid:7 1:2", [[1, 0], [0, 2]], id="qid ignored"),
        pytest.param(b"1\t0:1\t\t1:2\r\n0  2:3\r\n", [[1, 2, 0], [0, 0, 3]], id="tabs, runs, crlf"),
        pytest.param(b"0:1\n\n   \n1:2", [[1, 0], [0, 2]], id="blank lines are not rows"),
        pytest.param(b"1 2:5 0:1", [[1, 0, 5]], id="unsorted indices"),
        pytest.param(b"1\n0 1:2", [[0, 0], [0, 2]], id="a row with no pairs"),
        pytest.param(b"0:1e3 1:-.5 2:inf 3:nan", [[1000, -0.5, np.inf, NAN]], id="number syntax"),
        pytest.param(b"0:1e39", [[np.inf]], id="beyond float32 is inf"),
        pytest.param(b"0:0 3:0", [[0, 0, 0, 0]], id="explicit zeros"),
        pytest.param(b"\xef\xbb\xbf0:1", [[1]], id="byte order mark"),
        pytest.param(b"0001:2", [[0, 2]], id="leading zeros in an index"),
    ],
)
def test_decode(body: bytes, expected: list[list[float]]) -> None:
    features = decode(body)
    np.testing.assert_array_equal(features.toarray(), np.array(expected, dtype=np.float32))


def test_stored_entries_are_the_pairs() -> None:
    features = decode(b"1 3:0 1:2\n0 0:5")
    assert features.indptr.tolist() == [0, 2, 3]
    assert features.indices.tolist() == [1, 3, 0]
    assert features.data.tolist() == [2, 0, 5]


@pytest.mark.parametrize(
    ("base", "body", "expected"),
    [
        pytest.param("0", b"1:1 2:2", [[0, 1, 2]], id="0: as is"),
        pytest.param("1", b"1:1 2:2", [[1, 2]], id="1: minus one"),
        pytest.param("auto", b"1:1 2:2\n3:3", [[1, 2, 0], [0, 0, 3]], id="auto: smallest is 1"),
        pytest.param("auto", b"0:1 2:2\n3:3", [[1, 0, 2, 0], [0, 0, 0, 3]], id="auto: has a 0"),
        pytest.param(
            "auto", b"2:1\n1:5", [[0, 1], [5, 0]], id="auto pitfall: 0-based body without feature 0"
        ),
    ],
)
def test_index_base(base: str, body: bytes, expected: list[list[float]]) -> None:
    np.testing.assert_array_equal(decode(body, base).toarray(), expected)


def test_index_base_is_validated() -> None:
    with pytest.raises(ValueError, match="index_base"):
        LibsvmCodec("2")


@pytest.mark.parametrize(
    ("body", "base", "message"),
    [
        pytest.param(
            b"1 0:1\n1 x 1:2",
            "0",
            "line 2: 'x': only the first token of a line may lack ':'",
            id="stray token",
        ),
        pytest.param(b"1 0:1 # comment", "0", "line 1: '#': only the first token", id="comment"),
        pytest.param(b"1 1:2:3", "0", "line 1: '1:2:3': expected one ':'", id="two colons"),
        pytest.param(b"1 :2", "0", "line 1: ':2': the index before ':' is missing", id="no index"),
        pytest.param(
            b"\n\n1 2:", "0", "line 3: '2:': the value after ':' is missing", id="no value"
        ),
        pytest.param(
            b"1 a:2", "0", "line 1: 'a:2': the index must be a whole number", id="word index"
        ),
        pytest.param(
            b"1 -1:2", "0", "line 1: '-1:2': the index must be a whole number", id="negative index"
        ),
        pytest.param(
            b"1 1.5:2", "0", "line 1: '1.5:2': the index must be a whole number", id="fraction"
        ),
        pytest.param(b"1 +1:2", "0", "'+1:2': the index must be a whole number", id="signed index"),
        pytest.param(
            b"1 2147483647:2", "0", "'2147483647:2': the index must be", id="index too big"
        ),
        pytest.param(b"1 99999999999999999999:1", "0", "the index must be", id="very long index"),
        pytest.param(
            b"0:1\n1 1:abc",
            "0",
            "line 2: '1:abc': the value 'abc' is not a number",
            id="word value",
        ),
        pytest.param(
            b"0:1 1:1,5", "0", "line 1: '1:1,5': the value '1,5' is not a number", id="comma"
        ),
        pytest.param(b"0:1 1:1_0", "0", "the value '1_0' is not a number", id="underscore"),
        pytest.param(
            b"0:1 1:2 1:3", "0", "line 1: '1:3': the index repeats in this row", id="repeat"
        ),
        pytest.param(
            b"0:1\n2:1 0:3 2:3", "0", "line 2: '2:3': the index repeats", id="repeat, unsorted"
        ),
        pytest.param(b"1 0:1", "1", "line 1: '0:1': index 0 is not allowed", id="0 with base 1"),
        pytest.param(b"", "0", "the body is empty", id="empty"),
        pytest.param(b" \r\n\t", "0", "the body is empty", id="only whitespace"),
        pytest.param(b"1\n0\n", "0", "there are no index:value pairs", id="labels only"),
        pytest.param(b"0:1 1:\xff", "0", "not valid UTF-8", id="bad utf-8"),
        pytest.param(b"1,2,3\n4,5,6", "0", "there are no index:value pairs", id="csv body"),
    ],
)
def test_decode_rejects(body: bytes, base: str, message: str) -> None:
    with pytest.raises(DecodeError, match=re.escape(message)) as raised:
        decode(body, base)
    assert raised.value.message.startswith("text/libsvm: ")


@PROPERTY
@given(sparse_matrices(), st.sampled_from(["0", "1", "auto"]), st.booleans())
def test_round_trip(matrix: sp.csr_matrix, base: str, labels: bool) -> None:
    body = libsvm_body(matrix, 0 if base == "0" else 1, labels)
    features = decode(body, base)
    width = features.shape[1]  # the largest index plus one
    assert matrix[:, width:].nnz == 0
    assert features.shape[0] == matrix.shape[0]
    np.testing.assert_array_equal(features.toarray(), matrix.toarray()[:, :width])


@PROPERTY
@given(st.binary(max_size=64), st.sampled_from(["0", "1", "auto"]))
def test_random_bytes_decode_or_raise_client_errors(body: bytes, base: str) -> None:
    decode_or_client_error(lambda b: LibsvmCodec(base).decode(b, MediaType(LIBSVM)), body)


BODY = b"1 qid:3 0:1.5 3:-2e-3\n0 2:7\n\n+1 1:nan 4:0"


@PROPERTY
@given(mutations(BODY), st.sampled_from(["0", "1", "auto"]))
def test_mutated_bodies_decode_or_raise_client_errors(body: bytes, base: str) -> None:
    decode_or_client_error(lambda b: LibsvmCodec(base).decode(b, MediaType(LIBSVM)), body)


def test_decode_labeled_returns_features_and_labels() -> None:
    features, labels = LibsvmCodec().decode_labeled(b"1 0:1\n\n-0.5 qid:2 2:4\n")
    assert features.toarray().tolist() == [[1, 0, 0], [0, 0, 4]]
    assert labels.dtype == np.float32
    assert labels.tolist() == [1, -0.5]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        pytest.param(b"1 0:1\n0:2", "line 2: the row has no label", id="missing label"),
        pytest.param(b"1 0:1\nx 0:2", "line 2: the label 'x' is not a number", id="bad label"),
    ],
)
def test_decode_labeled_rejects(body: bytes, message: str) -> None:
    with pytest.raises(DecodeError, match=re.escape(message)):
        LibsvmCodec().decode_labeled(body)
