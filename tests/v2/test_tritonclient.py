"""The real tritonclient (``tritonclient.http.InferenceServerClient``) against a running
``smserve serve`` holding two models from a TF Serving layout (``xgb`` versions 1 and 2, the
default model of /invocations, and ``km``): health, metadata, JSON and binary infers, and the
same numbers as /invocations over HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import pytest
import tritonclient.http as triton
from tritonclient.utils import InferenceServerException

from smserve.algorithms.ndarray import write_ndarray_file
from tests.process.servers import Server, running_server
from tests.v2.conftest import validate

pytestmark = pytest.mark.process

ROWS = np.array([[0, 0, 0, 0], [9, 9.5, 10, 11], [-1.5, 0.25, 2, -0.75]], dtype=np.float32)


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, _xgb_models: dict[str, bytes]
) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("v2-models")
    for version, kind in ((1, "binary"), (2, "multiclass")):
        (root / "xgb" / str(version)).mkdir(parents=True)
        (root / "xgb" / str(version) / "xgboost-model").write_bytes(_xgb_models[kind])
    (root / "km" / "1").mkdir(parents=True)
    centroids = np.array([[0, 0, 0, 0], [10, 10, 10, 10]], dtype=np.float32)
    write_ndarray_file(root / "km" / "1" / "model_algo-1", centroids)
    config = root / "models.config"
    config.write_text(
        "model_config_list {\n"
        f"  config {{ name: 'xgb' base_path: '{root / 'xgb'}'\n"
        "           model_version_policy { all {} } }\n"
        f"  config {{ name: 'km' base_path: '{root / 'km'}' }}\n"
        "}\n"
    )
    env = {"SMSERVE_MODEL_CONFIG_FILE": str(config), "SMSERVE_FILE_SYSTEM_POLL_WAIT_SECONDS": "0"}
    with running_server(tmp_path_factory.mktemp("v2-logs"), env) as running:
        yield running


@pytest.fixture
def client(server: Server) -> Iterator[triton.InferenceServerClient]:
    client = triton.InferenceServerClient(f"127.0.0.1:{server.port}", connection_timeout=20.0)
    yield client
    client.close()


def rows_input(rows: np.ndarray, binary: bool) -> triton.InferInput:
    tensor = triton.InferInput("input__0", list(rows.shape), "FP32")
    tensor.set_data_from_numpy(rows, binary_data=binary)
    return tensor


def test_health_and_server_metadata(client: triton.InferenceServerClient) -> None:
    assert client.is_server_live()
    assert client.is_server_ready()
    assert client.is_model_ready("xgb")
    assert client.is_model_ready("xgb", "1")
    assert client.is_model_ready("km")
    assert not client.is_model_ready("xgb", "3")
    assert not client.is_model_ready("nope")
    metadata = client.get_server_metadata()
    validate(metadata, "metadata_server_response")
    assert "binary_tensor_data" in metadata["extensions"]


def test_model_metadata_of_every_model_and_version(client: triton.InferenceServerClient) -> None:
    for name, version in (("xgb", ""), ("xgb", "1"), ("km", "")):
        metadata = client.get_model_metadata(name, version)
        validate(metadata, "metadata_model_response")
        assert metadata["inputs"] == [{"name": "input__0", "datatype": "FP32", "shape": [-1, 4]}]
    assert client.get_model_metadata("xgb")["versions"] == ["1", "2"]  # both are available
    with pytest.raises(InferenceServerException, match="unknown model: 'nope' is not found"):
        client.get_model_metadata("nope")


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
def test_xgboost_infer_gives_the_numbers_of_invocations(
    client: triton.InferenceServerClient, server: Server, binary: bool
) -> None:
    outputs = [
        triton.InferRequestedOutput("predict", binary_data=binary),
        triton.InferRequestedOutput("predicted_label", binary_data=binary),
    ]
    result = client.infer("xgb", [rows_input(ROWS, binary)], outputs=outputs, request_id="42")
    validate(result.get_response(), "inference_response")
    assert result.get_response()["id"] == "42"
    assert result.get_response()["model_version"] == "2"
    want = np.array([row["score"] for row in _invocations(server, ROWS)], dtype=np.float32)
    np.testing.assert_array_equal(result.as_numpy("predict"), want)
    assert result.as_numpy("predicted_label").tolist() == want.argmax(axis=1).tolist()


@pytest.mark.parametrize("binary", [False, True], ids=["json", "binary"])
def test_kmeans_infer_with_default_outputs(
    client: triton.InferenceServerClient, binary: bool
) -> None:
    requested = None if binary else [triton.InferRequestedOutput("closest_cluster", False)]
    result = client.infer("km", [rows_input(ROWS, binary)], outputs=requested)
    validate(result.get_response(), "inference_response")
    assert result.as_numpy("closest_cluster").tolist() == [0.0, 1.0, 0.0]
    if binary:  # no outputs named: tritonclient asks for every default output, binary
        distances = np.linalg.norm(ROWS - np.array([0, 10, 0])[:, None], axis=1)
        np.testing.assert_allclose(result.as_numpy("distance_to_cluster"), distances, rtol=1e-6)


@pytest.mark.parametrize("coding", ["gzip", "deflate"])
def test_compressed_requests(client: triton.InferenceServerClient, coding: str) -> None:
    plain = client.infer("xgb", [rows_input(ROWS, True)])
    packed = client.infer("xgb", [rows_input(ROWS, True)], request_compression_algorithm=coding)
    np.testing.assert_array_equal(packed.as_numpy("predict"), plain.as_numpy("predict"))


def test_an_older_version_and_an_error(client: triton.InferenceServerClient) -> None:
    result = client.infer("xgb", [rows_input(ROWS, True)], model_version="1")
    assert result.get_response()["model_version"] == "1"
    assert result.as_numpy("predict").shape == (3,)
    narrow = rows_input(ROWS[:, :2].copy(), True)
    with pytest.raises(InferenceServerException, match=r"the model takes \[-1, 4\]") as caught:
        client.infer("xgb", [narrow])
    assert caught.value.status() == "400"


def _invocations(server: Server, rows: np.ndarray) -> list[dict[str, list[float]]]:
    csv = "\n".join(",".join(repr(float(v)) for v in row) for row in rows)
    connection = server.connection()
    try:
        headers = {"Content-Type": "text/csv", "Accept": "application/json"}
        connection.request("POST", "/invocations", csv, headers)
        response = connection.getresponse()
        assert response.status == 200
        predictions: list[dict[str, list[float]]] = json.loads(response.read())["predictions"]
        return predictions
    finally:
        connection.close()


def _request(
    server: Server, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    connection = server.connection()
    try:
        connection.request(method, path, body, headers or {})
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


@pytest.mark.parametrize(
    ("method", "path", "status", "error"),
    [
        ("GET", "/v2/nothing", 404, "Not Found"),
        ("POST", "/v2/models/xgb", 405, "Method Not Allowed"),
        (
            "GET",
            "/v2/models/xgb/versions/7",
            404,
            "Request for unknown model: 'xgb' version 7 is not found",
        ),
        ("POST", "/v2/models/km/infer", 400, "the request body is empty"),
    ],
)
def test_errors_over_http_are_the_json_envelope(
    server: Server, method: str, path: str, status: int, error: str
) -> None:
    got, headers, body = _request(server, method, path)
    assert got == status
    assert headers["Content-Type"] == "application/json"
    document = json.loads(body)
    validate(document, "error_response")
    assert error in document["error"]


def test_an_oversized_body_is_413_in_the_envelope(server: Server) -> None:
    """nginx (or, without it, the app) answers this one in V2's own envelope."""
    status, headers, body = _request(server, "POST", "/v2/models/km/infer", b" " * (7 << 20))
    assert status == 413
    assert headers["Content-Type"] == "application/json"
    document = json.loads(body)
    assert set(document) == {"error"}
    assert "6291456-byte limit" in document["error"]


def test_infer_names_the_version_that_answered(server: Server) -> None:
    request = {"inputs": [{"name": "x", "shape": [1, 4], "datatype": "FP32", "data": [0, 0, 0, 0]}]}
    status, headers, body = _request(
        server, "POST", "/v2/models/xgb/versions/1/infer", json.dumps(request).encode()
    )
    assert status == 200
    assert headers["X-Model-Version"] == "1"
    assert json.loads(body)["model_version"] == "1"
