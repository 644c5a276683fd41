"""RecordioCodec: golden bytes from the reference sheet, record validation, the encoder."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from smserve import media
from smserve.codecs import Decoder, Encoder, default_registry
from smserve.codecs.recordio.codec import RecordioCodec, read_records
from smserve.codecs.recordio.framing import read_payloads
from smserve.codecs.recordio.schema import Record
from smserve.config import Settings
from smserve.errors import DecodeError, NotAcceptable, UnsupportedMediaType
from smserve.media import MediaType
from smserve.types import Prediction
from tests.unit.codecs.recordio_bodies import body_of, dense_body, frame_bytes, record

CODEC = RecordioCodec()
VALUES = "0a0676616c756573"  # map key "values"


def _hex(text: str) -> bytes:
    return bytes.fromhex(text.replace(" ", "").replace('"values"', VALUES))


def _decode(body: bytes) -> np.ndarray | sp.csr_matrix:
    return CODEC.decode(body, MediaType(media.RECORDIO)).features


# --- golden bodies (reference §3.5) -------------------------------------------------------


@pytest.mark.parametrize(
    ("hex_body", "expected"),
    [
        pytest.param(
            '0a23d7ce 20000000 0a1e "values" 1214 1212 0a10 0000c03f 00008041 00006041 0000b841',
            [[1.5, 16.0, 14.0, 23.0]],
            id="a dense float32",
        ),
        pytest.param(
            '0a23d7ce 18000000 0a16 "values" 120c 1a0a 0a08 000000000000f83f',
            [[1.5]],
            id="b float64",
        ),
        pytest.param(
            '0a23d7ce 13000000 0a11 "values" 1207 3a05 0a03 010203 00',
            [[1.0, 2.0, 3.0]],
            id="c int32 with padding",
        ),
        pytest.param(
            '0a23d7ce 1a000000 0a18 "values" 120e 3a0c 0a0a ffffffffffffffffff01 0000',
            [[-1.0]],
            id="c negative int32",
        ),
    ],
)
def test_golden_dense_bodies(hex_body: str, expected: list[list[float]]) -> None:
    features = _decode(_hex(hex_body))
    assert isinstance(features, np.ndarray)
    assert features.dtype == np.float32
    assert features.flags.c_contiguous
    np.testing.assert_array_equal(features, np.array(expected, dtype=np.float32))


def test_golden_two_rows_are_two_frames() -> None:
    row = _hex('0a23d7ce 20000000 0a1e "values" 1214 1212 0a10' + " 0000c03f" * 4)
    np.testing.assert_array_equal(_decode(row * 2), np.full((2, 4), 1.5, dtype=np.float32))


def test_golden_sparse_row() -> None:
    body = _hex(
        '0a23d7ce 1f000000 0a1d "values" 1213 1211 0a08 00002040 00008040 1202 0104 1a01 05 00'
    )
    features = _decode(body)
    assert isinstance(features, sp.csr_matrix)
    assert features.dtype == np.float32
    assert features.shape == (1, 5)
    assert features.indices.tolist() == [1, 4]
    np.testing.assert_array_equal(features.toarray(), [[0, 2.5, 0, 0, 4.0]])


def test_golden_empty_sparse_row() -> None:
    body = _hex('0a23d7ce 11000000 0a0f "values" 1205 1203 1a01 05 000000')
    features = _decode(body)
    assert isinstance(features, sp.csr_matrix)
    assert features.shape == (1, 5)
    assert features.nnz == 0


def test_golden_kmeans_response() -> None:
    prediction = Prediction(
        {"distance_to_cluster": np.array([3.0]), "closest_cluster": np.array([1.0])}
    )
    expected = _hex(
        '0a23d7ce 3e000000 121b 0a0f "closest_cluster" 1208 1206 0a04 0000803f'.replace(
            '"closest_cluster"', b"closest_cluster".hex()
        )
        + ' 121f 0a13 "distance_to_cluster" 1208 1206 0a04 00004040'.replace(
            '"distance_to_cluster"', b"distance_to_cluster".hex()
        )
        + " 0000"
    )
    assert len(expected) == 72
    assert CODEC.encode(prediction) == expected


# --- record contents ------------------------------------------------------------------------


def test_float64_and_int32_are_cast_to_float32() -> None:
    body = body_of(
        [record([0.1, 2.0], kind="float64_tensor"), record([3, -4], kind="int32_tensor")]
    )
    np.testing.assert_array_equal(_decode(body), np.array([[0.1, 2.0], [3, -4]], dtype=np.float32))


def test_float64_beyond_float32_range_becomes_infinite() -> None:
    features = _decode(body_of([record([1e300, -1e300], kind="float64_tensor")]))
    np.testing.assert_array_equal(features, [[np.inf, -np.inf]])


def test_nan_is_a_missing_value() -> None:
    features = _decode(dense_body([[np.nan, 1.0]]))
    assert np.isnan(features[0, 0])
    assert features[0, 1] == 1.0


def test_only_key_is_used_when_values_is_absent() -> None:
    np.testing.assert_array_equal(_decode(body_of([record([1, 2], key="pixels")])), [[1, 2]])


def test_values_key_wins_over_other_keys() -> None:
    message = Record()
    message.features["values"].float32_tensor.values.extend([1.0])
    message.features["other"].float32_tensor.values.extend([2.0, 3.0])
    np.testing.assert_array_equal(_decode(body_of([message.SerializeToString()])), [[1.0]])


def test_labels_uid_metadata_and_configuration_are_ignored() -> None:
    message = Record.FromString(record([1.0, 2.0], label=[7.0]))
    message.uid, message.metadata, message.configuration = "u", "m", '{"k": 1}'
    np.testing.assert_array_equal(_decode(body_of([message.SerializeToString()])), [[1, 2]])


def test_dense_row_with_matching_shape_is_dense() -> None:
    features = _decode(body_of([record([1, 2, 3], shape=[3])]))
    assert isinstance(features, np.ndarray)


def test_mixed_dense_and_sparse_rows_give_csr() -> None:
    body = body_of([record([0.0, 2.0, 0.0]), record([5.0], keys=[2], shape=[3]), record(shape=[3])])
    features = _decode(body)
    assert isinstance(features, sp.csr_matrix)
    assert features.dtype == np.float32
    np.testing.assert_array_equal(features.toarray(), [[0, 2, 0], [0, 0, 5], [0, 0, 0]])
    assert features.indptr.tolist() == [0, 3, 4, 4]  # a dense row's zeros are stored values


def _unpacked_record(tensor_tag: int, fields: bytes) -> bytes:
    value = bytes([tensor_tag, len(fields)]) + fields
    entry = bytes.fromhex(VALUES) + bytes([0x12, len(value)]) + value
    return bytes([0x0A, len(entry)]) + entry


@pytest.mark.parametrize(
    ("tensor_tag", "values"),
    [
        pytest.param(0x12, "0d0000803f 0d00000040", id="float32 fixed32"),
        pytest.param(0x1A, "09000000000000f03f 090000000000000040", id="float64 fixed64"),
        pytest.param(0x3A, "0801 0802", id="int32 varint"),
    ],
)
def test_unpacked_encodings_decode_like_packed(tensor_tag: int, values: str) -> None:
    fields = bytes.fromhex((values + " 1001 1003 1805").replace(" ", ""))  # keys [1, 3], shape [5]
    unpacked = _decode(body_of([_unpacked_record(tensor_tag, fields)]))
    packed = _decode(body_of([record([1.0, 2.0], keys=[1, 3], shape=[5])]))
    assert isinstance(unpacked, sp.csr_matrix)
    assert isinstance(packed, sp.csr_matrix)
    np.testing.assert_array_equal(unpacked.toarray(), packed.toarray())
    np.testing.assert_array_equal(unpacked.toarray(), [[0, 1, 0, 2, 0]])


# --- malformed records ------------------------------------------------------------------------


def _bytes_record() -> bytes:
    message = Record()
    message.features["values"].bytes.value.append(b"abc")
    return bytes(message.SerializeToString())


def _two_keys() -> bytes:
    message = Record()
    message.features["a"].float32_tensor.values.append(1.0)
    message.features["b"].float32_tensor.values.append(2.0)
    return bytes(message.SerializeToString())


@pytest.mark.parametrize(
    ("payloads", "message"),
    [
        pytest.param([_bytes_record()], r"record 1 .* is bytes", id="bytes tensor"),
        pytest.param([Record().SerializeToString()], "no features", id="no features"),
        pytest.param([_two_keys()], r"features \['a', 'b'\]", id="several keys"),
        pytest.param([record([1, 2], keys=[0, 1])], "needs shape", id="sparse without shape"),
        pytest.param([record([1], keys=[3], shape=[3])], "key 3 is out of range", id="key >= D"),
        pytest.param([record([1, 2], keys=[1, 1], shape=[3])], "strictly", id="duplicate keys"),
        pytest.param([record([1, 2], keys=[2, 1], shape=[3])], "strictly", id="unsorted keys"),
        pytest.param(
            [record([1, 2], keys=[1], shape=[3])], "1 keys but 2 values", id="keys!=values"
        ),
        pytest.param([record([1, 2], shape=[3])], "2 values but shape", id="dense != shape"),
        pytest.param([record([1], keys=[0], shape=[2, 3])], "not a row", id="matrix shape"),
        pytest.param([record([1], keys=[0], shape=[2**31])], "exceeds", id="huge shape"),
        pytest.param(
            [record([1, 2]), record([1, 2, 3])], "record 2 .*3 features", id="dense widths"
        ),
        pytest.param(
            [record([1], keys=[0], shape=[3]), record([1], keys=[0], shape=[4])],
            "record 2 .*4 features",
            id="sparse widths",
        ),
        pytest.param(
            [record([1], keys=[0], shape=[3]), record([1, 2])],
            "record 2 .*2 features",
            id="dense vs sparse width",
        ),
    ],
)
def test_malformed_records_are_rejected(payloads: list[bytes], message: str) -> None:
    with pytest.raises(DecodeError, match=message):
        _decode(body_of(payloads))


def test_record_errors_name_index_and_byte_offset() -> None:
    body = dense_body([[1.0, 2.0]] * 3) + body_of([_bytes_record()])
    with pytest.raises(DecodeError, match=r"record 4 \(byte offset 96\)"):
        _decode(body)


def test_payload_that_is_not_a_record_is_rejected() -> None:
    with pytest.raises(
        DecodeError, match=r"frame at byte offset 28 does not hold an aialgs\.data\.Record"
    ):
        _decode(frame_bytes(record([1.0])) + frame_bytes(b"\x12\xc0\x18" + bytes(9)))


# --- read_records labels ----------------------------------------------------------------------


def test_read_records_returns_scalar_labels() -> None:
    body = body_of([record([1, 2], label=[0.5]), record([3, 4], label=[1.5])])
    features, labels = read_records(body)
    np.testing.assert_array_equal(features, [[1, 2], [3, 4]])
    assert labels is not None
    assert labels.dtype == np.float32
    np.testing.assert_array_equal(labels, [0.5, 1.5])


@pytest.mark.parametrize(
    "second",
    [
        pytest.param(record([3, 4]), id="missing label"),
        pytest.param(record([3, 4], label=[1.0, 2.0]), id="vector label"),
    ],
)
def test_read_records_labels_are_none_unless_every_record_has_a_scalar(second: bytes) -> None:
    _, labels = read_records(body_of([record([1, 2], label=[0.5]), second]))
    assert labels is None


# --- encoder ----------------------------------------------------------------------------------


def _records(body: bytes) -> list[object]:
    return [Record.FromString(payload.parts[0]) for payload in read_payloads(body)]


def test_encoder_writes_one_record_per_row_with_outputs_in_label() -> None:
    prediction = Prediction(
        {
            "closest_cluster": np.array([1, 2], dtype=np.int64),
            "probabilities": np.array([[0.25, 0.75], [np.nan, 1.0]]),
            "flag": np.array([True, False]),
        }
    )
    records = _records(CODEC.encode(prediction))
    assert len(records) == 2
    second = records[1]
    assert len(second.features) == 0  # type: ignore[attr-defined]
    labels = second.label  # type: ignore[attr-defined]
    assert sorted(labels) == ["closest_cluster", "flag", "probabilities"]
    assert list(labels["closest_cluster"].float32_tensor.values) == [2.0]
    assert list(labels["flag"].float32_tensor.values) == [0.0]
    probabilities = list(labels["probabilities"].float32_tensor.values)
    assert np.isnan(probabilities[0])
    assert probabilities[1] == 1.0


def test_encoder_bytes_equal_deterministic_protobuf() -> None:
    outputs = {"b": np.arange(3.0), "a": np.arange(6.0).reshape(3, 2), "empty": np.zeros((3, 0))}
    expected = []
    for row in range(3):
        message = Record()
        for name, values in outputs.items():
            message.label[name].float32_tensor.values.extend(np.atleast_1d(values[row]).tolist())
        expected.append(frame_bytes(message.SerializeToString(deterministic=True)))
    assert CODEC.encode(Prediction(outputs)) == b"".join(expected)


def test_encoder_writes_nothing_for_no_rows() -> None:
    assert CODEC.encode(Prediction({"score": np.zeros(0)})) == b""
    assert CODEC.encode(Prediction({})) == b""


def test_encoder_refuses_non_numeric_outputs() -> None:
    with pytest.raises(NotAcceptable, match="'label'"):
        CODEC.encode(Prediction({"label": np.array(["cat", "dog"])}))


# --- codec ------------------------------------------------------------------------------------


def test_codec_is_a_decoder_and_an_encoder_without_parameters() -> None:
    assert isinstance(CODEC, Decoder)
    assert isinstance(CODEC, Encoder)
    assert CODEC.media_type == media.RECORDIO
    assert dict(CODEC.parameters) == {}


@pytest.mark.parametrize(
    "content_type", [media.RECORDIO, "application/x-RecordIO-Protobuf", "recordio-protobuf"]
)
def test_default_registry_decodes_and_encodes_recordio(content_type: str) -> None:
    registry = default_registry(Settings())
    decoder, parsed = registry.decoder_for(content_type, media.JSON)
    assert isinstance(decoder, RecordioCodec)
    assert parsed.essence == media.RECORDIO
    assert isinstance(registry.encoder_for(media.RECORDIO, media.JSON), RecordioCodec)


def test_default_registry_refuses_recordio_parameters() -> None:
    with pytest.raises(UnsupportedMediaType):
        default_registry(Settings()).decoder_for(f"{media.RECORDIO}; charset=utf-8", media.JSON)
