"""InferenceService with fake codecs and algorithms: negotiation happens before any decode or
prediction, an empty body means nothing to do, and replies carry the encoder's media type."""

from __future__ import annotations

import re

import numpy as np
import pytest

from smserve.codecs import CodecRegistry
from smserve.config import Settings
from smserve.errors import (
    ConfigError,
    DecodeError,
    InvalidInput,
    NotAcceptable,
    UnsupportedMediaType,
)
from smserve.media import CSV, JSON
from smserve.service import InferenceService
from tests.fakes import EchoAlgorithm, FakeCsvCodec, FakeJsonCodec, SlowAlgorithm


@pytest.fixture
def algorithm() -> EchoAlgorithm:
    return EchoAlgorithm()


@pytest.fixture
def csv_codec() -> FakeCsvCodec:
    return FakeCsvCodec()


@pytest.fixture
def service(algorithm: EchoAlgorithm, csv_codec: FakeCsvCodec) -> InferenceService:
    json_codec = FakeJsonCodec()
    registry = CodecRegistry(decoders=[csv_codec, json_codec], encoders=[json_codec, csv_codec])
    return InferenceService(algorithm, registry, Settings())


@pytest.mark.parametrize(
    ("content_type", "accept", "error"),
    [
        ("text/csv", "image/png", NotAcceptable),
        ("image/png", "application/json", UnsupportedMediaType),
        ("text/csv; charset=latin-1", None, UnsupportedMediaType),
        ("text/csv", "application/json;q=0", NotAcceptable),
    ],
    ids=["406-accept", "415-type", "415-parameter", "406-q0"],
)
def test_negotiation_fails_before_decode_and_predict(
    service: InferenceService,
    algorithm: EchoAlgorithm,
    csv_codec: FakeCsvCodec,
    content_type: str,
    accept: str | None,
    error: type[Exception],
) -> None:
    with pytest.raises(error):
        service.invoke(b"not,even,numbers", content_type, accept)
    assert csv_codec.decoded == 0
    assert algorithm.calls == 0


def test_empty_body_is_none_without_predicting(
    service: InferenceService, algorithm: EchoAlgorithm
) -> None:
    assert service.invoke(b"", "text/csv", "application/json") is None
    assert algorithm.calls == 0


def test_reply_has_the_encoders_media_type(service: InferenceService) -> None:
    reply = service.invoke(b"1,2\n3,4", "text/csv", "text/csv")
    assert reply is not None
    assert (reply.body, reply.media_type) == (b"3\n7\n", CSV)


def test_missing_headers_use_the_algorithms_defaults(service: InferenceService) -> None:
    reply = service.invoke(b"1,2", None, None)
    assert reply is not None
    assert reply.media_type == EchoAlgorithm.default_accept == JSON


def test_default_accept_setting_overrides_the_algorithm(csv_codec: FakeCsvCodec) -> None:
    registry = CodecRegistry(decoders=[csv_codec], encoders=[FakeJsonCodec(), csv_codec])
    service = InferenceService(EchoAlgorithm(), registry, Settings(default_accept=CSV))
    reply = service.invoke(b"1,2", "text/csv", "*/*")
    assert reply is not None
    assert reply.media_type == CSV


def test_decode_errors_propagate(service: InferenceService, algorithm: EchoAlgorithm) -> None:
    with pytest.raises(DecodeError):
        service.invoke(b"1,x", "text/csv", None)
    assert algorithm.calls == 0


@pytest.mark.parametrize("value", ["text/plain", "application/x-npy", "image/*"])
def test_default_accept_the_server_cannot_write_is_a_startup_error(
    csv_codec: FakeCsvCodec, value: str
) -> None:
    registry = CodecRegistry([csv_codec], [csv_codec, FakeJsonCodec()])
    settings = Settings(default_accept=value)
    with pytest.raises(ConfigError, match="SAGEMAKER_DEFAULT_INVOCATIONS_ACCEPT"):
        InferenceService(EchoAlgorithm(), registry, settings)


def test_default_accept_is_matched_case_insensitively_and_without_parameters(
    csv_codec: FakeCsvCodec,
) -> None:
    registry = CodecRegistry([csv_codec], [csv_codec, FakeJsonCodec()])
    service = InferenceService(
        EchoAlgorithm(), registry, Settings(default_accept="Application/JSON; verbose=True")
    )
    reply = service.invoke(b"1,2", CSV, None)
    assert reply is not None
    assert reply.media_type == JSON


def test_a_reply_carries_the_seconds_of_each_stage(csv_codec: FakeCsvCodec) -> None:
    registry = CodecRegistry(decoders=[csv_codec], encoders=[csv_codec])
    service = InferenceService(SlowAlgorithm(0.05), registry, Settings())
    reply = service.invoke(b"1,2\n3,4\n", CSV, CSV)
    assert reply is not None
    assert reply.stages is not None
    decode, predict, encode = reply.stages
    assert predict >= 0.05  # the algorithm sleeps that long
    assert 0 <= decode < predict
    assert 0 <= encode < predict
    assert reply == type(reply)(reply.body, reply.media_type, reply.outputs)  # not compared


def _wording(shape: tuple[int, ...], width: int | None) -> str:
    return f"shape {list(shape)} for width {width}"


def test_tensor_batch_is_the_models_float32_matrix(service: InferenceService) -> None:
    width = service.algorithm.n_features or 3
    values = np.arange(2 * width, dtype=np.float64).reshape(2, width)
    batch = service.tensor_batch(values, "x", _wording)
    assert isinstance(batch.features, np.ndarray)
    assert batch.features.dtype == np.float32
    assert batch.features.flags.c_contiguous
    np.testing.assert_array_equal(batch.features, values.astype(np.float32))


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (np.array([[1.0, np.inf, 0.0]]), "input 'x': row 0, column 1 (0-based) is infinite"),
        (np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 1e39]]), "row 1, column 2 (0-based) is infinite"),
        (np.zeros(3), "shape [3] for width"),
    ],
    ids=["infinity", "beyond float32", "one dimension"],
)
def test_tensor_batch_refuses_what_no_door_may_pass(
    service: InferenceService, values: np.ndarray, message: str
) -> None:
    with pytest.raises(InvalidInput, match=re.escape(message)):
        service.tensor_batch(values, "x", _wording)
