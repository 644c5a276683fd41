"""The image under the SageMaker Python SDK's local mode, as a user tests a container with a
model trained elsewhere: ``Model(...).deploy(instance_type="local")`` from a ``file://``
model.tar.gz (the SDK extracts it next to itself and mounts that folder), predictions through
``sagemaker.predictor.Predictor``, compared with the same model served in this process.
test_sdk_train_deploy.py covers the train-then-deploy workflow, RecordIO and Batch Transform."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from smserve.config import Settings
from smserve.http.app import create_app
from smserve.media import CSV, JSON
from tests.local_mode import sdk_local

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    from sagemaker.deserializers import JSONDeserializer
    from sagemaker.predictor import Predictor
    from sagemaker.serializers import CSVSerializer

FEATURES = sdk_local.FEATURES
CENTROIDS = sdk_local.RNG.normal(size=(5, FEATURES.shape[1])).astype(FEATURES.dtype)


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("local-mode")
    with sdk_local.offline_sdk(root):
        yield root


@pytest.fixture(scope="module")
def archives(work: Path) -> dict[str, Path]:
    """A model.tar.gz per algorithm, each in its own folder (the SDK extracts beside it)."""
    return {
        "xgboost": sdk_local.pack(
            {"xgboost-model": sdk_local.xgboost_model(FEATURES)}, work / "xgboost"
        ),
        "kmeans": sdk_local.pack(
            {"model_algo-1": sdk_local.kmeans_model(CENTROIDS, work / "centroids")},
            work / "kmeans",
        ),
    }


@pytest.fixture(scope="module")
def in_process(archives: dict[str, Path]) -> dict[str, FlaskClient]:
    """The same models served in this process."""
    return {
        kind: create_app(Settings.from_env({"SM_MODEL_DIR": str(archive.parent)})).test_client()
        for kind, archive in archives.items()
    }


def test_telemetry_is_off(work: Path) -> None:
    assert sdk_local.telemetry_opted_out(sdk_local.local_session(work))


@pytest.mark.parametrize("kind", ["xgboost", "kmeans"])
def test_deploy_and_predict_csv_to_json(
    image: str,
    work: Path,
    archives: dict[str, Path],
    in_process: dict[str, FlaskClient],
    kind: str,
) -> None:
    session = sdk_local.local_session(work)
    rows = FEATURES[:25]
    with sdk_local.deployed(image, archives[kind], session) as endpoint:
        predictor = Predictor(
            endpoint,
            sagemaker_session=session,
            serializer=CSVSerializer(),
            deserializer=JSONDeserializer(),
        )
        answer = predictor.predict(rows)
    # The SDK extracted the archive next to itself: the container served that folder.
    assert (
        archives[kind].parent / ("xgboost-model" if kind == "xgboost" else "model_algo-1")
    ).is_file()
    expected = json.loads(
        sdk_local.reference(in_process[kind], sdk_local.csv_rows(rows), CSV, JSON)
    )
    assert answer == expected
    assert len(answer["predictions"]) == len(rows)
