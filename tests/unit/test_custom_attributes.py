"""The ``outputs`` custom attribute: parsing, and the service's per-request output selection
(checked before any decode or predict; the reply names the outputs it holds)."""

from __future__ import annotations

from typing import ClassVar

import numpy as np
import pytest

from smserve.algorithms.base import SelectableOutputs
from smserve.config import Settings
from smserve.custom_attributes import applied, requested_outputs
from smserve.errors import InvalidInput
from smserve.media import CSV, JSON
from smserve.service import InferenceService
from smserve.types import Batch, Prediction
from tests.fakes import EchoAlgorithm, FakeCsvCodec, fake_registry, fake_service


class SelectableEcho:
    """``score`` (each row's sum) by default, or ``score`` and ``double`` on request; records
    the keys of each call."""

    name: ClassVar[str] = "selectable"
    default_content_type: ClassVar[str] = CSV
    default_accept: ClassVar[str] = JSON

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...] | None] = []

    @property
    def n_features(self) -> int | None:
        return None

    @property
    def feature_names(self) -> tuple[str, ...]:
        return ()

    @property
    def output_keys(self) -> tuple[str, ...]:
        return ("score", "double")

    @property
    def default_outputs(self) -> tuple[str, ...]:
        return ("score",)

    @property
    def wide_outputs(self) -> frozenset[str]:
        return frozenset()

    def predict(
        self, batch: Batch, outputs: tuple[str, ...] | None = None, spare_cpu: bool = False
    ) -> Prediction:
        self.calls.append(outputs)
        score = np.asarray(batch.features.sum(axis=1)).ravel()
        arrays = {"score": score, "double": 2 * score}
        return Prediction({key: arrays[key] for key in outputs or self.default_outputs})


VALID = ("score", "contributions", "a", "b")


@pytest.mark.parametrize(
    ("attributes", "keys"),
    [
        (None, None),
        ("", None),
        ("trace-id=abc", None),
        ("c000b4f9-df62-4c85-a0bf-7c525f9104a4", None),
        ("outputs=contributions", ("contributions",)),
        ("outputs=score,contributions", ("score", "contributions")),
        (" Outputs = Score , contributions ;trace=1", ("score", "contributions")),
        ("trace=1;outputs=a,b,a", ("a", "b")),
        ("outputs=a;other=x=y", ("a",)),
    ],
)
def test_requested_outputs(attributes: str | None, keys: tuple[str, ...] | None) -> None:
    assert requested_outputs(attributes, VALID) == keys


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        ("outputs=", "'outputs=' is empty or malformed"),
        ("outputs= ", "'outputs= ' is empty or malformed"),
        ("outputs", "'outputs' is empty or malformed"),
        ("outputs=a,,b", "malformed"),
        ("outputs=a,", "malformed"),
        ("outputs=a;outputs=b", "more than once"),
        ("outputs=a,zz", "unknown outputs: zz"),
    ],
)
def test_malformed_outputs_are_400s_listing_the_valid_keys(attributes: str, message: str) -> None:
    # An empty or malformed outputs= is answered like an unknown key: with the valid ones.
    with pytest.raises(InvalidInput, match=message) as raised:
        requested_outputs(attributes, VALID)
    assert raised.value.message.endswith(
        "; valid outputs for this model: score, contributions, a, b"
    )


def test_a_long_attribute_is_quoted_as_an_excerpt() -> None:
    with pytest.raises(InvalidInput) as raised:
        requested_outputs("outputs=" + "x" * 10_000 + ",", VALID)
    assert len(raised.value.message) < 300
    assert "(10009 characters)" in raised.value.message


def test_applied_names_the_outputs() -> None:
    assert applied(("score", "contributions")) == "outputs=score,contributions"


def _service() -> tuple[InferenceService, SelectableEcho]:
    algorithm = SelectableEcho()
    assert isinstance(algorithm, SelectableOutputs)
    return InferenceService(algorithm, fake_registry(), Settings()), algorithm


def test_a_request_selects_its_outputs_and_the_reply_names_them() -> None:
    service, algorithm = _service()
    reply = service.invoke(b"1,2\n", CSV, CSV, "outputs=double,score")
    assert reply is not None
    assert reply.outputs == ("double", "score")
    assert algorithm.calls == [("double", "score")]


def test_without_outputs_the_endpoint_default_applies_and_is_named() -> None:
    service, algorithm = _service()
    reply = service.invoke(b"1,2\n", CSV, CSV, "trace=7")
    assert reply is not None
    assert reply.body == b"3\n"
    assert reply.outputs == ("score",)
    assert algorithm.calls == [None]


def test_unknown_outputs_are_a_400_listing_the_valid_keys_before_any_decode() -> None:
    algorithm = SelectableEcho()
    csv = FakeCsvCodec()
    registry = fake_registry()
    registry.add_decoder(csv, replace=True)
    service = InferenceService(algorithm, registry, Settings())
    with pytest.raises(InvalidInput, match=r"unknown outputs: triple; .*: score, double"):
        service.invoke(b"1,2\n", CSV, CSV, "outputs=score,triple")
    assert (csv.decoded, algorithm.calls) == (0, [])


def test_a_model_with_fixed_outputs_refuses_outputs_but_ignores_other_attributes() -> None:
    algorithm = EchoAlgorithm()
    service = fake_service(algorithm)
    with pytest.raises(InvalidInput, match="fixed"):
        service.invoke(b"1,2\n", CSV, CSV, "outputs=score")
    with pytest.raises(InvalidInput, match="malformed; .*none .this model's outputs are fixed"):
        service.invoke(b"1,2\n", CSV, CSV, "outputs=")
    reply = service.invoke(b"1,2\n", CSV, CSV, "trace=1")
    assert reply is not None
    assert reply.outputs is None
