"""Status and metadata documents, the GET routes, and signatures of the real algorithms."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smserve.algorithms.loading import load_algorithm
from smserve.config import Settings
from smserve.repository.status import State, VersionStatus
from smserve.tfserving.api import TFServingAPI
from smserve.tfserving.servable import build_servable
from smserve.tfserving.status import status_body
from tests.tfserving.fakes import BODY_LIMIT, FakeKMeans, FakeSource, FakeXGBoost, handle, served


@pytest.fixture
def api() -> TFServingAPI:
    source = FakeSource()
    source.add("km", 2, FakeKMeans(n=2))
    source.add("km", 1, FakeKMeans(n=2))
    source.labels["km"] = {"stable": 1}
    return TFServingAPI(source, BODY_LIMIT)


def test_status_lists_versions_newest_first_in_proto3_json() -> None:
    body = status_body(
        [VersionStatus(1, State.AVAILABLE), VersionStatus(3, State.END, "UNKNOWN", "boom")]
    )
    assert json.loads(body) == {
        "model_version_status": [
            {
                "version": "3",
                "state": "END",
                "status": {"error_code": "UNKNOWN", "error_message": "boom"},
            },
            {
                "version": "1",
                "state": "AVAILABLE",
                "status": {"error_code": "OK", "error_message": ""},
            },
        ]
    }
    assert body.startswith(b'{\n "model_version_status": [\n  {\n   "version": "3",')


GETS = [
    ("/v1/models", 400, {"error": "Missing model name in request."}),
    ("/v1/models/missing", 404, {"error": "Could not find any versions of model missing"}),
    (
        "/v1/models/missing/metadata",
        404,
        {"error": "Servable not found for request: Latest(missing)"},
    ),
    (
        "/v1/models/km/labels/nope/metadata",
        400,
        {"error": "Unrecognized servable version label: nope"},
    ),
    ("/v1/models/km/other", 400, {"error": "Malformed request: GET /v1/models/km/other"}),
]


@pytest.mark.parametrize(("path", "status", "body"), GETS, ids=[g[0] for g in GETS])
def test_get_errors(api: TFServingAPI, path: str, status: int, body: object) -> None:
    reply = handle(api, "GET", path, b"")
    assert (reply.status, json.loads(reply.body)) == (status, body)


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "HEAD"])
def test_other_methods_are_malformed(api: TFServingAPI, method: str) -> None:
    reply = handle(api, method, "/v1/models/km", b"")
    assert (reply.status, json.loads(reply.body)) == (
        400,
        {"error": f"Malformed request: {method} /v1/models/km"},
    )


def test_metadata_names_the_latest_version_and_every_signature(api: TFServingAPI) -> None:
    reply = handle(api, "GET", "/v1/models/km/metadata", b"")
    body = json.loads(reply.body)
    assert body["model_spec"] == {"name": "km", "signature_name": "", "version": "2"}
    signatures = body["metadata"]["signature_def"]["signature_def"]
    assert set(signatures) == {"serving_default", "classification"}
    default = signatures["serving_default"]
    assert default["method_name"] == "tensorflow/serving/predict"
    assert default["inputs"]["inputs"] == {
        "dtype": "DT_FLOAT",
        "tensor_shape": {
            "dim": [{"size": "-1", "name": ""}, {"size": "2", "name": ""}],
            "unknown_rank": False,
        },
        "name": "inputs:0",
    }
    assert set(default["outputs"]) == {"closest_cluster", "distance_to_cluster"}
    examples = signatures["classification"]["inputs"]["inputs"]
    assert examples["tensor_shape"] == {"dim": [], "unknown_rank": True}


def test_metadata_by_label_and_version(api: TFServingAPI) -> None:
    for path in ("/v1/models/km/labels/stable/metadata", "/v1/models/km/versions/1/metadata"):
        body = json.loads(handle(api, "GET", path, b"").body)
        assert body["model_spec"]["version"] == "1"


@pytest.mark.parametrize(
    ("objective", "signatures"),
    [
        ("reg:squarederror", {"serving_default", "regression"}),
        ("binary:logistic", {"serving_default", "classification", "regression"}),
        ("multi:softprob", {"serving_default", "classification"}),
        ("multi:softmax", {"serving_default"}),
    ],
)
def test_signatures_by_objective(objective: str, signatures: set[str]) -> None:
    assert set(build_servable(served(FakeXGBoost(objective))).signatures) == signatures


def test_real_xgboost_signatures(xgb_multiclass_dir: Path) -> None:
    servable = build_servable(served(load_algorithm(Settings(), xgb_multiclass_dir)))
    classes = servable.signatures["classification"].outputs["classes"]
    assert classes.shape == (-1, 3)
    assert servable.signatures["serving_default"].outputs["score"].shape == (-1, 3)
    assert servable.feature_names == ("f0", "f1", "f2", "f3")


def test_real_kmeans_signatures(kmeans_model_dir: Path) -> None:
    servable = build_servable(served(load_algorithm(Settings(), kmeans_model_dir)))
    assert set(servable.signatures["serving_default"].outputs) == {
        "closest_cluster",
        "distance_to_cluster",
    }
    assert servable.signatures["serving_default"].inputs["inputs"].shape == (-1, 4)
