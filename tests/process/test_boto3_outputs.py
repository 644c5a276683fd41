"""Per-request outputs from stock boto3 against a real ``smserve serve`` (gunicorn):
``invoke_endpoint(CustomAttributes="outputs=...")`` selects them, the answer's
CustomAttributes names them, and an unknown key is a ClientError listing the valid ones."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import xgboost as xgb
from botocore.exceptions import ClientError

from tests.process import sdk_clients as sdk
from tests.process.servers import running_server

pytestmark = [pytest.mark.sdk, pytest.mark.process]


@pytest.fixture(scope="module")
def served(
    _xgb_models: dict[str, bytes], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[int, xgb.Booster]]:
    model_dir = tmp_path_factory.mktemp("xgb-multi-explain")
    (model_dir / "xgboost-model").write_bytes(_xgb_models["multiclass"])
    booster = xgb.Booster(params={"nthread": 1}, model_file=bytearray(_xgb_models["multiclass"]))
    logs = tmp_path_factory.mktemp("boto3-outputs-logs")
    with running_server(logs, {"SM_MODEL_DIR": str(model_dir)}) as server:
        yield server.port, booster


def _invoke(
    port: int, features: np.ndarray, accept: str = "application/json", **extra: Any
) -> dict[str, Any]:
    client = sdk.stock_runtime_client()
    body = "\n".join(",".join(repr(float(v)) for v in row) for row in features)
    answer: dict[str, Any] = client.invoke_endpoint(
        EndpointName="my-xgb", Body=body, ContentType="text/csv", Accept=accept, **extra
    )
    return answer


def test_custom_attributes_select_the_outputs_and_come_back(
    served: tuple[int, xgb.Booster], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    port, booster = served
    sdk.use_stock_aws_env(monkeypatch, tmp_path, port)
    features = sdk.xgb_features(n=4, seed=21)
    answer = _invoke(port, features, CustomAttributes="trace=9;outputs=contributions,score")
    assert answer["CustomAttributes"] == "outputs=contributions,score"
    rows = json.loads(answer["Body"].read())["predictions"]
    contributions = np.array([row["contributions"] for row in rows])
    margin = booster.inplace_predict(features, predict_type="margin")
    np.testing.assert_allclose(contributions.sum(axis=2), margin, atol=1e-5)


def test_without_the_attribute_the_default_applies(
    served: tuple[int, xgb.Booster], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    sdk.use_stock_aws_env(monkeypatch, tmp_path, served[0])
    answer = _invoke(served[0], sdk.xgb_features(n=2, seed=22))
    assert answer["CustomAttributes"] == "outputs=score"
    assert list(json.loads(answer["Body"].read())["predictions"][0]) == ["score"]


def test_unknown_outputs_are_a_client_error_naming_the_valid_keys(
    served: tuple[int, xgb.Booster], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    sdk.use_stock_aws_env(monkeypatch, tmp_path, served[0])
    with pytest.raises(ClientError) as raised:
        _invoke(served[0], sdk.xgb_features(n=2, seed=23), CustomAttributes="outputs=shap")
    error = raised.value.response
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert "unknown outputs: shap" in error["Error"]["Message"]
    assert "contributions, approximate_contributions" in error["Error"]["Message"]


def test_a_large_explanation_has_the_same_numbers_in_every_format(
    served: tuple[int, xgb.Booster], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """5,000 rows: CSV and JSON Lines are predicted and written in overlapping chunks by the
    worker (``overlap``), JSON in one piece; the numbers agree to the bit."""
    sdk.use_stock_aws_env(monkeypatch, tmp_path, served[0])
    features = sdk.xgb_features(n=5000, seed=24)
    attributes = "outputs=approximate_contributions"

    def values(accept: str) -> bytes:
        data: bytes = _invoke(served[0], features, accept, CustomAttributes=attributes)[
            "Body"
        ].read()
        return data

    rows = json.loads(values("application/json"))["predictions"]
    expected = np.array([row["approximate_contributions"] for row in rows], dtype=np.float64)
    csv = [line.split(b",") for line in values("text/csv").splitlines()]
    lines = [json.loads(line) for line in values("application/jsonlines").splitlines()]
    jsonl = np.array([line["approximate_contributions"] for line in lines], dtype=np.float64)
    expected = expected.reshape(len(features), -1)
    assert np.array_equal(np.array(csv, dtype=np.float64), expected)
    assert np.array_equal(jsonl.reshape(len(features), -1), expected)
