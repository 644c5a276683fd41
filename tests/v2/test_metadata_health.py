"""Server metadata, liveness, readiness and model metadata for every model and version the
repository serves, each answer validated against the schema."""

from __future__ import annotations

import pytest

import smserve
from smserve.doors import DoorRequest
from smserve.errors import ModelNotReady, PayloadTooLarge
from smserve.v2.api import V2API
from tests.v2.conftest import Call, Headers


def test_server_metadata_names_the_binary_tensor_extension(call: Call) -> None:
    for path in ("/v2", "/v2/"):
        answer = call("GET", path)
        assert answer.status == 200
        assert answer.json("metadata_server_response") == {
            "name": "smserve",
            "version": smserve.__version__,
            "extensions": ["binary_tensor_data"],
        }


def test_live_and_ready(call: Call) -> None:
    assert call("GET", "/v2/health/live").json("live_server_response") == {"live": True}
    assert call("GET", "/v2/health/ready").json("ready_server_response") == {"ready": True}


class _Loading:
    """A repository whose one model is still loading."""

    def names(self) -> tuple[str, ...]:
        return ("model",)

    def resolve(self, name: str, version: int | None = None) -> None:
        raise ModelNotReady("the model is still loading")


def test_not_ready_while_a_model_is_loading() -> None:
    api = V2API(_Loading())  # type: ignore[arg-type]
    reply = api.handle(DoorRequest("GET", "/v2/health/ready", Headers({})))
    assert (reply.status, reply.body) == (400, b'{"ready":false}')
    infer = api.handle(DoorRequest("POST", "/v2/models/model/infer", Headers({}), b"{}"))
    assert (infer.status, infer.body) == (503, b'{"error":"the model is still loading"}')


@pytest.mark.parametrize(
    ("path", "version"),
    [
        ("/v2/models/km/ready", 1),
        ("/v2/models/km/versions/1/ready", 1),
        ("/v2/models/xgb/ready", 2),
        ("/v2/models/xgb/versions/1/ready", 1),
        ("/v2/models/xgb/versions/2/ready", 2),
    ],
)
def test_model_ready(call: Call, path: str, version: int) -> None:
    answer = call("GET", path)
    name = path.split("/")[3]
    assert answer.json("ready_model_response") == {"name": name, "ready": True}
    assert (answer.reply.model, answer.reply.version) == (name, version)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/v2/models/nope", "Request for unknown model: 'nope' is not found"),
        ("/v2/models/nope/ready", "Request for unknown model: 'nope' is not found"),
        ("/v2/models/km/versions/2", "Request for unknown model: 'km' version 2 is not found"),
        (
            "/v2/models/xgb/versions/3/ready",
            "Request for unknown model: 'xgb' version 3 is not found",
        ),
    ],
)
def test_unknown_models_and_versions_are_404_in_tritons_words(
    call: Call, path: str, message: str
) -> None:
    answer = call("GET", path)
    assert (answer.status, answer.error) == (404, message)


def test_kmeans_metadata(call: Call) -> None:
    assert call("GET", "/v2/models/km").json("metadata_model_response") == {
        "name": "km",
        "versions": ["1"],
        "platform": "kmeans",
        "inputs": [{"name": "input__0", "datatype": "FP32", "shape": [-1, 4]}],
        "outputs": [
            {"name": "closest_cluster", "datatype": "FP32", "shape": [-1]},
            {"name": "distance_to_cluster", "datatype": "FP32", "shape": [-1]},
            {"name": "contributions", "datatype": "FP32", "shape": [-1, 4]},
        ],
    }


def test_each_xgboost_version_describes_its_own_outputs(call: Call) -> None:
    binary = call("GET", "/v2/models/xgb/versions/1").json("metadata_model_response")
    newest = call("GET", "/v2/models/xgb").json("metadata_model_response")
    assert binary["versions"] == newest["versions"] == ["1", "2"]  # every available version
    described = {o["name"]: (o["datatype"], o["shape"]) for o in newest["outputs"]}
    assert newest["outputs"][0]["name"] == "predict"  # the default output first
    assert described["predict"] == ("FP32", [-1, 3])
    assert described["predicted_label"] == ("INT64", [-1])
    assert described["probabilities"] == ("FP32", [-1, 3])
    assert described["contributions"] == ("FP32", [-1, 3, 5])
    assert {o["name"]: o["shape"] for o in binary["outputs"]}["predict"] == [-1]


def test_error_reply_wraps_what_the_adapter_caught(api: V2API) -> None:
    request = DoorRequest("POST", "/v2/models/km/infer", Headers({}))
    reply = api.error_reply(PayloadTooLarge.over(4096), request)
    assert reply.status == 413
    assert reply.content_type == "application/json"
    assert b"4096-byte limit" in reply.body


def test_error_reply_hides_an_unexpected_exception(api: V2API) -> None:
    request = DoorRequest("POST", "/v2/models/km/infer", Headers({}))
    reply = api.error_reply(RuntimeError("secret detail"), request)
    assert reply.status == 500
    assert b"secret" not in reply.body


@pytest.mark.parametrize(
    "path", ["/v2", "/v2/health/live", "/v2/health/ready", "/v2/models/km", "/v2/models/km/ready"]
)
def test_metadata_and_health_are_not_counted_in_the_metrics(call: Call, path: str) -> None:
    assert call("GET", path).reply.verb is None
    assert call("DELETE", path).reply.verb is None  # nor are their errors
